"""`planner memory`: the memory ledger of a target and an optional draft."""

from __future__ import annotations

from typing import Annotated

import typer

from ..cli import (
    ContextOpt,
    DraftOpt,
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
from ..render import text as report

# llama.cpp spellings beside the planner's: --parallel N is --batch N (N sequences, one slot each), -cd is
# the draft's own context (llama-server --ctx-size-draft; default: the target's context per sequence).
ParallelBatchOpt = Annotated[int, typer.Option("--batch", "-b", "--parallel", "-np",
                                               help="Concurrent sequences (llama.cpp --parallel slots).", min=1)]
DraftContextOpt = Annotated[str | None, typer.Option(
    "--draft-context", "-cd", help="The draft's own context per sequence (llama.cpp -cd; default: --context).")]
EngineAutoOpt = Annotated[str, typer.Option(
    "--engine", "-e", help="auto (llama.cpp for a .gguf, else transformers) | transformers | vllm | sglang | "
                           "llama.cpp | mlx (cache layout).")]


def engine_for(name: str, *specs) -> str:
    """--engine auto: llama.cpp when a model is a GGUF file (what runs GGUFs natively), else transformers."""
    if name.strip().lower() != "auto":
        return name
    return "llama.cpp" if any(s is not None and s.source == "gguf" for s in specs) else "transformers"


@app.command()
def memory(
    model: ModelArg,
    draft: DraftOpt = None,
    context: ContextOpt = "4096",
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
    from ..core.units import parse_bytes, parse_tokens
    from ..fits import memory as mem
    from ..sources import load_spec

    target = load_spec(model, revision=revision)
    dspec = load_spec(draft) if draft else None
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
