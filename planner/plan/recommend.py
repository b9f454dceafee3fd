"""Fit + pairing + costs + acceptance -> one honest recommendation (or "don't speculate").

Why one composer: each candidate draft x KV dtype is judged the same way: does the pair
fit this machine (fit.py), can the engine run it (pairing.py; a heterogeneous-vocabulary
fallback counts, at its published acceptance cost), and what speed-up at the best K
(speed.py) from measured costs (a probe profile) or a roofline of the machine. The best
option is recommended only when its predicted speed-up is above 1.0; otherwise the
answer is plain decoding, with the mechanism that makes speculation lose.

Sources, always labelled: acceptance measured by a probe > --acceptance > catalog priors
(catalogs/pairs) > family default; costs: --profile > --probe > roofline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .. import engines
from ..core.constants import DEFAULT_MAX_K
from ..core.errors import MachineError, PlannerError, UsageError
from ..core.spec import ModelSpec
from ..drafting import DRAFT_MODEL, Compatibility, DraftingMethod, DraftModel, self_drafting
from ..drafting.draft_model import conditioned
from ..engines import Engine, versions
from ..engines.base import share_key
from ..fits import fit
from ..fits.machine import Machine
from ..fits.memory import Settings
from ..sources import catalog, load_spec
from ..speed import acceptance as acc
from ..speed import model as speed
from ..speed import roofline
from ..speed.adaptive import Adaptive
from ..speed.adaptive_predict import predict_plan
from ..speed.model import Costs
from . import draft_catchup, hybrid, load, mtp_depth, settle
from .drafting_stop import policies_for
from .load import BatchPoint
from .machine_spread import spread_costs, widen_by_machine
from .roof import bandwidth_share, compute_share, measured_ends, roofline_machine  # noqa: F401  (plan.roofline_machine)

# Per engine (engines/*.py): the KV cache types worth trying, unquantised first (Engine.kv_options: quantised
# KV is not lossless), its own pairing verdict, and whether a refusal has a heterogeneous-vocabulary
# fallback (Engine.heterogeneous_fallback: vLLM TLI, transformers UAG).
# A draft larger than this share of the target's weights is not a candidate by default.
MAX_DRAFT_SHARE = 0.5
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


# --- which drafts ----------------------------------------------------------------------------

def tokenizer_family(spec: ModelSpec) -> tuple[str | None, str]:
    """The catalog tokenizer family of `spec` and how it was matched.

    Catalog models carry the tag. A config-only directory or a GGUF is matched by its evidence
    against the catalog's tokenizer facts: token count (or config vocab_size), bos/eos ids,
    model_type and name; the match with the most agreeing facts wins.
    """
    fp = spec.tokenizer
    if fp is not None and fp.family:
        return fp.family, f"catalog tokenizer facts ({spec.id})"
    best: tuple[int, str, list[str]] | None = None
    name = spec.id.lower()
    for e in catalog.entries():
        facts = e.get("tokenizer")
        if not isinstance(facts, dict) or not facts.get("family"):
            continue
        cfg = e["config"].get("text_config") or e["config"]
        why: list[str] = []
        if fp is not None and fp.basis == "tokens" and fp.vocab_size == facts.get("vocab_size"):
            why.append(f"{fp.vocab_size} tokens")
        elif spec.vocab == cfg.get("vocab_size"):
            why.append(f"config vocab_size {spec.vocab}")
        else:
            continue
        eos = set(spec.eos_token_ids) | ({fp.eos_id} if fp is not None and fp.eos_id is not None else set())
        if facts.get("eos_id") is not None and facts["eos_id"] in eos:
            why.append(f"eos id {facts['eos_id']}")
        bos = spec.bos_token_id if spec.bos_token_id is not None else (fp.bos_id if fp else None)
        if facts.get("bos_id") is not None and facts["bos_id"] == bos:
            why.append(f"bos id {bos}")
        if cfg.get("model_type") == spec.model_type:
            why.append(f"model_type {spec.model_type}")
        if str(e.get("family", "")).lower().split("-")[0] in name:
            why.append(f"name contains '{e['family']}'")
        score = len(why)
        if best is None or score > best[0]:
            best = (score, str(facts["family"]), why)
    if best is None or best[0] < 2:
        return None, "no catalog tokenizer family shares this model's vocabulary size and special ids"
    return best[1], "matched by " + ", ".join(best[2])


def catalog_candidates(target: ModelSpec, family: str | None, weights_dtype: str | None = None) -> list[DraftingMethod]:
    """Catalog models sharing the target's tokenizer family and much smaller than it."""
    if family is None:
        return []
    out: list[DraftingMethod] = []
    for e in catalog.with_tokenizer_family(family):  # an index built once per catalog, not a scan per target
        if e["id"] == target.id:
            continue
        try:
            spec = load_spec(e["id"])
        except PlannerError:
            continue
        if spec.weights.resident_bytes <= target.weights.resident_bytes * MAX_DRAFT_SHARE:
            out.append(DraftModel(spec=spec, ref=e["id"], weights_dtype=weights_dtype))
    return out


