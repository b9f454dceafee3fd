"""`planner report`: the fit report per machine, as one self-contained HTML file or Markdown + SVG plots."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from ..core import paths
from ..core.constants import DEFAULT_CONTEXT, DEFAULT_MAX_K
from ..core.errors import UsageError
from ..core.fmt import fmt_bytes
from ..core.units import parse_bytes, parse_tokens
from ..core.version import __version__
from ..plan import scenario as C
from ..plan.policy import Deployment, load_policy
from ..render import html as R
from ._common import app, engine_for, say, split_values
from ._machine_report import MachineReport, machine_report, read_list
from ._options import (
    AcceptanceOpt,
    BatchOpt,
    ConfigOpt,
    ContextOpt,
    DeploymentOpt,
    DraftOpt,
    GpuMemoryOpt,
    GpusOpt,
    JobsOpt,
    JsonOpt,
    KvDtypeOpt,
    MaxKOpt,
    MethodOpt,
    PpOpt,
    ProfileOpt,
    RecEngineOpt,
    TemperatureOpt,
    TpOpt,
    UtilizationOpt,
    WeightsDtypeOpt,
)

TargetArg = Annotated[str | None, typer.Argument(
    help="Model: local dir, config.json, .gguf, HF id or catalog name (or use --config).")]
OutOpt = Annotated[str | None, typer.Option("--out", "-o", help="FILE.html (one self-contained file) or FILE.md (plots "
                                                                "written beside it as SVG).")]
KOpt = Annotated[int | None, typer.Option("--k", help="Judge the speed-up at this K (default: the best K).",
                                          min=1, max=64)]
MachinesOpt = Annotated[list[str] | None, typer.Option(
    "--machine", "-m", help="Machine to report on (repeatable; catalog name, JSON file or auto; default auto). "
                            "With --config: replaces each deployment's machines.")]
NoPlotsOpt = Annotated[bool, typer.Option("--no-plots", help="Tables only (no plots).")]
TargetsOpt = Annotated[list[str] | None, typer.Option(
    "--targets", help="No TARGET: the models to place (comma-separated ids, aliases, folders, or a FILE with one a "
                      "line; repeatable). Default: the bundled catalog.")]
CatalogOpt = Annotated[bool, typer.Option("--catalog", help="No TARGET: every bundled catalog model (the default; "
                                                            "with --targets, added to them).")]
FleetOpt = Annotated[str | None, typer.Option("--fleet", help="No TARGET: a FILE of machines, one a line (catalog "
                                                              "names, JSON files, auto), added to --machine.")]
MinSpeedupOpt = Annotated[float | None, typer.Option("--min-speedup", help="No TARGET: only rows whose best plan "
                                                                           "predicts at least this speed-up.", min=0)]
BestByOpt = Annotated[str, typer.Option("--best-by", help="No TARGET, several machines: the best machine per "
                                                         "target is the smallest that meets the requirement "
                                                         "(smallest), the fastest (speed), or the fastest per "
                                                         "device (speed-per-gpu).")]
FamilyOpt = Annotated[str | None, typer.Option("--family", help="No TARGET: only these lineages (comma-separated; "
                                                                "a prefix matches: qwen keeps qwen2.5 and qwen3).")]
MaxParamsOpt = Annotated[str | None, typer.Option("--max-params", help="No TARGET: only models with at most this "
                                                                       "many parameters (8B, 500M).")]
CLI_ORIGIN = "command line"


def _cli_scenarios(base: Deployment, engine: str) -> list[Any]:
    """The deployment the flags describe, judged like a policy entry on each of its machines (`--engine auto`
    picked per machine kind)."""
    cache: dict[str, Any] = {}
    out = []
    for m in C.machines_for(base, origin=CLI_ORIGIN):
        d = replace(base, engine=engine_for(engine, kind=m.kind))
        out += C.scenarios(d, [m], base=".", cache=cache, origin=CLI_ORIGIN)
    return out


def _summary(s: Any) -> str:
    a = s.assessment
    parts = [f"{s.title}:"]
    parts.append(a.layout_error or (f"{'fits' if a.fits else 'DOES NOT FIT'} (headroom {fmt_bytes(a.headroom_bytes)})"))
    if a.verdict is not None:
        parts.append("compatible" if a.verdict.compatible else ("needs fallback" if a.fallback else "INCOMPATIBLE"))
    if a.speed is not None:
        parts.append(f"{a.speed.speedup:.2f}x at K={a.speed.k} ({s.draft_origin} draft)")
    return " ".join(parts)


@app.command()
def report(
    target: TargetArg = None,
    draft: DraftOpt = None,
    method_kind: MethodOpt = None,
    machine: MachinesOpt = None,
    gpu_memory: GpuMemoryOpt = None,
    gpus: GpusOpt = None,
    tp: TpOpt = None,
    pp: PpOpt = None,
    utilization: UtilizationOpt = None,
    context: ContextOpt = str(DEFAULT_CONTEXT),
    batch: BatchOpt = 1,
    engine: RecEngineOpt = "auto",
    kv_dtype: KvDtypeOpt = None,
    weights_dtype: WeightsDtypeOpt = None,
    profile: ProfileOpt = None,
    acceptance: AcceptanceOpt = None,
    k: KOpt = None,
    max_k: MaxKOpt = DEFAULT_MAX_K,
    temperature: TemperatureOpt = 0.0,
    config: ConfigOpt = None,
    deployment: DeploymentOpt = None,
    out: OutOpt = None,
    no_plots: NoPlotsOpt = False,
    targets: TargetsOpt = None,
    catalog: CatalogOpt = False,
    fleet: FleetOpt = None,
    min_speedup: MinSpeedupOpt = None,
    family: FamilyOpt = None,
    max_params: MaxParamsOpt = None,
    jobs: JobsOpt = 1,
    best_by: BestByOpt = "smallest",
    as_json: JsonOpt = False,
) -> None:
    """Write the fit report: per machine the memory ledger, pair verdicts, verify curve, speed-up vs K,
    recommendation and launch commands. HTML is one self-contained file; Markdown links SVGs beside it.

    With no TARGET, machine first: per machine one row per model (the catalog, or --targets) with fit,
    largest context, best plan, speed-up, tokens/s, verdict and launch command; several machines add a
    targets x machines matrix and each target's best machine (--best-by). Without --out the same rows
    print as a table per machine; --json prints them whole.

    Exit code: 0 the report was written, 2 bad input. (Gate CI with 'planner check'.)

    \b
    Examples:
      planner report --machine rtx-4090
      planner report --machine rtx-4090 --out here.html
      planner report --machine rtx-4090 --machine h100-sxm --best-by speed-per-gpu
      planner report --machine auto --profile probe.json --family qwen --max-params 14B --out mine.md
      planner report --machine h100-sxm --machine rtx-4090 --machine m3-max-36gb --min-speedup 1.2 --json
      planner report --fleet machines.txt --jobs 4 --json > fleet.json
      planner report qwen2.5-14b-instruct --draft qwen2.5-1.5b-instruct --machine h100-sxm --machine rtx-4090 --out fit.html
      planner report llama-3.1-8b-instruct --gpu-memory 24GiB --engine llama.cpp --out fit.md
      planner report llama-3.1-8b --draft llama-3.2-1b --machine auto --profile probe.json --out here.html
      planner report --config planner.toml --out report.html
    """
    if target is None and config is None:
        opts = MachineReport(machines=list(dict.fromkeys([*split_values(machine),
                                                           *(read_list(fleet, what="--fleet") if fleet else [])])),
                             targets=split_values(targets), catalog=catalog, context=context, batch=batch,
                             engine=engine, kv_dtype=kv_dtype, utilization=utilization, temperature=temperature,
                             max_k=max_k, acceptance=acceptance, profile=profile, min_speedup=min_speedup,
                             family=family, max_params=max_params, jobs=jobs, best_by=best_by)
        not_here = [flag for flag, v in (("--draft", draft), ("--k", k), ("--tp", tp), ("--pp", pp),
                                         ("--weights-dtype", weights_dtype), ("--deployment", deployment),
                                         ("--gpu-memory", gpu_memory), ("--gpus", gpus)) if v]
        if not_here:
            raise UsageError(f"Cannot use {not_here[0]} without a TARGET: the machine-first report picks each "
                             f"model's plan (give a TARGET for a one-model report).")
        machine_report(opts, out=out, plots=not no_plots, as_json=as_json)
        return
    if target is not None and config is not None:
        raise UsageError("Cannot make a report: give either a TARGET model or --config FILE (expected exactly one).")
    if out is None:
        raise UsageError("Missing option '--out': a report with a TARGET or --config is written to FILE.html or "
                         "FILE.md.")
    fleet_flags = [flag for flag, v in (("--targets", targets), ("--catalog", catalog), ("--fleet", fleet),
                                        ("--min-speedup", min_speedup), ("--family", family),
                                        ("--max-params", max_params), ("--json", as_json), ("--jobs", jobs != 1))
                   if v]
    if fleet_flags:
        raise UsageError(f"Cannot use {fleet_flags[0]} with a TARGET or --config: it belongs to the machine-first "
                         f"report (leave the TARGET out).")
    if config is not None:
        policy = load_policy(config)
        wanted = split_values(deployment)
        known = {d.name for d in policy.deployments}
        missing = [n for n in wanted if n not in known]
        if missing:
            raise UsageError(f"Cannot report deployment '{missing[0]}' of '{policy.path}': no such deployment "
                             f"(expected one of {', '.join(sorted(known))}).")
        scs = []
        cache: dict[str, Any] = {}
        for d in policy.deployments:
            if not wanted or d.name in wanted:
                scs += C.scenarios(d, C.machines_for(d, split_values(machine), origin=policy.path),
                                   base=Path(policy.path).parent, cache=cache, origin=policy.path)
        source, inputs = f"policy {policy.path}", [policy.path]
    elif target is not None:  # always, here: no TARGET and no --config is the machine-first report above
        if k is not None and k > max_k:
            raise UsageError(f"Cannot use --k {k} with --max-k {max_k}: expected K <= --max-k.")
        gm = parse_bytes(gpu_memory, what="--gpu-memory") if gpu_memory else None
        # the flags as one Deployment (a policy entry of one), built here at the edge
        base = Deployment(name=target, target=target, draft=draft, context=parse_tokens(context), batch=batch,
                          kv_dtype=kv_dtype, weights_dtype=weights_dtype,
                          machines=tuple(split_values(machine)) or (() if gm is not None else ("auto",)),
                          gpu_memory_bytes=gm, gpus=gpus, tp=tp, pp=pp, utilization=utilization, k=k,
                          acceptance=acceptance, temperature=temperature, profile=profile, max_k=max_k,
                          method=method_kind)
        scs = _cli_scenarios(base, engine)
        source, inputs = "command line", []
    inputs += [p for sc in scs for p in (sc.profile_path, sc.target_ref, sc.draft_ref)
               if p and paths.exists(p)]
    sections = R.build(scs, plots=not no_plots, judge=config is not None)
    subtitle = (f"spec-planner {__version__}; {source}; {len(sections)} deployment x machine section(s). Figures "
                f"labelled roofline are bounds from catalog figures, not measurements.")
    written = R.write(sections, out, title="spec-planner fit report", subtitle=subtitle, inputs=inputs)
    for s in sections:
        say(_summary(s))
    for p in written:
        say(f"wrote {p}")
