"""Fit + pairing + costs + acceptance -> one honest recommendation (or "don't speculate").

Why one composer: each candidate draft x KV dtype is judged the same way: does the pair
fit this machine (fit.py), can the engine run it (pairing.py; a heterogeneous-vocabulary
fallback counts, at its published acceptance cost), and what speed-up at the best K
(speed.py) from measured costs (a probe profile) or a roofline of the machine. The best
option is recommended only when its predicted speed-up is above 1.0; otherwise the
answer is plain decoding, with the mechanism that makes speculation lose.

Sources, always labelled: acceptance measured by a probe > --acceptance > catalog priors
(catalogs/pairs) > family default (plan/acceptance_source.py); costs: --profile > --probe > roofline
(plan/costs.py); the drafts ranked: plan/candidates.py; what is asked: plan/request.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .. import engines
from ..core.errors import PlannerError, UsageError
from ..core.spec import ModelSpec
from ..drafting import Compatibility, DraftingMethod
from ..drafting.draft_model import conditioned
from ..engines import Engine
from ..fits import fit
from ..fits.memory import Settings
from ..speed import acceptance as acc
from ..speed import model as speed
from ..speed.adaptive import Adaptive
from ..speed.adaptive_predict import predict_plan
from ..speed.model import Costs
from . import hybrid, load, mtp_depth, settle
from .acceptance_source import acceptance_for
from .candidates import candidates, tokenizer_family
from .costs import roofline_costs_for, roofline_notes
from .drafting_stop import policies_for
from .load import BatchPoint
from .machine_spread import widen_by_machine
from .request import CostsFor, Pricing, Target, Where, Workload
from .roof import bandwidth_share, compute_share, measured_ends, roofline_machine  # noqa: F401  (plan.roofline_machine)

# Per engine (engines/*.py): the KV cache types worth trying, unquantised first (Engine.kv_options: quantised
# KV is not lossless), its own pairing verdict, and whether a refusal has a heterogeneous-vocabulary
# fallback (Engine.heterogeneous_fallback: vLLM TLI, transformers UAG).
# Quantised KV must beat unquantised by this factor to be preferred (its accuracy cost is real).
QUANT_KV_MARGIN = 1.02
# A draft whose base/instruct style differs from the target's (chat template, tuning) must beat a
# matching one by this factor: the acceptance priors do not see the mismatch, pairing advice does.
STYLE_MARGIN = 1.02
# Speculation is recommended only when it beats plain decoding by this factor: a smaller gain is inside the
# noise of a decode-speed figure (the margins above), and a draft costs memory and, in mlx_lm.server,
# batching (#31: an mlx plan was recommended at 1.00x, 109.0 -> 109.2 tok/s).
MIN_GAIN = 1.02


@dataclass(frozen=True)
class Option:
    """One (draft, KV dtype) plan at its best K."""

    draft: str | None
    draft_ref: str | None
    kv_dtype: str
    k: int
    speedup: float
    speedup_interval: tuple[float, float]
    verdict: str
    fits: bool
    headroom_bytes: int
    compatible: bool
    fallback: str | None
    reasons: tuple[str, ...]
    acceptance: acc.Acceptance | None
    costs_source: str
    baseline_tokens_per_s: float | None = None  # plain decoding of the target, one sequence (1 / t_v(1))
    prediction: speed.Prediction | None = None
    launch: dict[str, Any] = field(default_factory=dict)
    style_match: bool = True  # base/instruct style equals the target's (or unknown)
    stop: Adaptive | None = None  # the confidence stop the plan is priced under (None: every round drafts K)
    per_batch: tuple[BatchPoint, ...] = ()  # the plan at each concurrency of a --batch list (plan/load.py)
    crossover_batch: int | None = None  # smallest of those where speculation stops paying
    method: DraftingMethod | None = field(default=None, compare=False, repr=False)  # what was priced
    problem: fit.Problem | None = field(default=None, compare=False, repr=False)

    @property
    def usable(self) -> bool:
        return self.fits and self.compatible


@dataclass(frozen=True)
class Recommendation:
    target: str
    target_ref: str
    machine: str
    engine: str
    context: int
    batch: int
    baseline_fits: bool
    baseline_headroom_bytes: int
    plans: tuple[Option, ...]
    choice: Option  # choice.draft is None: do not speculate
    tokenizer_family: str | None
    tokenizer_match: str
    notes: tuple[str, ...] = ()


def method_kind(o: Option) -> str:
    """The plan's drafting method ("none": plain decoding)."""
    return o.method.kind if o.method is not None else "none"


