"""`planner check`: the CI gate. Every deployment of planner.toml x machine x requirement, exit 0/1/2."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..core import pool
from ..core.atomic import append_text, atomic_write
from ..core.constants import github_actions
from ..core.fmt import tabulate
from ..engines import versions
from ..plan import check as C
from ..plan.assess import Assessment
from ..plan.check import FAIL, PASS, SKIP
from ..plan.policy import load_policy
from ..render import github as gh
from ..render import width
from ..render.check_values import format_value
from ..render.junit import Case
from ..render.junit import render as render_junit
from ._common import app, emit, say, split_values, warn
from ._options import ConfigOpt, DeploymentOpt, EngineVersionOpt, JobsOpt, JsonOpt, WideOpt

JunitOpt = Annotated[str | None, typer.Option("--junit", help="Also write JUnit XML here (one test case per "
                                                              "deployment x machine x requirement).")]
MachinesOpt = Annotated[list[str] | None, typer.Option(
    "--machine", "-m", help="Judge every deployment on this machine instead of its own (repeatable; catalog name, "
                            "JSON file or auto).")]

STATUS_TEXT = {"pass": "PASS", "fail": "FAIL", "skip": "skip"}
DETAIL_WIDTH = 72


def check_json(report: C.CheckReport) -> dict[str, Any]:
    """The `planner check --json` schema (docs/check.md)."""
    return {"policy": report.policy, "passed": report.passed,
            "counts": {s: report.count(s) for s in (PASS, FAIL, SKIP)},
            "results": [{"deployment": r.deployment, "machine": r.machine, "requirement": r.requirement,
                         "status": r.status, "value": r.value, "bound": r.bound, "message": r.message}
                        for r in report.results],
            "deployments": [assessment_json(a) for a in report.assessments]}


def assessment_json(a: Assessment) -> dict[str, Any]:
    """One deployment on one machine: the figures behind its results."""
    sc = a.scenario
    v, sp = a.verdict, a.speed
    return {
        "deployment": sc.deployment.name, "machine": sc.label, "target": sc.target.id,
        "method": sc.method.kind if sc.method else "none", "draft": sc.method.label if sc.method else None, "engine": sc.settings.engine, "context": sc.settings.context,
        "batch": sc.settings.batch, "tp": sc.layout.tp, "pp": sc.layout.pp, "fits": a.fits,
        "headroom_bytes": a.headroom_bytes, "total_bytes": a.total_bytes, "layout_error": a.layout_error,
        "devices": [{"index": d.budget.index, "name": d.budget.name, "budget_bytes": d.budget.budget_bytes,
                     "used_bytes": d.used_bytes, "headroom_bytes": d.headroom_bytes} for d in a.devices],
        "pairing": None if v is None else {"engine": v.engine, "compatible": v.compatible,
                                           "failed_rule": v.failed_rule, "fallback": a.fallback,
                                           "detail": v.detail, "confidence": v.confidence},
        "speed": None if sp is None else {
            "k": sp.k, "fixed_k": sp.fixed_k, "speedup": round(sp.speedup, 4),
            "speedup_interval": [round(sp.speedup_low, 4), round(sp.speedup_high, 4)],
            "best_k": sp.prediction.k_best, "speedup_by_k": [round(x, 4) for x in sp.prediction.speedup_by_k],
            "break_even_alpha": sp.prediction.break_even_alpha, "verdict": sp.prediction.verdict,
            "alpha": sp.acceptance.alpha, "alpha_interval": [sp.acceptance.low, sp.acceptance.high],
            "acceptance_source": sp.acceptance.source, "costs_source": sp.costs.source,
            "verify_s": list(sp.costs.verify_s), "draft_s": sp.costs.draft_s, "notes": list(sp.notes)},
        "profile": sc.profile_path,
    }


HEADERS = ["deployment", "machine", "requirement", "result", "value", "required", "detail"]


def check_table(report: C.CheckReport) -> str:
    """deployment x machine x requirement, with the value, the bound and why; then a summary line.

    Why two layouts: the detail column alone is 72 columns, so on a terminal narrower than the whole table
    the table drops it and the detail of each requirement that did not pass follows as wrapped prose (a
    pass's detail is in --wide and --json)."""
    rows = [[r.deployment, r.machine, r.requirement, STATUS_TEXT[r.status], format_value(r.requirement, r.value),
             format_value(r.requirement, r.bound), r.message] for r in report.results]
    verdict = "PASSED" if report.passed else "FAILED"
    summary = (f"{verdict}: {report.count(PASS)} passed, {report.count(FAIL)} failed, "
               f"{report.count(SKIP)} skipped ({report.policy})")
    table = tabulate(rows, headers=HEADERS, tablefmt="simple", disable_numparse=True,
                     maxcolwidths=[None] * 6 + [None if width.is_wide() else DETAIL_WIDTH])
    if width.fits(table):
        return f"{table}\n\n{summary}"
    short = width.table([r[:6] for r in rows], HEADERS[:6])
    why = [x for r in report.results if r.status != PASS
           for x in width.wrap(f"{STATUS_TEXT[r.status]} {r.deployment} on {r.machine}, {r.requirement}: "
                               f"{r.message or '-'}")]
    return "\n".join([short, *(["", *why] if why else []), "", *width.wrap(summary),
                      *width.wrap("(the detail of every row: --wide or --json)")])


def junit_cases(report: C.CheckReport) -> list[Case]:
    return [Case(suite=r.deployment, name=f"{r.machine}: {r.requirement}", passed=r.status != FAIL,
                 message=r.message, skipped=r.status == SKIP) for r in report.results]


@app.command()
def check(
    config: ConfigOpt = None,
    machine: MachinesOpt = None,
    deployment: DeploymentOpt = None,
    junit: JunitOpt = None,
    jobs: JobsOpt = 1,
    as_json: JsonOpt = False,
    engine_version: EngineVersionOpt = None,
    wide: WideOpt = False,
) -> None:
    """Judge every deployment in the policy on every machine against its requirements (a CI gate).

    Requirements: fits, min_headroom, max_total_memory, compatible, min_speedup (docs/check.md).
    Exit code: 0 every requirement passes (skips allowed), 1 any fails, 2 a bad policy or input.

    \b
    Examples:
      planner check
      planner check --config deploy/planner.toml --junit planner-junit.xml
      planner check --machine h100-sxm --machine rtx-4090 --json
    """
    built = versions.parse(engine_version, None)  # the llama.cpp build the speed checks price (before any file)
    width.set_wide(wide)
    policy = load_policy(config)
    if policy.found_above:  # the first line of the log says which file gates, before any result
        warn(f"the policy that gates this run is '{policy.path}', found in a parent folder (the search stops at "
             f"the repository root or the user's home); pass --config FILE to choose another.")
    jobs = pool.check_jobs(jobs)
    with versions.selected(built):  # forked workers inherit the selection (core/pool.py forks on Linux)
        report = C.check(policy, machines=split_values(machine), deployments=split_values(deployment), jobs=jobs,
                         progress=_progress if jobs > 1 else None)
    inputs = [policy.path, *(p for a in report.assessments for p in (a.scenario.profile_path, a.scenario.target_ref,
                                                                      a.scenario.draft_ref) if p)]
    if junit:
        atomic_write(junit, render_junit(junit_cases(report), name=f"planner check ({policy.path})"), inputs=inputs)
    on_actions, summary_path = github_actions()
    if on_actions and summary_path:  # before anything is printed: a refused summary path is the only line
        append_text(summary_path, step_summary(report, policy.path), inputs=inputs)
    if as_json:
        emit(check_json(report))
    else:
        say(check_table(report))
    if on_actions:
        write_annotations(report, policy.path)
    raise typer.Exit(0 if report.passed else 1)


def _progress(done: int, total: int, piece: Any) -> None:
    sc = piece[0]
    say(f"[{done}/{total}] {sc.deployment.name} on {sc.machine.name}: assessed", err=True)


def write_annotations(report: C.CheckReport, policy_path: str) -> None:
    """GITHUB_ACTIONS=true: an ::error per failed requirement and a ::warning per skipped one (stderr, so
    --json stays clean; the runner reads both streams). The only output lines allowed to start `::`."""
    for r in report.results:
        if r.status in (FAIL, SKIP):
            typer.echo(gh.annotation("error" if r.status == FAIL else "warning", r.message or r.requirement,
                                     title=f"planner check: {r.deployment} on {r.machine}: {r.requirement}",
                                     file=policy_path), err=True)


def step_summary(report: C.CheckReport, policy_path: str) -> str:
    """The results table for $GITHUB_STEP_SUMMARY (appended by the caller, as the runner documents)."""
    rows = [[r.deployment, r.machine, r.requirement, STATUS_TEXT[r.status], format_value(r.requirement, r.value),
             format_value(r.requirement, r.bound), r.message] for r in report.results]
    verdict = (f"{'PASSED' if report.passed else 'FAILED'}: {report.count(PASS)} passed, {report.count(FAIL)} "
               f"failed, {report.count(SKIP)} skipped")
    return gh.summary(["deployment", "machine", "requirement", "result", "value", "required", "detail"], rows,
                      verdict, f"planner check ({policy_path})")