# --- what each option costs --------------------------------------------------------------------

def roofline_costs(target: ModelSpec, method: DraftingMethod, machine: roofline.Roof, s: Settings,
                   k_max: int) -> Costs:
    """Roofline t_v(1..k_max+1) of the target, the method's t_d and the engine's per-round speculation
    overhead t_o on the deployment context, at the settings' batch (concurrent sequences)."""
    verify = roofline.verify_costs(target, machine, context=s.context, n_max=k_max + 1, settings=s)
    costs = roofline_verify(verify, method.step_s(machine, s), machine.name, s, getattr(machine, "share_kind", None))
    return draft_catchup.priced(costs, method, machine, s)


def roofline_verify(verify: Sequence[roofline.ForwardCost], draft_s: float, name: str, s: Settings,
                    share_kind: str | None = None) -> Costs:
    """Costs from roofline forwards: the central t_v curve and the kernel-curve interval around it, and the
    engine's per-round speculation overhead at the settings' batch; where the engine's fixed cost depends on
    its build on this machine class, which build range the costs assume (engines/versions.py)."""
    basis = {c.kernel_basis for c in verify[1:]} - {"none"}
    src = f"roofline ({name})" + (f"; verify kernels: {', '.join(sorted(basis))} curves" if basis else "")
    key = share_key(share_kind)
    choice = versions.fixed_cost(s.engine, key) if key is not None else None
    if choice is not None:
        src += f"; {s.engine} fixed cost per forward: {choice.note}"
    t_o, t_o_low, why = roofline.spec_round_overhead_s(s.resolved_engine, s.batch)
    if t_o:
        src += (f"; speculation overhead {t_o * 1e3:.3g} ms per round at {s.batch} sequence{'s' if s.batch != 1 else ''}, "
                f"{t_o_low * 1e3:.3g} ms at the optimistic end ({why})")
    return Costs(verify_s=tuple(c.seconds for c in verify), draft_s=draft_s, overhead_s=t_o, source=src,
                 overhead_low_s=t_o_low,
                 verify_low_s=tuple(c.seconds_low for c in verify), verify_high_s=tuple(c.seconds_high for c in verify))


def allreduce_note(target: ModelSpec, machine: Machine, tp: int) -> str:
    """What a tensor-parallel plan pays to synchronise its ranks, and over which link (speed/roofline.allreduce_s)."""
    if machine.interconnect is None:
        return (f"tensor parallel {tp}: the all-reduces (2 per layer) are not priced: '{machine.name}' catalogues no "
                f"link between its GPUs")
    link, latency = machine.interconnect
    return (f"tensor parallel {tp}: 2 all-reduces per layer x {target.n_layers} layers, each of tokens x "
            f"{target.hidden:,} x 2 B (ring: {latency * 1e6:.3g} us + 2 ({tp}-1)/{tp} x bytes / {link / 1e9:.3g} GB/s) "
            f"({machine.sources.get('interconnect', 'catalogued link')})")


def acceptance_for(target: ModelSpec, method: DraftingMethod, *, given: acc.Acceptance | None,
                   measured: acc.Acceptance | None, tli: float | None) -> acc.Acceptance:
    """Measured > given > the method's prior (published pairs of the two families > family default);
    a vocabulary translation (TLI) caps it at the published acceptance for that overlap."""
    a = measured or given or method.acceptance_prior(target)
    if tli is not None and tli < a.alpha:
        lo = max(0.0, min(a.low, tli - 0.1))  # one published pair per overlap: +/- 0.1 around it
        a = acc.Acceptance(alpha=tli, low=lo, high=max(tli, min(a.high, tli + 0.1)),
                           given=f"{a.given}; capped by TLI at this vocabulary overlap",
                           source=f"{a.source}; published TLI acceptance (catalogs/heterogeneous_vocab.json)")
    return a