# --- one option ------------------------------------------------------------------------------

def evaluate_option(problem: fit.Problem, method: DraftingMethod, compat: Compatibility, costs: Costs,
                    alpha: acc.Acceptance, kv: str, launch_in: engines.LaunchInput, engine: Engine,
                    pricing: Pricing) -> Option:
    """One (method, KV type) plan on `problem`: its fit, the engine's verdict, the speed-up at the best K (or
    `pricing.k_fixed`) under each drafting stop the engine offers, and its launch command when it runs."""
    k_max = pricing.k_max
    devs = fit.evaluate(problem, problem.settings.context, problem.settings.batch)
    headroom = min(d.headroom_bytes for d in devs)
    verdict, fallback, compatible = compat.verdict, compat.fallback, compat.runs
    priced = [(predict_plan(costs.verify_s, costs.draft_s, alpha, costs.overhead_s, k_max=k_max,
                            verify_bounds=costs.verify_bounds, k_fixed=pricing.k_fixed,
                            overhead_low_s=costs.overhead_low_s, adaptive=p), p)
              for p in policies_for(engine, method.kind, pricing.adaptive)]
    (pred, policy), others = priced[0], priced[1:]  # the first policy is the plan; the others are priced beside it
    pred = widen_by_machine(pred, costs, alpha, k_max, policy)
    reasons = list(pred.reasons) + [r for r in (mtp_depth.reason(problem.target, method, pred.k_best),
                                                settle.reason(pred, costs, alpha, not costs.source.startswith("roofline"),
                                                              method.kind))
                                    if r]
    reasons += [f"every round drafting K={o.k_best} (--draft-p-min 0) prices {o.speedup:.2f}x against "
                f"{pred.speedup:.2f}x with the confidence stop (the stop is what published llama-server sweeps ran)"
                for o, p in others if p is None and o.speedup > 1.05 * pred.speedup]
    if headroom < 0:
        reasons.insert(0, f"does not fit: {-headroom:,} B over the tightest device's budget")
    if not compatible:
        reasons.insert(0, f"{engine.name} refuses this pair: {verdict.failed_rule} ({verdict.detail})")
    elif fallback:
        reasons.insert(0, f"{engine.name} needs {fallback} for this pair ({verdict.failed_rule})")
    launch: dict[str, Any] = {}  # no command for a plan that does not fit or will not run
    if headroom >= 0 and compatible:
        stopped = (replace(launch_in, draft_p_min=policy.p_min, draft_n_min=policy.n_min) if policy is not None
                   else launch_in)  # the drafting stop's flags, where the plan is priced under one
        launch = engine.launch(replace(stopped, **method.launch_fields(), k=pred.k_best,
                                       kv_dtype=_kv_flag(kv), heterogeneous=fallback is not None))
    return Option(draft=method.label, draft_ref=method.ref, kv_dtype=kv, k=pred.k_best, speedup=pred.speedup,
                  speedup_interval=(pred.speedup_low, pred.speedup_high), verdict=pred.verdict,
                  fits=headroom >= 0, headroom_bytes=headroom, compatible=compatible, fallback=fallback,
                  reasons=tuple(reasons), acceptance=alpha, costs_source=costs.source,
                  baseline_tokens_per_s=1.0 / costs.verify_s[0], prediction=pred,
                  launch=launch, style_match=_style_match(problem.target, method.resident_model()), stop=policy,
                  method=method, problem=problem)


def split_restrict(compat: Compatibility, draft: ModelSpec | None, layout: fit.Layout,
                   engine: Engine) -> tuple[Compatibility, fit.Layout]:
    """A candidate draft the engine would shard at the target's tp, but whose heads do not divide it: refused
    as laid out (fit's rule, fits/fit.heads_refuse_tp) and sized on device 0, so its row keeps a headroom.

    Why here: one such candidate (`--candidates smollm2-135m-instruct` beside a 70B at tp 8) used to end the
    whole recommendation with an error about a --tp the user never gave; the other drafts still plan.
    """
    if draft is None or layout.tp == 1 or layout.draft_device is not None or not engine.tp_splits_heads:
        return compat, layout
    why = fit.heads_refuse_tp(draft, layout.tp, engine)
    if why is None or not compat.runs:
        return compat, layout
    v = replace(compat.verdict, compatible=False, failed_rule="draft_tensor_parallel",
                detail=f"the draft at tp {layout.tp}: {why}; --draft-device N runs it on one device")
    return replace(compat, verdict=v, fallback=None), replace(layout, draft_device=0)


