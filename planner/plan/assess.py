"""Assessing one scenario: memory fit, the engine's pairing verdict and the predicted speed-up.

Why its own module: `planner check` judges an `Assessment` against requirements and
`planner report` renders the same one per machine, so both read the figures built here from
the existing composers: fit.evaluate for memory, the drafting method's compatibility for the
engine verdict, roofline_costs / profile_costs + acceptance_for + speed.predict
for speed. Nothing here judges, prints or formats units.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..core.errors import MachineError, UsageError
from ..drafting import Compatibility, DraftingMethod
from ..engines.base import Verdict
from ..fits import fit
from ..fits.memory import Settings
from ..pairing import pair as pairing
from ..speed import acceptance as acc
from ..speed import model as speed
from ..speed.adaptive import EVERY_ROUND, Adaptive
from ..speed.adaptive_predict import predict_plan
from ..speed.model import Costs
from . import load
from . import recommend as plan
from .acceptance_source import acceptance_for, profile_acceptance_source
from .costs import profile_costs, roofline_costs
from .drafting_stop import policies_for
from .machine_spread import spread_costs, widen_by_machine
from .scenario import Scenario


@dataclass(frozen=True)
class Speed:
    """The speed-up the deployment would see, with every input labelled."""

    costs: plan.Costs
    acceptance: acc.Acceptance
    prediction: speed.Prediction
    k: int  # the K judged: the deployment's k, else the best K
    fixed_k: bool
    speedup: float  # at k, central alpha
    speedup_low: float  # at k, the low end of the acceptance interval
    speedup_high: float  # at k, the high end
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Assessment:
    """Everything check and report say about one scenario."""

    scenario: Scenario
    devices: tuple[fit.DeviceFit, ...]  # empty when the layout cannot be placed
    layout_error: str | None
    compat: Compatibility | None  # the engine's verdict on the method (None: no draft)
    speed: Speed | None
    speed_error: str | None  # why there is no speed (no bandwidth figure and no profile)

    @property
    def pair(self) -> pairing.PairReport | None:
        return self.compat.report if self.compat is not None else None

    @property
    def verdict(self) -> Verdict | None:
        return self.compat.verdict if self.compat is not None else None

    @property
    def headroom_bytes(self) -> int | None:
        return min(d.headroom_bytes for d in self.devices) if self.devices else None

    @property
    def total_bytes(self) -> int | None:
        """Bytes used summed over the devices the layout uses (weights, KV, activations, overhead)."""
        return sum(d.used_bytes for d in self.devices) if self.devices else None

    @property
    def fits(self) -> bool:
        return bool(self.devices) and all(d.headroom_bytes >= 0 for d in self.devices)

    @property
    def fallback(self) -> str | None:
        """The engine's heterogeneous-vocabulary path when it refuses the plain algorithm."""
        return self.compat.fallback if self.compat is not None else None


def measured_acceptance(profile: object | None, method: DraftingMethod, origin: str | None = None
                        ) -> acc.Acceptance | None:
    """A probe's (or a live server's) measured alpha (+/- 2 std over prompts) when it measured this very
    draft; `origin`, the profile's path, is named in the source."""
    a = getattr(profile, "acceptance", None)
    pd = getattr(profile, "draft", None)
    if a is None or pd is None or pd.id != method.label:
        return None
    lo, hi = max(0.0, a.alpha - 2 * a.alpha_std), min(1.0, a.alpha + 2 * a.alpha_std)
    return acc.Acceptance(a.alpha, lo, hi, given=f"alpha = {a.alpha:.3f} (measured)",
                          source=profile_acceptance_source(a, origin))