# --- one option ------------------------------------------------------------------------------

def evaluate_option(problem: fit.Problem, method: DraftingMethod, compat: Compatibility, costs: Costs,
                    alpha: acc.Acceptance, k_max: int, kv: str, launch_in: engines.LaunchInput, engine: Engine,
                    k_fixed: int | None = None, adaptive: Adaptive | None = None) -> Option:
    devs = fit.evaluate(problem, problem.settings.context, problem.settings.batch)
    headroom = min(d.headroom_bytes for d in devs)
    verdict, fallback, compatible = compat.verdict, compat.fallback, compat.runs
    priced = [(predict_plan(costs.verify_s, costs.draft_s, alpha, costs.overhead_s, k_max=k_max,
                            verify_bounds=costs.verify_bounds, k_fixed=k_fixed, overhead_low_s=costs.overhead_low_s,
                            adaptive=p), p) for p in policies_for(engine, method.kind, adaptive)]
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

def recommend(target: ModelSpec, target_ref: str, machine: Machine, *, engine: Engine, context: int, batch: int = 1,
              layout: fit.Layout | None = None, candidates: Sequence[DraftingMethod] | None = None,
              costs_for: Any = None, given_acceptance: acc.Acceptance | None = None,
              measured_acceptance: dict[str, acc.Acceptance] | None = None, k_max: int = DEFAULT_MAX_K,
              kv_dtypes: Sequence[str] | None = None, utilization: float | None = None,
              temperature: float = 0.0, weights_dtype: str | None = None, k_fixed: int | None = None,
              draft_weights_dtype: str | None = None, batches: Sequence[int] | None = None,
              workload: str | None = None, methods: Sequence[str] | None = None,
              adaptive: Adaptive | None = None) -> Recommendation:
    """Rank candidate drafts x KV dtype on `machine` and pick one, or none.

    Args:
        target, target_ref: the target spec and what the user typed (for launch commands).
        machine: catalog/detected machine; layout: tp/pp split (default: engine's).
        candidates: drafting methods to consider (default: catalog models sharing the target's tokenizer).
        costs_for: callable (method, Settings) -> Costs (e.g. from a profile); default roofline.
        given_acceptance: --acceptance; measured_acceptance: method label (draft id) -> probe-measured acceptance.
        k_max: largest K considered; kv_dtypes: KV types to try (default: the engine's kv_options).
        weights_dtype: re-size both models' weights (int4, q4_k, fp8, ...), as `planner memory` (a method's own
            weights_dtype, --draft-weights-dtype, wins for its model).
        k_fixed: judge every plan at this K (the one you deploy) instead of the best K.
        batches: concurrencies to price every usable plan at (a `--batch` list; roofline costs only).
        workload: chat | code | reasoning, for the acceptance priors of n-gram lookup (and others).
        methods: drafting kinds to consider (default: every kind; with `candidates`, only those drafts).
        adaptive: confidence-stopped drafting (llama.cpp --draft-p-min): K is then the most a round drafts.

    Raises:
        MachineError: roofline needed but the machine has no bandwidth figure.
        UsageError: a layout the machine cannot hold.
    """
    if adaptive is not None and (adaptive.p_min > 0 or adaptive.n_min > 0) and not engine.confidence_stop:
        raise UsageError(f"Cannot model --draft-p-min on {engine.name}: it drafts K tokens every round (only "
                         f"llama.cpp stops drafting below a confidence). Drop --draft-p-min or use --engine llama.cpp.")
    layout = layout or fit.default_layout(machine.n_devices, engine)
    base_s = Settings(context=context, batch=batch, engine=engine.name, spec_tokens=0, weights_dtype=weights_dtype)
    base = fit.evaluate(fit.Problem(target, machine, base_s, layout, utilization=utilization), context, batch)
    base_headroom = min(d.headroom_bytes for d in base)
    family, how = tokenizer_family(target)
    notes = []
    wants_draft = not methods or DRAFT_MODEL in methods  # mtp / ngram alone look for no draft model
    if candidates is not None:
        cands = list(candidates)
    elif target.source == "gguf":
        # catalog drafts are Hugging Face checkpoints: llama-server -md needs a GGUF file
        cands = []
        if wants_draft:
                notes.append(f"a GGUF target takes GGUF drafts: pass --draft d.gguf or --candidates a.gguf,b.gguf "
                         f"(catalog drafts are Hugging Face checkpoints; tokenizer family {family or '?'}: {how})")
    else:
        cands = catalog_candidates(target, family, draft_weights_dtype)
        if not cands and wants_draft:
            notes.append(f"no catalog draft shares this target's tokenizer ({how}); pass --draft or --candidates")
    if candidates is None or methods:  # heads, MTP, n-gram, early exit: no checkpoint from the user
        own, left = self_drafting(target, engine, workload=workload, kinds=methods)
        cands = [c for c in cands if not methods or c.kind in methods] + own
        notes += left
    launch_in = engines.LaunchInput(target=target_ref, draft=None, k=1, context=context, tp=layout.tp, pp=layout.pp,
                                    temperature=temperature, batch=batch, weights_quant=weights_dtype,
                                    gpu_memory_utilization=utilization,
                                    kv_dtype=_kv_flag(kv_dtypes[0]) if kv_dtypes and len(kv_dtypes) == 1 else None)
    roofline_costs_used = costs_for is None
    if roofline_costs_used and target.moe is not None and engine.moe_baseline_caveat:
        notes.append(engine.moe_baseline_caveat)
    if roofline_costs_used and machine.kind not in engine.verify_backend:
        # no published small-batch kernel curve: say so rather than price verification as silently flat
        notes.append(f"{engine.name} has no verify-kernel curve for {machine.kind} machines (Engine.verify_backend): "
                     f"verifying K+1 tokens is priced by the roofline alone, near flat at small K, so the "
                     f"speed-up is low confidence")
    if roofline_costs_used and layout.tp > 1:
        notes.append(allreduce_note(target, machine, layout.tp))
    if costs_for is None:
        roof = roofline_machine(machine, layout, engine)
        curves: dict[tuple, tuple[roofline.ForwardCost, ...]] = {}  # the target's depend on the KV type only

        ends = measured_ends(machine, layout, engine)

        def at(r: roofline.Roof, method: DraftingMethod, s: Settings) -> Costs:
            key = (id(r), s.kv_dtype, s.context, s.batch)
            if key not in curves:
                curves[key] = roofline.verify_costs(target, r, context=s.context, n_max=k_max + 1, settings=s)
            costs = roofline_verify(curves[key], method.step_s(r, s), roof.name, s, getattr(r, "share_kind", None))
            return draft_catchup.priced(costs, method, r, s)

        def costs_for(method: DraftingMethod, s: Settings) -> Costs:
            return spread_costs(at(roof, method, s), ends, lambda r: at(r, method, s))
    options = []
    for method in conditioned(cands, temperature=temperature, workload=workload,
                              rule=engine.sampled_acceptance):
        compat = hybrid.restrict(method.compatibility(target, engine, context=context), target, method.kind, engine)
        alpha = acceptance_for(target, method, given=given_acceptance,
                               measured=(measured_acceptance or {}).get(method.label), tli=compat.tli_alpha)
        for kv in kv_dtypes or engine.kv_options:
            s = Settings(context=context, batch=batch, engine=engine.name, kv_dtype=None if kv == "auto" else kv,
                         weights_dtype=weights_dtype,
                         spec_tokens=k_max)
            problem = fit.Problem(target, machine, s, layout, draft=method.resident_model(),
                                  draft_settings=method.settings_for(s), utilization=utilization)
            costs = hybrid.priced(costs_for(method, s), target, method.kind, s, alpha.alpha, machine.kind,
                                  machine.bandwidth_bytes_per_s)
            options.append(evaluate_option(problem, method, compat, costs, alpha, k_max, kv,
                                           launch_in, engine, k_fixed=k_fixed, adaptive=adaptive))
    if batches and len(set(batches)) > 1:
        if roofline_costs_used:
            options = [under_load(o, batches, k_max, k_fixed, hybrid.costs_for(costs_for, target, machine, o.acceptance))
                       if o.usable and o.acceptance is not None else o for o in options]  # every priced option has one
        else:
            notes.append("--batch list: measured costs are for one sequence; the per-batch curve needs the roofline")
    ranked = rank(options)
    choice = _choose(ranked, base_headroom >= 0, launch_in, engine)
    return Recommendation(target=target.id, target_ref=target_ref, machine=machine.name, engine=engine.name,
                          context=context, batch=batch, baseline_fits=base_headroom >= 0,
                          baseline_headroom_bytes=base_headroom, plans=tuple(ranked), choice=choice,
                          tokenizer_family=family, tokenizer_match=how, notes=tuple(notes))