def _style_match(target: ModelSpec, draft: ModelSpec | None) -> bool:
    if draft is None or target.instruct is None or draft.instruct is None:
        return True
    return bool(target.instruct) == bool(draft.instruct)


def _kv_flag(kv: str) -> str | None:
    return None if kv in ("auto", "f16") else kv


def rank(options: Sequence[Option]) -> list[Option]:
    """Usable first, then by speed-up; unquantised KV wins unless quantised is QUANT_KV_MARGIN faster."""
    def key(o: Option) -> tuple:
        penalty = QUANT_KV_MARGIN if _kv_flag(o.kv_dtype) is not None else 1.0
        penalty *= 1.0 if o.style_match else STYLE_MARGIN
        return (not o.usable, -(o.speedup / penalty), -o.headroom_bytes)
    return sorted(options, key=key)


# --- the whole recommendation ------------------------------------------------------------------

def recommend(target: Target, where: Where, load: Workload, pricing: Pricing | None = None) -> Recommendation:
    """Rank candidate drafts x KV dtype on `where.machine` under `where.engine` and pick one, or none.

    Args:
        target: the target, what the user typed for it, and the drafts and kinds to consider (plan/request.py).
        where: the machine, the resolved engine, the layout (default: the engine's), utilisation, KV types.
        load: context, batch (and a --batch list to price each plan at), prompts, temperature.
        pricing: costs (default: the roofline), acceptance given or measured, K bounds, a confidence stop
            (None: the defaults of `Pricing`).

    Raises:
        MachineError: roofline needed but the machine has no bandwidth figure.
        UsageError: a layout the machine cannot hold, or a confidence stop the engine does not have.
    """
    pricing = pricing or Pricing()
    spec, machine, engine, adaptive = target.spec, where.machine, where.engine, pricing.adaptive
    if adaptive is not None and (adaptive.p_min > 0 or adaptive.n_min > 0) and not engine.confidence_stop:
        raise UsageError(f"Cannot model --draft-p-min on {engine.name}: it drafts K tokens every round (only "
                         f"llama.cpp stops drafting below a confidence). Drop --draft-p-min or use --engine llama.cpp.")
    layout = where.layout or fit.default_layout(machine.n_devices, engine)
    where = replace(where, layout=layout)
    base_s = Settings(context=load.context, batch=load.batch, resolved_engine=engine, spec_tokens=0,
                      weights_dtype=target.weights_dtype)
    base = fit.evaluate(fit.Problem(spec, machine, base_s, layout, utilization=where.utilization), load.context,
                        load.batch)
    base_headroom = min(d.headroom_bytes for d in base)
    family, how = tokenizer_family(spec)
    cands, notes = candidates(target, engine, load.prompts, family, how)
    kv_dtypes = where.kv_dtypes
    launch_in = engines.LaunchInput(target=target.ref, draft=None, k=1, context=load.context, tp=layout.tp,
                                    pp=layout.pp, temperature=load.temperature, batch=load.batch,
                                    weights_quant=target.weights_dtype, gpu_memory_utilization=where.utilization,
                                    kv_dtype=_kv_flag(kv_dtypes[0]) if kv_dtypes and len(kv_dtypes) == 1 else None)
    roofline_costs_used = pricing.costs_for is None
    if roofline_costs_used:
        notes += roofline_notes(spec, where)
    costs_for = pricing.costs_for or roofline_costs_for(spec, where, pricing.k_max)
    options = []
    for method in conditioned(cands, temperature=load.temperature, workload=load.prompts,
                              rule=engine.sampled_acceptance):
        compat = hybrid.restrict(method.compatibility(spec, engine, context=load.context), spec, method.kind, engine)
        compat, lay = split_restrict(compat, method.resident_model(), layout, engine)
        alpha = acceptance_for(spec, method, given=pricing.given_acceptance,
                               measured=(pricing.measured_acceptance or {}).get(method.label), tli=compat.tli_alpha)
        for kv in kv_dtypes or engine.kv_options:
            s = Settings(context=load.context, batch=load.batch, resolved_engine=engine,
                         kv_dtype=None if kv == "auto" else kv, weights_dtype=target.weights_dtype,
                         spec_tokens=pricing.k_max)
            problem = fit.Problem(spec, machine, s, lay, draft=method.resident_model(),
                                  draft_settings=method.settings_for(s), utilization=where.utilization)
            costs = hybrid.priced(costs_for(method, s), spec, method.kind, s, alpha.alpha, machine.kind,
                                  machine.bandwidth_bytes_per_s)
            options.append(evaluate_option(problem, method, compat, costs, alpha, kv, launch_in, engine, pricing))
    batches = load.batches
    if batches and len(set(batches)) > 1:
        if roofline_costs_used:
            options = [under_load(o, batches, pricing.k_max, pricing.k_fixed,
                                  hybrid.costs_for(costs_for, spec, machine, o.acceptance))
                       if o.usable and o.acceptance is not None else o for o in options]  # every priced option has one
        else:
            notes.append("--batch list: measured costs are for one sequence; the per-batch curve needs the roofline")
    ranked = rank(options)
    choice = _choose(ranked, base_headroom >= 0, launch_in, engine)
    return Recommendation(target=spec.id, target_ref=target.ref, machine=machine.name, engine=engine.name,
                          context=load.context, batch=load.batch, baseline_fits=base_headroom >= 0,
                          baseline_headroom_bytes=base_headroom, plans=tuple(ranked), choice=choice,
                          tokenizer_family=family, tokenizer_match=how, notes=tuple(notes))


