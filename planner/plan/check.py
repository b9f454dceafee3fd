"""The CI gate: every deployment of a policy, on every machine, against every requirement.

Why a pure module: `planner check` (exit 0/1 for CI) and `planner report` (the fit report
per machine) judge a deployment the same way, so both read one `Assessment` built here
from the existing composers: fit.evaluate for memory, pairing.pair for the engine verdict,
plan.roofline_costs / plan.profile_costs + plan.acceptance_for + speed.predict for speed.
Nothing here prints or formats units (commands/check.py and report_html.py do).

One deployment on one machine gives one `Result` per requirement (docs/check.md):
  fits              headroom on the tightest device >= 0       (value: headroom bytes)
  min_headroom      headroom >= require.min_headroom           (value: headroom bytes)
  max_total_memory  sum of used bytes over the devices <= bound (value: total bytes)
  compatible        the engine runs the plain draft algorithm; a heterogeneous-vocabulary
                    fallback (vLLM use_heterogeneous_vocab, transformers assistant_tokenizer)
                    passes only with compatible = "allow_fallback" and is named either way
  min_speedup       predicted speed-up at the deployment's K (else the best K up to max_k),
                    from its profile (else the machine's roofline), with acceptance from the
                    profile's measurement > the policy's `acceptance` > catalog priors
A requirement that cannot apply (no draft: compatible, min_speedup) is a skipped result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..core.errors import ConfigError, MachineError, PlannerError, UsageError
from ..core.fmt import fmt_bytes
from ..core.spec import ModelSpec
from ..drafting import Compatibility, DraftingMethod, DraftModel
from ..engines.base import EXACT, Verdict
from ..fits import fit
from ..fits.machine import Machine, custom_gpu, with_overrides
from ..fits.machine_lookup import get_machine
from ..fits.memory import Settings
from ..pairing import pair as pairing
from ..speed import acceptance as acc
from ..speed import model as speed
from . import recommend as plan
from .policy import Deployment, Policy

FITS, MIN_HEADROOM, MAX_TOTAL, COMPATIBLE, MIN_SPEEDUP = (
    "fits", "min_headroom", "max_total_memory", "compatible", "min_speedup")
REQUIREMENTS = (FITS, MIN_HEADROOM, MAX_TOTAL, COMPATIBLE, MIN_SPEEDUP)
PASS, FAIL, SKIP = "pass", "fail", "skip"


@dataclass(frozen=True)
class Scenario:
    """One deployment resolved on one machine: specs loaded, settings and layout fixed."""

    deployment: Deployment
    machine: Machine
    label: str  # the machine's name in results (catalog slug, file name, or "1x-gpu-24gib")
    target: ModelSpec
    target_ref: str
    method: DraftingMethod | None  # how tokens are drafted (None: plain decoding)
    settings: Settings  # spec_tokens = K (or max_k) when drafting: the verify rows the ledger holds
    layout: fit.Layout
    given_acceptance: acc.Acceptance | None
    profile: object | None  # profile.Profile (read lazily: planner.speed.profile is only read here)
    profile_path: str | None
    origin: str = "policy"  # the policy file (or "command line"), for messages

    @property
    def draft(self) -> ModelSpec | None:
        """The model the method keeps resident beside the target (what fit splits over devices)."""
        return self.method.resident_model() if self.method is not None else None

    @property
    def draft_ref(self) -> str | None:
        return self.method.ref if self.method is not None else None


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


@dataclass(frozen=True)
class Result:
    """One deployment x machine x requirement: pass / fail / skip, the value, the bound, why."""

    deployment: str
    machine: str
    requirement: str
    status: str
    value: float | int | bool | None
    bound: float | int | bool | None
    message: str


@dataclass(frozen=True)
class CheckReport:
    policy: str
    assessments: tuple[Assessment, ...]
    results: tuple[Result, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return all(r.status != FAIL for r in self.results)

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.results)


# --- resolving a deployment ----------------------------------------------------------------

def machine_label(m: Machine) -> str:
    """Name used in results: the catalog slug, or `<n>x-gpu-<GiB>gib` for a gpu_memory description."""
    if m.origin == "custom":
        return f"{m.n_devices}x-gpu-{m.memory_bytes / 2**30:g}gib"
    return m.name


def machines_for(d: Deployment, override: Sequence[str] = (), *, origin: str = "policy") -> list[Machine]:
    """The machines to judge `d` on: `override` (the CLI's --machine) replaces the deployment's
    machine description whole; else its machine(s), with gpu_memory / gpus applied to each, or a
    GPU box described by gpu_memory x gpus alone.

    Raises:
        ConfigError: an unknown machine name or a bad machine file (names the deployment).
    """
    names = tuple(override) or d.machines
    try:
        if not names:
            if d.gpu_memory_bytes is None:
                raise MachineError("no machine, machines or gpu_memory is given")
            return [custom_gpu(d.gpu_memory_bytes, d.gpus or 1)]
        out = []
        for n in names:
            m = get_machine(n)
            if not override and (d.gpu_memory_bytes is not None or d.gpus is not None):
                m = with_overrides(m, memory_bytes=d.gpu_memory_bytes, n_devices=d.gpus)
            out.append(m)
        return out
    except MachineError as e:
        key = "--machine" if override else "machine"
        raise ConfigError(f"Cannot check deployment '{d.name}' of '{origin}' ({key}): {e}", origin, key=key) from e


def _ref(ref: str, base: Path) -> str:
    """A relative model path is read next to the policy file when it exists there."""
    p = Path(ref).expanduser()
    if not p.is_absolute() and (base / p).exists():
        return str(base / p)
    return ref


def _load(ref: str, d: Deployment, key: str, cache: dict[str, ModelSpec], origin: str) -> ModelSpec:
    from ..sources import load_spec

    if ref not in cache:
        try:
            cache[ref] = load_spec(ref)
        except PlannerError as e:
            raise ConfigError(f"Cannot check deployment '{d.name}' of '{origin}' ({key} '{ref}'): {e}", origin,
                              key=key) from e
    return cache[ref]


def given_acceptance(d: Deployment, origin: str) -> acc.Acceptance | None:
    """The policy's `acceptance` (alpha, or the --acceptance text forms) as an Acceptance."""
    if d.acceptance is None:
        return None
    text = d.acceptance if isinstance(d.acceptance, str) else repr(float(d.acceptance))
    a = plan.parse_acceptance(text)
    return replace(a, source=f"given ({origin} acceptance)")


def scenarios(d: Deployment, machines: Sequence[Machine], *, base: str | Path = ".",
              cache: dict[str, ModelSpec] | None = None, origin: str = "policy") -> list[Scenario]:
    """Resolve `d` on each machine: load target and draft (paths relative to `base`), the profile
    for that machine, and the settings/layout the engine would use.

    Raises:
        ConfigError: a model or profile that cannot be read (names the deployment and key).
    """
    from ..speed.profile import load_profile

    cache = {} if cache is None else cache
    base = Path(base)
    t_ref = _ref(d.target, base)
    target = _load(t_ref, d, "target", cache, origin)
    d_ref = _ref(d.draft, base) if d.draft else None
    method = DraftModel(_load(d_ref, d, "draft", cache, origin), d_ref) if d_ref else None
    k_rows = (d.k or d.max_k) if method is not None else 0
    s = Settings(context=d.context, batch=d.batch, engine=d.engine, kv_dtype=d.kv_dtype,
                 weights_dtype=d.weights_dtype, spec_tokens=k_rows)
    given = given_acceptance(d, Path(origin).name)
    out = []
    for m in machines:
        label = machine_label(m)
        path = d.profile_for(label)
        prof = None
        if path is not None:
            try:
                prof = load_profile(path)
            except PlannerError as e:
                raise ConfigError(f"Cannot check deployment '{d.name}' of '{origin}' (profile): {e}", path,
                                  key="profile") from e
        layout = fit.default_layout(m.n_devices, d.engine, d.tp, d.pp)
        out.append(Scenario(deployment=d, machine=m, label=label, target=target, target_ref=t_ref, method=method,
                            settings=s, layout=layout, given_acceptance=given, profile=prof,
                            profile_path=path, origin=origin))
    return out


# --- judging one scenario ------------------------------------------------------------------

def measured_acceptance(profile: object | None, method: DraftingMethod) -> acc.Acceptance | None:
    """A probe's measured alpha (+/- 2 std over prompts) when it measured this very draft."""
    a = getattr(profile, "acceptance", None)
    pd = getattr(profile, "draft", None)
    if a is None or pd is None or pd.id != method.label:
        return None
    lo, hi = max(0.0, a.alpha - 2 * a.alpha_std), min(1.0, a.alpha + 2 * a.alpha_std)
    return acc.Acceptance(a.alpha, lo, hi, given=f"alpha = {a.alpha:.3f} (measured)",
                          source=f"measured by probe ({a.prompts} prompts)")


def costs_for(sc: Scenario) -> tuple[Callable[[DraftingMethod, Settings], plan.Costs], int]:
    """(drafting method, settings) -> Costs for this scenario, and the largest K the costs cover.

    Profile when the deployment names one for this machine (t_v measured; t_d measured for the
    profiled draft, else roofline-scaled), else the machine's roofline.

    Raises:
        MachineError: no profile and the machine has no bandwidth figure.
    """
    d, m = sc.deployment, sc.machine
    k_max = d.k or d.max_k
    roof = plan.roofline_machine(m, sc.layout) if m.bandwidth_bytes_per_s else None
    if sc.profile is not None:
        return plan.profile_costs(sc.profile, sc.target, roof), min(k_max, sc.profile.max_k)
    if roof is None:
        raise MachineError(f"no speed figure for '{sc.label}': the machine has no memory-bandwidth figure and the "
                           f"deployment names no profile. Set profile = \"probe.json\" (from 'planner probe') or "
                           f"machine = <catalog name>")

    def roofline(method: DraftingMethod, s: Settings) -> plan.Costs:
        return plan.roofline_costs(sc.target, method, roof, s, k_max)
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
    alpha = plan.acceptance_for(sc.target, sc.method, given=sc.given_acceptance,
                                measured=measured_acceptance(sc.profile, sc.method), tli=compat.tli_alpha)
    if d.k is not None and d.k > len(costs.verify_s) - 1:
        raise UsageError(f"Cannot judge deployment '{d.name}' at k = {d.k} on '{sc.label}': its costs cover "
                         f"K <= {len(costs.verify_s) - 1} (expected k within the profile). Probe with a larger "
                         f"--max-k or lower k.")
    pred = speed.predict(costs.verify_s, costs.draft_s, alpha, costs.overhead_s, k_max=max(k_top, d.k or 1))
    k = d.k or pred.k_best
    args = (costs.verify_s, costs.draft_s)
    s_mid, s_low, s_high = (speed.speedup(k, *args, a, costs.overhead_s) for a in (alpha.alpha, alpha.low, alpha.high))
    notes = []
    prof = sc.profile
    if prof is not None and prof.context != sc.settings.context:
        notes.append(f"profile measured at context {prof.context}, deployment runs {sc.settings.context}")
    if prof is not None and prof.target.id != sc.target.id:
        notes.append(f"profile measured '{prof.target.id}', not '{sc.target.id}'")
    return Speed(costs=costs, acceptance=alpha, prediction=pred, k=k, fixed_k=d.k is not None, speedup=s_mid,
                 speedup_low=s_low, speedup_high=s_high, notes=tuple(notes))


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
        compat = sc.method.compatibility(sc.target, sc.settings.engine, context=sc.settings.context)
    sp, speed_error = None, None
    if need_speed and compat is not None:
        try:
            sp = assess_speed(sc, compat)
        except MachineError as e:
            speed_error = str(e)
    return Assessment(scenario=sc, devices=devices, layout_error=layout_error, compat=compat, speed=sp,
                      speed_error=speed_error)


# --- requirements ----------------------------------------------------------------------------

def _gib(n: int | None) -> str:
    return fmt_bytes(n)


def _memory_text(a: Assessment) -> str:
    tight = min(a.devices, key=lambda dv: dv.headroom_bytes)
    b = tight.budget
    return (f"device {b.index} ({b.name}) uses {_gib(tight.used_bytes)} of a {_gib(b.budget_bytes)} budget "
            f"({a.scenario.settings.engine}, context {a.scenario.settings.context:,} x {a.scenario.settings.batch})")


def judge(a: Assessment) -> list[Result]:
    """The results of every requirement the deployment sets, in REQUIREMENTS order.

    Raises:
        ConfigError: min_speedup is required but no speed can be predicted (no profile, no bandwidth).
    """
    sc = a.scenario
    d, req = sc.deployment, sc.deployment.require
    out: list[Result] = []

    def add(requirement: str, status: str, value, bound, message: str) -> None:
        out.append(Result(d.name, sc.label, requirement, status, value, bound, message))

    head = a.headroom_bytes
    if req.fits:
        if a.layout_error:
            add(FITS, FAIL, None, 0, a.layout_error)
        else:
            word = "headroom" if head >= 0 else "over budget by"
            add(FITS, PASS if head >= 0 else FAIL, head, 0, f"{word} {_gib(abs(head))}: {_memory_text(a)}")
    if req.min_headroom_bytes:
        if a.layout_error:
            add(MIN_HEADROOM, FAIL, None, req.min_headroom_bytes, a.layout_error)
        else:
            ok = head >= req.min_headroom_bytes
            add(MIN_HEADROOM, PASS if ok else FAIL, head, req.min_headroom_bytes,
                f"headroom {_gib(head)} {'>=' if ok else '<'} {_gib(req.min_headroom_bytes)} required")
    if req.max_total_bytes is not None:
        total = a.total_bytes
        if a.layout_error:
            add(MAX_TOTAL, FAIL, None, req.max_total_bytes, a.layout_error)
        else:
            ok = total <= req.max_total_bytes
            add(MAX_TOTAL, PASS if ok else FAIL, total, req.max_total_bytes,
                f"{_gib(total)} used over {len(a.devices)} device(s) {'<=' if ok else '>'} "
                f"{_gib(req.max_total_bytes)} allowed")
    if req.compatible:
        out.append(_compatible(a))
    if req.min_speedup is not None:
        out.append(_speedup(a))
    return out


def _compatible(a: Assessment) -> Result:
    sc = a.scenario
    d, engine = sc.deployment, sc.settings.engine
    v = a.verdict
    if v is None:
        return Result(d.name, sc.label, COMPATIBLE, SKIP, None, True, "no draft: nothing to pair")
    conf = f" (confidence: {v.confidence})" if v.confidence != EXACT else ""
    if v.compatible:
        return Result(d.name, sc.label, COMPATIBLE, PASS, True, True,
                      f"{engine} runs the plain draft algorithm with {sc.method.label}{conf}")
    fb = a.fallback
    refused = f"{engine} refuses the plain algorithm: {v.failed_rule} ({v.detail})"
    if fb and d.require.allow_fallback:
        return Result(d.name, sc.label, COMPATIBLE, PASS, "fallback", "allow_fallback",
                      f"{refused}; runs with {fb} (allowed by compatible = \"allow_fallback\"){conf}")
    if fb:
        return Result(d.name, sc.label, COMPATIBLE, FAIL, False, True,
                      f"{refused}; {fb} would run it: set require.compatible = \"allow_fallback\" to accept{conf}")
    return Result(d.name, sc.label, COMPATIBLE, FAIL, False, True, f"{refused}; no fallback in {engine}{conf}")


def _speedup(a: Assessment) -> Result:
    sc = a.scenario
    d = sc.deployment
    bound = d.require.min_speedup
    if sc.method is None:
        return Result(d.name, sc.label, MIN_SPEEDUP, SKIP, None, bound, "no draft: plain decoding has speed-up 1.0")
    sp = a.speed
    if sp is None:
        raise ConfigError(f"Cannot check deployment '{d.name}' of '{sc.origin}' (require.min_speedup) on "
                          f"'{sc.label}': {a.speed_error or 'no speed prediction'}.", sc.origin,
                          key="require.min_speedup")
    pessimistic = d.require.speedup_estimate == "pessimistic"
    value = sp.speedup_low if pessimistic else sp.speedup
    ok = value >= bound
    which = "pessimistic (low-acceptance) " if pessimistic else ""
    kk = f"K={sp.k}" + (" (policy k)" if sp.fixed_k else " (best)")
    be = sp.prediction.break_even_alpha
    msg = (f"{which}{value:.2f}x {'>=' if ok else '<'} {bound:g}x at {kk}; interval {sp.speedup_low:.2f}-"
           f"{sp.speedup_high:.2f}x; alpha {sp.acceptance.alpha:.2f} ({sp.acceptance.source}); "
           f"break-even alpha {'none' if be is None else f'{be:.2f}'}; costs {sp.costs.source}")
    extra = [*sp.notes]
    if a.verdict is not None and not a.verdict.compatible and not a.fallback:
        extra.append(f"{sc.settings.engine} cannot run this pair (see compatible)")
    if extra:
        msg += "; " + "; ".join(extra)
    return Result(d.name, sc.label, MIN_SPEEDUP, PASS if ok else FAIL, round(value, 4), bound, msg)


# --- the whole policy -----------------------------------------------------------------------

def check(policy: Policy, *, machines: Sequence[str] = (), deployments: Sequence[str] = ()) -> CheckReport:
    """Judge every deployment (or the named ones) on its machines (or on `machines`).

    Args:
        policy: from policy.load_policy.
        machines: --machine names; replace every deployment's machine description.
        deployments: only these deployment names (default: all).

    Returns:
        CheckReport with one Assessment per deployment x machine and the Results in order.

    Raises:
        ConfigError: an unknown deployment name, machine, model or profile, or min_speedup that
            cannot be predicted.

    Example:
        >>> from planner.plan.policy import parse_policy
        >>> pol = parse_policy({"deployment": [{"name": "a", "target": "llama-3.1-8b",
        ...                     "machine": "h100-sxm"}]}, "planner.toml")
        >>> check(pol).passed
        True
    """
    known = {d.name for d in policy.deployments}
    unknown = [n for n in deployments if n not in known]
    if unknown:
        raise ConfigError(f"Cannot check deployment '{unknown[0]}' of '{policy.path}': no such deployment "
                          f"(expected one of {', '.join(sorted(known))}).", policy.path, key="deployment")
    base = Path(policy.path).parent
    cache: dict[str, ModelSpec] = {}
    assessments, results = [], []
    for d in policy.deployments:
        if deployments and d.name not in deployments:
            continue
        for sc in scenarios(d, machines_for(d, machines, origin=policy.path), base=base, cache=cache,
                            origin=policy.path):
            a = assess(sc, need_speed=d.require.min_speedup is not None)
            assessments.append(a)
            results.extend(judge(a))
    return CheckReport(policy=policy.path, assessments=tuple(assessments), results=tuple(results))
