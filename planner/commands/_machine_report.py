"""`planner report` with no TARGET: the machine-first report (what runs on this box, with which
speculation, how fast), written as HTML/Markdown and printed as `--json`.

Why beside report.py rather than in it: the one-target report and this one share the command
and its output files but no flags' meaning; this module turns the flags into plan/fleet.py's
inputs (machines, targets, options), then hands the rows to render/fleet.py. No torch: the
machines come from the catalog, files or detection (which measures bandwidth without it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import engines
from ..core import pool
from ..core.errors import UsageError
from ..core.units import parse_params, parse_tokens
from ..core.version import __version__
from ..fits.machine_lookup import get_machine
from ..plan import fleet as F
from ..plan.acceptance_source import parse_acceptance
from ..render import fleet as R
from ..render import html
from ..render.fleet_text import report_text
from ..speed.profile_file import load_profile
from ._common import emit, say, warn

read_list = F.read_list


@dataclass(frozen=True)
class MachineReport:
    """The flags of a machine-first report, as typed."""

    machines: list[str]
    targets: list[str]
    catalog: bool
    context: str
    batch: int
    engine: str
    kv_dtype: str | None
    utilization: float | None
    temperature: float
    max_k: int
    acceptance: str | None
    profile: str | None
    min_speedup: float | None
    family: str | None
    max_params: str | None
    jobs: int = 1
    best_by: str = "smallest"


def _targets(r: MachineReport) -> list[F.Target]:
    refs = []
    for value in r.targets:
        refs += F.read_list(value, what="--targets") if F.is_list_file(value) else [value]
    out = [F.target(ref) for ref in dict.fromkeys(refs)]
    if r.catalog or not refs:
        seen = {t.spec.id for t in out}
        out += [t for t in F.catalog_targets() if t.spec.id not in seen]
    families = [f.strip() for f in (r.family or "").split(",") if f.strip()]
    cap = parse_params(r.max_params) if r.max_params else None
    kept = [t for t in out if F.matches(t, families=families, max_params=cap)]
    if not kept:
        raise UsageError(f"Cannot make a report: no target is left after --family/--max-params (of {len(out)}). "
                         f"See 'planner catalog' for the families.")
    return kept


def _options(r: MachineReport, machines: list[Any]) -> F.Options:
    prof = load_profile(r.profile) if r.profile else None
    if prof is not None and not any(m.origin == "detected" for m in machines):
        raise UsageError(f"Cannot use --profile '{r.profile}' here: a profile measures this machine, so it needs "
                         f"--machine auto (other machines are priced from their catalog figures).")
    # the engine, resolved once here (auto: None, picked per machine kind by the registry when each row is made)
    engine = None if r.engine.strip().lower() == "auto" else engines.get(r.engine)
    return F.Options(context=parse_tokens(r.context), batch=r.batch, engine=engine, kv_dtype=r.kv_dtype,
                     utilization=r.utilization, temperature=r.temperature, max_k=r.max_k,
                     acceptance=parse_acceptance(r.acceptance) if r.acceptance else None, profile=prof)


def _machine_rows(piece: tuple[list[F.Target], Any, F.Options, float | None]) -> list[F.Row]:
    """One machine's rows (a --jobs worker runs this; module level, so the pool can pickle it)."""
    targets, m, opts, min_speedup = piece
    return F.machine_rows(targets, m, opts, min_speedup=min_speedup)


def _progress(done: int, total: int, piece: tuple[Any, ...]) -> None:
    say(f"[{done}/{total}] {piece[1].name}: {len(piece[0])} target(s) priced", err=True)


def _echo(msg: str, as_json: bool) -> None:
    say(msg, err=as_json)  # with --json, stdout holds only the JSON


def machine_report(r: MachineReport, *, out: str | None, plots: bool, as_json: bool) -> None:
    """Build every machine's rows, write the report file (when --out) and print JSON or a summary.

    Raises:
        UsageError: a flag value that cannot be used; PlannerError: a model or machine that cannot be read.
    """
    if r.best_by not in F.BEST_BY:
        raise UsageError(f"Cannot use --best-by {r.best_by}: expected one of {', '.join(F.BEST_BY)}.")
    machines = [get_machine(ref) for ref in (r.machines or ["auto"])]
    machines = list({repr(m): m for m in machines}.values())  # two spellings of one machine: planned once
    opts = _options(r, machines)
    targets = _targets(r)
    jobs = pool.check_jobs(r.jobs)
    pieces = [(targets, m, opts, r.min_speedup) for m in machines]
    rows_each = pool.map_in_order(_machine_rows, pieces, jobs, progress=_progress if jobs > 1 else None)
    per_machine = list(zip(machines, rows_each, strict=True))
    if opts.profile is not None and opts.profile.context != opts.context:
        warn(f"profile measured at context {opts.profile.context}, planning for {opts.context}")
    if opts.profile is not None and not any(t.spec.id == opts.profile.target.id for t in targets):
        warn(f"profile '{r.profile}' measured '{opts.profile.target.id}', which is not among the targets: every row "
             f"uses the roofline of the machine's figures")
    if out is not None:
        parts = [R.machine_part(i, m, rows, plots=plots, context=opts.context, batch=opts.batch)
                 for i, (m, rows) in enumerate(per_machine, start=1)]
        if len(per_machine) > 1:
            parts.insert(0, R.fleet_part(per_machine, r.best_by))
        subtitle = (f"spec-planner {__version__}; machine first: {len(targets)} target(s) x {len(machines)} "
                    f"machine(s) at context {opts.context:,} x batch {opts.batch}. Speeds are roofline bounds from "
                    f"each machine's figures (labelled measured or catalogued) unless a profile measured them.")
        written = html.write(parts, out, title="spec-planner fit report, machine first", subtitle=subtitle,
                             inputs=[p for p in (r.profile,) if p])
    else:
        written = []
    if as_json:
        emit(R.report_json(per_machine, context=opts.context, batch=opts.batch, by=r.best_by))
    elif out is None:  # no file: the report itself, in the terminal
        say(report_text(per_machine, [_summary(rows) for _, rows in per_machine], r.best_by))
    else:
        for m, rows in per_machine:
            say(f"{m.name}: {_summary(rows)}")
    for p in written:
        _echo(f"wrote {p}", as_json)


def _summary(rows: list[F.Row]) -> str:
    fit = [r for r in rows if r.fits]
    spec = [r for r in fit if r.speculates]
    priced = [(r.choice.speedup, r.target.spec.id) for r in spec if r.choice is not None]  # speculates: a choice
    top = max(priced, key=lambda p: p[0], default=None)
    best = f"; best speed-up {top[0]:.2f}x for {top[1]}" if top else ""
    return f"{len(fit)} of {len(rows)} target(s) fit; speculation pays for {len(spec)}{best}"