def scenario_acceptance(sc: Scenario, compat: Compatibility) -> acc.Acceptance:
    """The scenario's acceptance: its profile's measurement > the policy's `acceptance` > the method's prior
    (capped by a vocabulary translation's published acceptance when the engine needs one)."""
    if sc.method is None:  # a Compatibility exists only for a draft
        raise UsageError(f"Cannot price '{sc.label}': the deployment '{sc.deployment.name}' names no draft.")
    return acceptance_for(sc.target, sc.method, given=sc.given_acceptance,
                               measured=measured_acceptance(sc.profile, sc.method, sc.profile_path),
                               tli=compat.tli_alpha)


def costs_for(sc: Scenario) -> tuple[Callable[[DraftingMethod, Settings], plan.Costs], int]:
    """(drafting method, settings) -> Costs for this scenario, and the largest K the costs cover.

    Profile when the deployment names one for this machine (t_v measured; t_d measured for the
    profiled draft, else roofline-scaled), else the machine's roofline.

    Raises:
        MachineError: no profile and the machine has no bandwidth figure.
    """
    d, m = sc.deployment, sc.machine
    k_max = d.k or d.max_k
    roof = plan.roofline_machine(m, sc.layout, sc.settings.resolved_engine) if m.bandwidth_bytes_per_s else None
    if sc.profile is not None:
        return profile_costs(sc.profile, sc.target, roof), min(k_max, sc.profile.max_k)
    if roof is None:
        raise MachineError(f"no speed figure for '{sc.label}': the machine has no memory-bandwidth figure and the "
                           f"deployment names no profile. Set profile = \"probe.json\" (from 'planner probe') or "
                           f"machine = <catalog name>")

    ends = plan.measured_ends(m, sc.layout, sc.settings.resolved_engine)  # a measured machine's spread (else None)

    def roofline(method: DraftingMethod, s: Settings) -> plan.Costs:
        return spread_costs(roofline_costs(sc.target, method, roof, s, k_max), ends,
                            lambda r: roofline_costs(sc.target, method, r, s, k_max))
    return roofline, k_max


def assess_speed(sc: Scenario, compat: Compatibility) -> Speed:
    """Predict the speed-up at the deployment's K (else the best K).

    Raises:
        MachineError: no profile and no bandwidth figure; UsageError: k beyond the profile's curve.
    """
    if sc.method is None:
        raise UsageError(f"Cannot predict a speed-up for deployment '{sc.deployment.name}': it names no draft.")
    cost_fn, k_top = costs_for(sc)
    d = sc.deployment
    costs = cost_fn(sc.method, sc.settings)
    alpha = scenario_acceptance(sc, compat)
    if d.k is not None and d.k > len(costs.verify_s) - 1:
        raise UsageError(f"Cannot judge deployment '{d.name}' at k = {d.k} on '{sc.label}': its costs cover "
                         f"K <= {len(costs.verify_s) - 1} (expected k within the profile). Probe with a larger "
                         f"--max-k or lower k.")
    pred, policy = policy_prediction(sc, costs, alpha, max(k_top, d.k or 1))
    k = d.k or pred.k_best
    # the interval at the K judged (the deployment's, else the best): predict() at that K
    at_k = predict_plan(costs.verify_s, costs.draft_s, alpha, costs.overhead_s, k_max=max(k_top, d.k or 1),
                        verify_bounds=costs.verify_bounds, k_fixed=k, overhead_low_s=costs.overhead_low_s,
                        adaptive=policy)
    # a measured machine's spread widens both, as recommend's (plan/machine_spread.py); no-op when catalogued
    pred = widen_by_machine(pred, costs, alpha, max(k_top, d.k or 1), policy)
    at_k = widen_by_machine(at_k, costs, alpha, max(k_top, d.k or 1), policy)
    s_mid, s_low, s_high = at_k.speedup, at_k.speedup_low, at_k.speedup_high
    notes = []
    prof = sc.profile
    if prof is not None and prof.context != sc.settings.context:
        notes.append(f"profile measured at context {prof.context}, deployment runs {sc.settings.context}")
    if prof is not None and prof.target.id != sc.target.id:
        notes.append(f"profile measured '{prof.target.id}', not '{sc.target.id}'")
    return Speed(costs=costs, acceptance=alpha, prediction=pred, k=k, fixed_k=d.k is not None, speedup=s_mid,
                 speedup_low=s_low, speedup_high=s_high, notes=tuple(notes))


