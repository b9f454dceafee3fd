"""`planner memory`: the memory ledger of a target and an optional draft.

Start-up (issue #33): the ledger of a target alone is the common call, so the drafting methods (and the
pairing and speed modules they bring) are imported only when --draft or --method asks for one.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.constants import DEFAULT_CONTEXT
from ..core.units import parse_bytes, parse_tokens
from ..fits import memory as mem
from ..fits.budget import overhead_for
from ..fits.machine_detect import host_kind
from ..render import text as report
from ..render import width
from ..sources import load_spec
from ._common import app, emit, engine_for, say, warn
from ._options import (
    ContextOpt,
    DraftContextOpt,
    DraftOpt,
    EngineAutoOpt,
    GroupSizeOpt,
    InventoryOpt,
    JsonOpt,
    KvDtypeOpt,
    MethodOpt,
    ModelArg,
    OverheadOpt,
    ParallelBatchOpt,
    RevisionOpt,
    WeightsDtypeOpt,
    WideOpt,
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
    inventory: InventoryOpt = "analytic",
    overhead: OverheadOpt = None,
    as_json: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Memory ledger of a target (and optional draft): weights, KV cache, activations, overhead.

    \b
    Examples:
      planner memory llama-3.1-8b --context 8k
      planner memory Qwen/Qwen2.5-7B-Instruct --draft Qwen/Qwen2.5-0.5B-Instruct --engine vllm --json
      planner memory ./my-model --kv-dtype q8_0 --engine llama.cpp
      planner memory ./new-arch --inventory auto --json
      planner memory target.gguf --draft draft.gguf --parallel 4 --draft-context 4k
    """
    width.set_wide(wide)
    target = load_spec(model, revision=revision, inventory=inventory)
    method = None
    if draft or method_kind:  # start-up: a plain ledger never imports drafting, pairing or speed
        from ._methods import load_method

        method = load_method(draft, kind=method_kind, target=target)
    dspec = method.resident_model() if method else None  # what the method keeps resident
    kind = host_kind()  # a glance at this host: the engine default, and no CUDA context on Metal/CPU
    settings = mem.Settings(context=parse_tokens(context), batch=batch,
                            engine=engine_for(engine, target, dspec, kind=kind),
                            kv_dtype=kv_dtype, weights_dtype=weights_dtype, group_size=group_size,
                            overhead_bytes=parse_bytes(overhead, what="--overhead") if overhead else None,
                            draft_context=parse_tokens(draft_context, what="--draft-context") if draft_context
                            else None)
    warnings = [f"{s.id}: {w}" for s in (target, dspec) if s for w in s.warnings]
    ledger = mem.ledger(target, settings, dspec)
    if kind in ("apple", "cpu") and settings.overhead_bytes is None:
        overhead, src = overhead_for(kind, settings)
        ledger = replace(ledger, overhead_bytes=overhead, overhead_source=f"{src}: this host has no GPU")
    if as_json:
        emit(report.ledger_json(ledger, warnings))
        return
    for w in warnings:
        warn(w)
    say(report.ledger_table(ledger))