def under_load(o: Option, batches: Sequence[int], k_max: int, k_fixed: int | None, costs_for: Any) -> Option:
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


ACCEPTANCE_MAX_K = 32  # the --max-k bound (commands/_options.py MaxKOpt)


def parse_acceptance(text: str) -> acc.Acceptance:
    """--acceptance: `0.7` (alpha), `0.6-0.8` (interval), or `CONVENTION=VALUE[@K]`
    (greedy_match=0.8, accepted_per_drafted=0.72@5, tau=2.8@4).

    Raises:
        UsageError: unparseable text.
    """
    t = text.strip()
    convention, k = acc.ALPHA, None
    if "=" in t:
        convention, t = (x.strip() for x in t.split("=", 1))
    if "@" in t:
        t, ks = t.split("@", 1)
        try:
            k = int(ks)
        except ValueError as e:
            raise UsageError(f"Cannot use --acceptance '{text}': K after '@' must be an integer.") from e
        if not 1 <= k <= ACCEPTANCE_MAX_K:  # a rate measured at K drafted tokens: K is a count, as --max-k
            raise UsageError(f"Cannot use --acceptance '{text}': K after '@' must be 1 to {ACCEPTANCE_MAX_K} "
                             f"(the tokens drafted per round when it was measured; got {k}).")
    try:
        if "-" in t[1:]:
            lo_s, hi_s = t.split("-", 1)
            lo, hi = float(lo_s), float(hi_s)
        else:
            lo = hi = float(t)
    except ValueError as e:
        raise UsageError(f"Cannot use --acceptance '{text}': expected 0.7, 0.6-0.8 or CONVENTION=VALUE[@K] "
                         f"(conventions: {', '.join(acc.CONVENTIONS)}).") from e
    return acc.acceptance((lo + hi) / 2, convention, k=k, low=lo, high=hi, source="given (--acceptance)")