def policy_prediction(sc: Scenario, costs: Costs, alpha: acc.Acceptance,
                k_max: int) -> tuple[speed.Prediction, Adaptive | None]:
    """The deployment's prediction under its drafting policy (drafting_stop.policies_for, the first); a
    deployment's k fixes K (every round drafts k)."""
    asked = EVERY_ROUND if sc.deployment.k is not None else None
    policy = policies_for(sc.settings.resolved_engine, sc.method.kind if sc.method else "", asked)[0]
    return predict_plan(costs.verify_s, costs.draft_s, alpha, costs.overhead_s, k_max=k_max,
                        verify_bounds=costs.verify_bounds, overhead_low_s=costs.overhead_low_s, adaptive=policy), policy


def load_curve(sc: Scenario, peak: int) -> tuple[load.BatchPoint, ...]:
    """The deployment's plan at concurrency 1, 2, 4, ... up to `peak` (and `peak` itself), roofline costs.

    A probe profile measures one sequence, so the curve needs the machine's roofline at each batch.

    Raises:
        MachineError: the machine has no bandwidth figure; UsageError: no draft.
    """
    m, d, method = sc.machine, sc.deployment, sc.method
    if method is None:
        raise UsageError(f"Cannot price deployment '{d.name}' under load: it names no draft.")
    if not m.bandwidth_bytes_per_s:
        raise MachineError(f"no roofline for '{sc.label}' under load: the machine has no memory-bandwidth figure "
                           f"(a probe profile measures one sequence only)")
    roof = plan.roofline_machine(m, sc.layout, sc.settings.resolved_engine)
    alpha = scenario_acceptance(sc, method.compatibility(sc.target, sc.settings.resolved_engine, context=sc.settings.context))
    k_max = d.k or d.max_k
    problem = fit.Problem(sc.target, sc.machine, sc.settings, sc.layout, draft=sc.draft,
                          utilization=d.utilization)
    batches = sorted({*(1 << i for i in range(peak.bit_length()) if 1 << i <= peak), peak})
    policy = policies_for(sc.settings.resolved_engine, method.kind, EVERY_ROUND if d.k is not None else None)[0]

    def at(b: int) -> load.BatchPoint:
        s = replace(sc.settings, batch=b)
        return load.batch_point(b, problem, roofline_costs(sc.target, method, roof, s, k_max), alpha,
                                k_max, k_fixed=d.k, adaptive=policy)
    return load.batch_curve(batches, at)


def assess(sc: Scenario, *, need_speed: bool = True) -> Assessment:
    """Fit, pairing verdict and (when `need_speed` and there is a draft) the speed-up.

    A layout the machine cannot hold is an answer ("does not fit this machine"), not an error.

    Raises:
        MachineError: speed needed, no profile and no bandwidth figure.
    """
    devices: tuple[fit.DeviceFit, ...] = ()
    layout_error = None
    problem = fit.Problem(sc.target, sc.machine, sc.settings, sc.layout, draft=sc.draft,
                          utilization=sc.deployment.utilization)
    try:
        devices = fit.evaluate(problem, sc.settings.context, sc.settings.batch)
    except UsageError as e:
        layout_error = str(e)
    compat = None
    if sc.method is not None:
        compat = sc.method.compatibility(sc.target, sc.settings.resolved_engine, context=sc.settings.context)
    sp, speed_error = None, None
    if need_speed and compat is not None:
        try:
            sp = assess_speed(sc, compat)
        except MachineError as e:
            speed_error = str(e)
    return Assessment(scenario=sc, devices=devices, layout_error=layout_error, compat=compat, speed=sp,
                      speed_error=speed_error)