def under_load(o: Option, batches: Sequence[int], k_max: int, k_fixed: int | None, costs_for: CostsFor) -> Option:
    """The option at every concurrency of `batches` (costs re-priced at each) and its crossover."""
    method, problem, alpha = o.method, o.problem, o.acceptance
    if method is None or problem is None or alpha is None:  # evaluate_option sets all three on what it prices
        raise PlannerError(f"Cannot price draft {o.draft} under load: the plan was never priced.")

    def point(b: int) -> BatchPoint:
        s = replace(problem.settings, batch=b)
        q = replace(problem, settings=s, draft_settings=method.settings_for(s))
        return load.batch_point(b, q, costs_for(method, s), alpha, k_max, k_fixed, adaptive=o.stop)
    points = load.batch_curve(batches, point)
    notes = load.load_notes(points, o.k, method.resident_model(), problem.settings)
    return replace(o, per_batch=points, crossover_batch=load.crossover_batch(points), reasons=(*o.reasons, *notes))


def _choose(ranked: Sequence[Option], base_fits: bool, launch_in: engines.LaunchInput, engine: Engine) -> Option:
    best = next((o for o in ranked if o.usable and o.speedup >= MIN_GAIN), None)
    if best is not None:
        return best
    reasons = []
    if not base_fits:
        reasons.append("the target alone does not fit this machine at this context: see 'planner fit'")
    elif not ranked:
        reasons.append("no candidate draft to evaluate")
    else:
        usable = [o for o in ranked if o.usable]
        if not usable:
            # one line per draft and reason: its plans at each KV type share the refusal (once printed twice)
            refusals = dict.fromkeys(f"{o.draft}: {o.reasons[0]}" for o in ranked)
            reasons.append("no candidate draft both fits and is compatible: " + "; ".join(list(refusals)[:3]))
        else:
            top = usable[0]
            why = ("slower than plain decoding" if top.speedup <= 1.0 else
                   f"a gain under {MIN_GAIN - 1:.0%} is inside the noise, not worth a draft")
            reasons.append(f"best candidate {top.draft} (K={top.k}, {top.kv_dtype} KV) predicts "
                           f"{top.speedup:.2f}x: {why}")
            reasons.extend(top.reasons)
    return Option(draft=None, draft_ref=None, kv_dtype=engine.kv_options[0], k=0, speedup=1.0,
                  speedup_interval=(1.0, 1.0), verdict="no speculation", fits=base_fits, headroom_bytes=0,
                  compatible=True, fallback=None, reasons=tuple(reasons), acceptance=None, costs_source="-",
                  baseline_tokens_per_s=ranked[0].baseline_tokens_per_s if ranked else None,
                  launch=engine.launch(launch_in) if base_fits else {})


