"""`planner memory`'s work, without typer: the ledger of a target and an optional draft, and its fast argv.

Why apart from memory.py (the typer face): a plain `planner memory MODEL [--json ...]` is parsed by
planner/commands/_fastcli.py and runs `run` with no typer import at all (issue #33: start-up); memory.py
declares the same options for typer (help, errors, anything unusual) and calls the same `run`. `DEFAULTS`
are the typer face's defaults too, and tests/test_fastcli.py holds `FAST` equal to that face's options.

Start-up: the ledger of a target alone is the common call, so the drafting methods (and the pairing and
speed modules they bring) are imported only when --draft or --method asks for one.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from .. import engines
from ..core import paths
from ..core.constants import DEFAULT_CONTEXT, MAX_BATCH
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
from ._fastcli import FastCommand, Opt
from ._output import emit, engine_for, say, warn


@dataclass(frozen=True)
class MemoryArgs:
    """`planner memory`'s options, whichever parser read them (the typer face in memory.py or FAST below).

    One value instead of 15 keyword parameters (tests/test_parameter_count.py); its defaults are the typer
    face's (`DEFAULTS`), and tests/test_fastcli.py holds the two option tables equal.
    """

    model: str
    draft: str | None = None
    method_kind: str | None = None
    context: str = str(DEFAULT_CONTEXT)
    batch: int = 1
    draft_context: str | None = None
    engine: str = "auto"
    kv_dtype: str | None = None
    weights_dtype: str | None = None
    group_size: int = 128
    revision: str | None = None
    inventory: str = "analytic"
    overhead: str | None = None
    as_json: bool = False
    wide: bool = False


# Every optional parameter's default, as the typer face declares it (memory.py reads them from here).
DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(MemoryArgs) if f.name != "model"}


def run_fast(**given: Any) -> None:
    """The fast path's entry (commands/_fastcli.py gives keyword arguments): the same `run`."""
    run(MemoryArgs(**given))


def run(a: MemoryArgs) -> None:
    """Print the memory ledger of `a.model` (and of what a draft or method keeps resident) for these settings."""
    model, draft, method_kind, context, batch = a.model, a.draft, a.method_kind, a.context, a.batch
    engine, kv_dtype, weights_dtype, revision, overhead = a.engine, a.kv_dtype, a.weights_dtype, a.revision, a.overhead
    draft_context, as_json = a.draft_context, a.as_json
    width.set_wide(a.wide)
    folder = gguf_folder(model) if paths.is_dir(model) else None  # a folder of GGUF variants: list them
    if folder is None:
        try:
            # a plain ledger never pairs: a GGUF's token strings are not decoded (issue #33)
            target = load_spec(model, revision=revision, inventory=a.inventory, tokens=bool(draft or method_kind))
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
                            resolved_engine=engines.get(engine_for(engine, target, dspec, kind=kind)),
                            kv_dtype=kv_dtype, weights_dtype=dtypes[0] if len(dtypes) == 1 else None,
                            group_size=a.group_size,
                            overhead_bytes=parse_bytes(overhead, what="--overhead") if overhead else None,
                            draft_context=parse_tokens(draft_context, what="--draft-context") if draft_context
                            else None)
    warnings = [f"{s.id}: {w}" for s in (target, dspec) if s for w in s.warnings]
    if len(dtypes) > 1:  # a sweep: one ledger per format, one table (#31 item 12)
        ledgers = [_one(target, replace(settings, weights_dtype=d), dspec, kind) for d in dtypes]
        if as_json:
            emit(sweep.sweep_json(ledgers, dtypes, warnings))
            return
        for w in warnings:
            warn(w)
        say(sweep.sweep_table(ledgers, dtypes))
        return
    ledger = _one(target, settings, dspec, kind)
    if as_json:
        emit(report.ledger_json(ledger, warnings))
        return
    for w in warnings:
        warn(w)
    say(report.ledger_table(ledger))


def _one(target: ModelSpec, settings: mem.Settings, dspec: ModelSpec | None, kind: str | None) -> mem.Ledger:
    """The ledger of one setting; on Metal or a CPU host the overhead is the host's (no CUDA context)."""
    ledger = mem.ledger(target, settings, dspec)
    if kind in ("apple", "cpu") and settings.overhead_bytes is None:
        overhead_b, src = overhead_for(kind, settings)
        ledger = replace(ledger, overhead_bytes=overhead_b, overhead_source=f"{src}: this host has no GPU")
    return ledger


def _variants(folder: Path, context: int, batch: int, engine: str, kv_dtype: str | None, as_json: bool) -> None:
    """One row per GGUF variant of `folder` (sources/gguf_variants.py): size on disk and the ledger."""
    found = variants(folder)
    specs = [load_spec(str(v.path)) for v in found]
    kind = host_kind()
    ledgers = [_one(sp, mem.Settings(context=context, batch=batch, kv_dtype=kv_dtype,
                                     resolved_engine=engines.get(engine_for(engine, sp, None, kind=kind))), None, kind)
               for sp in specs]
    names, sizes = [v.name for v in found], [v.file_bytes for v in found]
    if as_json:
        emit(sweep.variants_json(str(folder), names, [str(v.path) for v in found], [v.parts for v in found], sizes,
                                 ledgers))
        return
    say(sweep.variants_table(str(folder), names, sizes, ledgers))


def _spellings(dest: str, kind: type, *names: str, lo: int | None = None, hi: int | None = None) -> dict[str, Opt]:
    return dict.fromkeys(names, Opt(dest, kind, lo, hi))


# The options of memory.py's typer face, by every spelling (bounds as there: planner/commands/_options.py).
FAST = FastCommand("memory", "model", {
    **_spellings("draft", str, "--draft", "-d"),
    **_spellings("method_kind", str, "--method"),
    **_spellings("context", str, "--context", "-c"),
    **_spellings("batch", int, "--batch", "-b", "--parallel", "-np", lo=1, hi=MAX_BATCH),
    **_spellings("draft_context", str, "--draft-context", "-cd"),
    **_spellings("engine", str, "--engine", "-e"),
    **_spellings("kv_dtype", str, "--kv-dtype"),
    **_spellings("weights_dtype", str, "--weights-dtype"),
    **_spellings("group_size", int, "--group-size", lo=1, hi=1 << 20),
    **_spellings("revision", str, "--revision"),
    **_spellings("inventory", str, "--inventory"),
    **_spellings("overhead", str, "--overhead"),
    **_spellings("as_json", bool, "--json"),
    **_spellings("wide", bool, "--wide"),
}, run_fast)
