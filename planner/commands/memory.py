"""`planner memory`: the memory ledger of a target and an optional draft.

Start-up (issue #33): the ledger of a target alone is the common call, so the drafting methods (and the
pairing and speed modules they bring) are imported only when --draft or --method asks for one.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..core import paths
from ..core.constants import DEFAULT_CONTEXT
from ..core.errors import PlannerError
from ..core.spec import ModelSpec
from ..core.units import parse_bytes, parse_tokens
from ..fits import memory as mem
from ..fits.budget import overhead_for
from ..fits.machine_detect import host_kind
from ..render import sweep, width
from ..render import text as report
from ..sources import load_spec
from ..sources.gguf_variants import gguf_folder, variants
from ._common import app, emit, engine_for, say, warn
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
    overhead: OverheadOpt = None,
    as_json: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Memory ledger of a target (and optional draft): weights, KV cache, activations, overhead.

    \b
    Examples:
      planner memory llama-3.1-8b --context 8k
      planner memory qwen2.5-32b-instruct --weights-dtype bf16,int8,int4
      planner memory ./Qwen2.5-7B-Instruct-GGUF   (a folder or cached repo of GGUF files: one row each)
      planner memory Qwen/Qwen2.5-7B-Instruct --draft Qwen/Qwen2.5-0.5B-Instruct --engine vllm --json
      planner memory ./my-model --kv-dtype q8_0 --engine llama.cpp
      planner memory target.gguf --draft draft.gguf --parallel 4 --draft-context 4k
    """
    width.set_wide(wide)
    folder = gguf_folder(model) if paths.is_dir(model) else None  # a folder of GGUF variants: list them
    if folder is None:
        try:
            target = load_spec(model, revision=revision)
        except PlannerError:
            folder = gguf_folder(model)  # a Hugging Face GGUF repo in the local cache (no config.json to plan)
            if folder is None:
                raise
    if folder is not None:
        _variants(folder, parse_tokens(context), batch, engine, kv_dtype, as_json)
        return
    method = None
    if draft or method_kind:  # start-up: a plain ledger never imports drafting, pairing or speed
        from ._methods import load_method

        method = load_method(draft, kind=method_kind, target=target)
    dspec = method.resident_model() if method else None  # what the method keeps resident
    kind = host_kind()  # a glance at this host: the engine default, and no CUDA context on Metal/CPU
    dtypes = [d.strip() for d in weights_dtype.split(",") if d.strip()] if weights_dtype else []
    settings = mem.Settings(context=parse_tokens(context), batch=batch,
                            engine=engine_for(engine, target, dspec, kind=kind),
                            kv_dtype=kv_dtype, weights_dtype=dtypes[0] if len(dtypes) == 1 else None,
                            group_size=group_size,
                            overhead_bytes=parse_bytes(overhead, what="--overhead") if overhead else None,
                            draft_context=parse_tokens(draft_context, what="--draft-context") if draft_context
                            else None)
    warnings = [f"{s.id}: {w}" for s in (target, dspec) if s for w in s.warnings]
    if len(dtypes) > 1:  # a sweep: one ledger per format, one table
        ledgers = [_ledger(target, replace(settings, weights_dtype=d), dspec, kind) for d in dtypes]
        if as_json:
            emit(sweep.sweep_json(ledgers, dtypes, warnings))
            return
        for w in warnings:
            warn(w)
        say(sweep.sweep_table(ledgers, dtypes))
        return
    ledger = _ledger(target, settings, dspec, kind)
    if as_json:
        emit(report.ledger_json(ledger, warnings))
        return
    for w in warnings:
        warn(w)
    say(report.ledger_table(ledger))


def _ledger(target: ModelSpec, settings: mem.Settings, dspec: ModelSpec | None, kind: str) -> mem.Ledger:
    """The ledger of one setting; on Metal or a CPU host the overhead is the host's (no CUDA context)."""
    ledger = mem.ledger(target, settings, dspec)
    if kind in ("apple", "cpu") and settings.overhead_bytes is None:
        overhead, src = overhead_for(kind, settings)
        ledger = replace(ledger, overhead_bytes=overhead, overhead_source=f"{src}: this host has no GPU")
    return ledger


def _variants(folder: Path, context: int, batch: int, engine: str, kv_dtype: str | None, as_json: bool) -> None:
    """One row per GGUF variant of `folder` (sources/gguf_variants.py): size on disk and the ledger."""
    found = variants(folder)
    specs = [load_spec(str(v.path)) for v in found]
    kind = host_kind()
    ledgers = [_ledger(sp, mem.Settings(context=context, batch=batch, kv_dtype=kv_dtype,
                                        engine=engine_for(engine, sp, None, kind=kind)), None, kind) for sp in specs]
    names, sizes = [v.name for v in found], [v.file_bytes for v in found]
    if as_json:
        emit(sweep.variants_json(str(folder), names, [str(v.path) for v in found], [v.parts for v in found], sizes,
                                 ledgers))
        return
    say(sweep.variants_table(str(folder), names, sizes, ledgers))
