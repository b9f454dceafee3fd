"""`planner memory`: the memory ledger of a target and an optional draft."""

from __future__ import annotations

import typer

from ..cli import (
    BatchOpt,
    ContextOpt,
    DraftOpt,
    EngineOpt,
    GroupSizeOpt,
    JsonOpt,
    KvDtypeOpt,
    ModelArg,
    OverheadOpt,
    RevisionOpt,
    WeightsDtypeOpt,
    app,
    emit,
    warn,
)


@app.command()
def memory(
    model: ModelArg,
    draft: DraftOpt = None,
    context: ContextOpt = "4096",
    batch: BatchOpt = 1,
    engine: EngineOpt = "transformers",
    kv_dtype: KvDtypeOpt = None,
    weights_dtype: WeightsDtypeOpt = None,
    group_size: GroupSizeOpt = 128,
    revision: RevisionOpt = None,
    overhead: OverheadOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Memory ledger of a target (and optional draft): weights, KV cache, activations, overhead.

    Examples:
      planner memory llama-3.1-8b --context 8k
      planner memory Qwen/Qwen2.5-7B-Instruct --draft Qwen/Qwen2.5-0.5B-Instruct --engine vllm --json
      planner memory ./my-model --kv-dtype q8_0 --engine llama.cpp
    """
    from .. import memory as mem
    from .. import report
    from ..sources import load_spec
    from ..units import parse_bytes, parse_tokens

    settings = mem.Settings(context=parse_tokens(context), batch=batch, engine=engine, kv_dtype=kv_dtype,
                            weights_dtype=weights_dtype, group_size=group_size,
                            overhead_bytes=parse_bytes(overhead, what="--overhead") if overhead else None)
    target = load_spec(model, revision=revision)
    dspec = load_spec(draft) if draft else None
    warnings = [f"{s.id}: {w}" for s in (target, dspec) if s for w in s.warnings]
    ledger = mem.ledger(target, settings, dspec)
    if as_json:
        emit(report.ledger_json(ledger, warnings))
        return
    for w in warnings:
        warn(w)
    typer.echo(report.ledger_table(ledger))
