"""`planner memory`: the memory ledger of a target and an optional draft."""

from __future__ import annotations

import typer

from ..core.constants import DEFAULT_CONTEXT
from ..core.units import parse_bytes, parse_tokens
from ..fits import memory as mem
from ..render import text as report
from ..sources import load_spec
from ._common import app, emit, engine_for, warn
from ._methods import load_method
from ._options import (
    ContextOpt,
    DraftContextOpt,
    DraftOpt,
    EngineAutoOpt,
    GroupSizeOpt,
    JsonOpt,
    KvDtypeOpt,
    MethodOpt,
    ModelArg,
    OverheadOpt,
    ParallelBatchOpt,
    RevisionOpt,
    WeightsDtypeOpt,
)


@app.command()
def memory(
    model: ModelArg,
    draft: DraftOpt = None,
    method_kind: MethodOpt = None,
    context: ContextOpt = str(DEFAULT_CONTEXT),
    batch: ParallelBatchOpt = 1,
    draft_context: DraftContextOpt = None,
    engine: EngineAutoOpt = "auto",
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
      planner memory target.gguf --draft draft.gguf --parallel 4 --draft-context 4k
    """
    target = load_spec(model, revision=revision)
    method = load_method(draft, kind=method_kind, target=target)
    dspec = method.resident_model() if method else None  # what the method keeps resident
    settings = mem.Settings(context=parse_tokens(context), batch=batch, engine=engine_for(engine, target, dspec),
                            kv_dtype=kv_dtype, weights_dtype=weights_dtype, group_size=group_size,
                            overhead_bytes=parse_bytes(overhead, what="--overhead") if overhead else None,
                            draft_context=parse_tokens(draft_context, what="--draft-context") if draft_context
                            else None)
    warnings = [f"{s.id}: {w}" for s in (target, dspec) if s for w in s.warnings]
    ledger = mem.ledger(target, settings, dspec)
    if as_json:
        emit(report.ledger_json(ledger, warnings))
        return
    for w in warnings:
        warn(w)
    typer.echo(report.ledger_table(ledger))
