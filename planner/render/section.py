"""Gathering the facts of one report section: a deployment on one machine, assessed and recommended.

Why its own module: a section shows what `planner check` would judge (the same assessment and
requirement results) plus what `planner recommend` would pick, and (no draft given) the
recommended draft assessed in its place; the verify curve comes from the assessment's costs,
the profile or the machine's roofline, always labelled. Blocks and plots are laid out later
(render/blocks.py, render/plots.py) from the `Section` built here.
"""

from __future__ import annotations

from dataclasses import replace

from ..core import paths
from ..core.errors import ConfigError, MachineError, UsageError
from ..drafting import DraftModel
from ..fits import fit, verdict
from ..plan import recommend as plan
from ..plan.assess import Assessment, assess, costs_for, load_curve, measured_acceptance
from ..plan.check import MIN_SPEEDUP, SKIP, Result
from ..plan.check import judge as judge_results
from ..plan.load import BatchPoint
from ..plan.request import Pricing, Target, Where, Workload
from ..plan.scenario import Scenario
from ..sources import load_spec
from ..speed import roofline
from ..speed.adaptive import EVERY_ROUND
from .document import Section


def _launch_ref(sc: Scenario) -> str:
    return sc.target_ref if paths.exists(sc.target_ref) else sc.target.id


def recommend_for(sc: Scenario) -> tuple[plan.Recommendation | None, str | None]:
    """plan.recommend over the scenario's draft (else the catalog's candidates), with its costs."""
    d = sc.deployment
    try:
        cost_fn, k_top = costs_for(sc)
        cands = [sc.method] if sc.method else None
        measured = measured_acceptance(sc.profile, sc.method) if sc.method else None
        rec = plan.recommend(
            Target(sc.target, _launch_ref(sc), candidates=cands, weights_dtype=sc.settings.weights_dtype),
            Where(sc.machine, sc.settings.resolved_engine, layout=sc.layout, utilization=d.utilization,
                  kv_dtypes=[d.kv_dtype] if d.kv_dtype else None),
            Workload(context=sc.settings.context, batch=sc.settings.batch, temperature=d.temperature),
            Pricing(costs_for=cost_fn, given_acceptance=sc.given_acceptance,
                    measured_acceptance={sc.method.label: measured} if measured and sc.method else None, k_max=k_top, k_fixed=d.k,
                    adaptive=EVERY_ROUND if d.k is not None else None))
    except (MachineError, UsageError) as e:
        return None, str(e)
    return rec, None


def _with_draft(sc: Scenario, ref: str) -> Scenario:
    d = replace(sc.deployment, draft=ref)
    spec = load_spec(ref)
    k_rows = d.k or d.max_k
    return replace(sc, deployment=d, method=DraftModel(spec, ref), settings=replace(sc.settings, spec_tokens=k_rows))


def target_curve(sc: Scenario, a: Assessment) -> tuple[tuple[float, ...], str | None]:
    """t_v(1..K+1): the assessment's costs, else the profile's target, else the roofline; () if none."""
    if a.speed is not None:
        return tuple(a.speed.costs.verify_s), a.speed.costs.source
    d, m = sc.deployment, sc.machine
    if sc.profile is not None:
        return tuple(sc.profile.target.verify_s), "profile (measured)"
    if m.bandwidth_bytes_per_s:
        roof = plan.roofline_machine(m, sc.layout, sc.settings.resolved_engine)
        return (roofline.verify_curve(sc.target, roof, context=sc.settings.context, n_max=(d.k or d.max_k) + 1,
                                      settings=sc.settings), f"roofline ({roof.name})")
    return (), None


def build_section(sc: Scenario, index: int, *, judge: bool = True) -> Section:
    """Assess the scenario as check does, recommend, and (no draft given) show the recommended draft.

    `judge`: list the policy's requirement results (a policy report; not for command-line reports).

    Raises:
        PlannerError: a model or profile that cannot be read.
    """
    original = assess(sc, need_speed=True)
    try:
        results = tuple(judge_results(original)) if judge else ()
    except ConfigError as e:  # min_speedup cannot be predicted: the report still renders, saying why
        results = (*_judge_without_speed(original),
                   Result(sc.deployment.name, sc.label, MIN_SPEEDUP, SKIP, None,
                          sc.deployment.require.min_speedup, str(e)))
    rec, rec_error = recommend_for(sc)
    shown, origin = original, "given" if sc.method is not None else "none"
    if sc.method is None and rec is not None:
        # the recommended draft; when plain decoding wins, the best candidate that fits and pairs (to show why)
        pick: plan.Option | None = rec.choice
        origin_if = "recommended"
        if not rec.choice.draft:
            pick = next((o for o in rec.plans if o.usable), None)
            origin_if = "best candidate, not recommended"
        if pick is not None and pick.draft_ref:
            shown, origin = assess(_with_draft(sc, pick.draft_ref), need_speed=True), origin_if
    fr = None
    if shown.layout_error is None:
        s = shown.scenario
        fr = verdict.fit(fit.Problem(s.target, s.machine, s.settings, s.layout, draft=s.draft,
                                     utilization=s.deployment.utilization))
    verify, vsrc = target_curve(shown.scenario, shown)
    load, load_error = load_curves(shown.scenario)
    title = f"{sc.deployment.name} on {sc.label}"
    return Section(anchor=f"s{index}", title=title, assessment=shown, draft_origin=origin, fit=fr,
                   recommendation=rec, recommendation_error=rec_error, verify_s=verify, verify_source=vsrc,
                   results=results, load=load, load_error=load_error)


LOAD_PEAK = 256  # concurrencies shown: 1, 2, 4, ... 256 (or the deployment's batch, when larger)
LOAD_CONTEXTS = (1, 4, 16)  # the deployment's context, and 4x and 16x it (up to the model's window)


def load_curves(sc: Scenario) -> tuple[tuple[tuple[int, tuple[BatchPoint, ...]], ...], str | None]:
    """The shown plan at 1 .. LOAD_PEAK sequences for a few contexts (roofline), or why there is none."""
    if sc.method is None:
        return (), "no draft to speculate with"
    peak = max(LOAD_PEAK, sc.settings.batch)
    contexts = sorted({min(sc.settings.context * f, sc.target.max_context or sc.settings.context * f)
                       for f in LOAD_CONTEXTS})
    out = []
    for c in contexts:
        at = replace(sc, settings=replace(sc.settings, context=c))
        try:
            out.append((c, load_curve(at, peak)))
        except (MachineError, UsageError) as e:
            return tuple(out), str(e)
    return tuple(out), None


def _judge_without_speed(a: Assessment) -> list[Result]:
    d = a.scenario.deployment
    no_speed = replace(a.scenario, deployment=replace(d, require=replace(d.require, min_speedup=None)))
    return judge_results(replace(a, scenario=no_speed))