def profile_acceptance_source(a: Any, origin: str | None) -> str:
    """Where a profile's acceptance came from, naming the file: `planner probe` (teacher-forced) or a live
    server (`planner bench --endpoint`, whose MeasuredAcceptance.source says which)."""
    how = a.source if a.source and a.source != "measured" else f"measured by probe ({a.prompts} prompts)"
    return f"profile '{origin}': {how}" if origin else how


def profile_costs(profile: Any, target: ModelSpec, roof: roofline.Roof | None, origin: str | None = None) -> Any:
    """Costs from a probe profile: measured t_v(n) and overhead; t_d measured for the profiled draft,
    else the roofline t_d calibrated by measured / roofline t_v(1) (labelled). `origin`: the profile's
    path, named in the source when given."""
    verify = tuple(profile.target.verify_s)
    named = f" from '{origin}'" if origin else ""

    def costs(method: DraftingMethod, s: Settings) -> Costs:
        if profile.draft is not None and profile.draft.id == method.label:
            return Costs(verify, profile.draft.step_s, profile.overhead_s, f"profile (measured){named}")
        if roof is None:
            raise MachineError(f"Cannot cost draft '{method.label}': the profile measured "
                               f"'{getattr(profile.draft, 'id', None)}' and the machine has no bandwidth figure to "
                               f"scale from. Probe this draft.")
        scale = verify[0] / roofline.forward_cost(target, roof, n=1, context=s.context, settings=s).seconds
        t_d = method.step_s(roof, s) * scale
        return Costs(verify, t_d, profile.overhead_s,
                     f"profile (measured target){named}; draft step roofline x {scale:.2f} calibration")
    return costs
