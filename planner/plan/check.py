"""The CI gate: every deployment of a policy, on every machine, against every requirement.

Why a pure module: `planner check` (exit 0/1 for CI) and `planner report` (the requirement
results per machine) judge a deployment the same way: resolve it (plan/scenario.py), assess
it (plan/assess.py), then apply the rules here to that one `Assessment`. The rules are pure;
nothing here prints or formats units (commands/check.py and render/ do).

One deployment on one machine gives one `Result` per requirement (docs/check.md):
  fits              headroom on the tightest device >= 0       (value: headroom bytes)
  min_headroom      headroom >= require.min_headroom           (value: headroom bytes)
  max_total_memory  sum of used bytes over the devices <= bound (value: total bytes)
  compatible        the engine runs the plain draft algorithm; a heterogeneous-vocabulary
                    fallback (vLLM use_heterogeneous_vocab, transformers assistant_tokenizer)
                    passes only with compatible = "allow_fallback" and is named either way
  min_speedup       predicted speed-up at the deployment's K (else the best K up to max_k) and at
                    its `batch` (concurrent sequences), from its profile (else the machine's
                    roofline), with acceptance from the profile's measurement > the policy's
                    `acceptance` > catalog priors
  max_crossover_below  speculation still pays at the stated peak concurrency N: the roofline plan at
                    1, 2, 4, ... N sequences fits and has no crossover <= N (value: the crossover, or
                    the first concurrency that does not fit, or null)
A requirement that cannot apply (no draft: compatible, min_speedup) is a skipped result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core import pool
from ..core.errors import ConfigError, MachineError, PlannerError
from ..core.fmt import fmt_bytes
from ..core.spec import ModelSpec
from ..engines.base import EXACT
from . import load
from .assess import Assessment, assess, load_curve
from .policy import Policy
from .scenario import Scenario, machines_for, scenarios

FITS, MIN_HEADROOM, MAX_TOTAL, COMPATIBLE, MIN_SPEEDUP, MAX_CROSSOVER = (
    "fits", "min_headroom", "max_total_memory", "compatible", "min_speedup", "max_crossover_below")
REQUIREMENTS = (FITS, MIN_HEADROOM, MAX_TOTAL, COMPATIBLE, MIN_SPEEDUP, MAX_CROSSOVER)
PASS, FAIL, SKIP = "pass", "fail", "skip"


@dataclass(frozen=True)
class Result:
    """One deployment x machine x requirement: pass / fail / skip, the value, the bound, why."""

    deployment: str
    machine: str
    requirement: str
    status: str
    value: float | int | bool | str | None  # str: compatible's "fallback" (bound "allow_fallback")
    bound: float | int | bool | str | None
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

    # every branch reading them checks layout_error first: a placed layout has devices, so both figures
    head, total = (0, 0) if a.layout_error else _placed(a)
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
        if a.layout_error:
            add(MAX_TOTAL, FAIL, None, req.max_total_bytes, a.layout_error)
        else:
            ok = total <= req.max_total_bytes
            add(MAX_TOTAL, PASS if ok else FAIL, total, req.max_total_bytes,
                f"{_gib(total)} used over {len(a.devices)} device(s) {'<=' if ok else '>'} "
                f"{_gib(req.max_total_bytes)} allowed")
    out = _estimates(a, out)
    if req.compatible:
        out.append(_compatible(a))
    if req.min_speedup is not None:
        out.append(_speedup(a, req.min_speedup))
    if req.max_crossover_below is not None:
        out.append(_crossover(a, req.max_crossover_below))
    return out


def _placed(a: Assessment) -> tuple[int, int]:
    """(headroom, total bytes) of a layout that was placed (no layout_error: the fit returned its devices)."""
    head, total = a.headroom_bytes, a.total_bytes
    if head is None or total is None:
        raise PlannerError(f"Cannot check '{a.scenario.label}': the layout was placed on no device.")
    return head, total


def _crossover(a: Assessment, peak: int) -> Result:
    """require.max_crossover_below = `peak`."""
    sc = a.scenario
    d = sc.deployment
    if sc.method is None:
        return Result(d.name, sc.label, MAX_CROSSOVER, SKIP, None, peak, "no draft: nothing to stop paying")
    try:
        curve = load_curve(sc, peak)
    except MachineError as e:
        raise ConfigError(f"Cannot check deployment '{d.name}' of '{sc.origin}' (require.max_crossover_below) "
                          f"on '{sc.label}': {e}.", sc.origin, key="require.max_crossover_below") from e
    cross = load.crossover_batch(curve)
    shown = ", ".join(f"B={p.batch} {p.speedup:.2f}x (K={p.k}{'' if p.fits else ', does not fit'})" for p in curve)
    full = next((p.batch for p in curve if not p.fits), None)
    if full is not None and (cross is None or full < cross):  # a speed-up where it cannot run proves nothing
        return Result(d.name, sc.label, MAX_CROSSOVER, FAIL, full, peak,
                      f"the deployment does not fit at {full} concurrent sequence{'s' if full != 1 else ''} "
                      f"(<= the peak {peak}), so speculation cannot pay there: {shown}")
    if cross is None:
        return Result(d.name, sc.label, MAX_CROSSOVER, PASS, None, peak,
                      f"speculation pays at every concurrency up to {peak}: {shown}")
    return Result(d.name, sc.label, MAX_CROSSOVER, FAIL, cross, peak,
                  f"speculation stops paying at {cross} concurrent sequences (<= the peak {peak}): {shown}")


_MEMORY = (FITS, MIN_HEADROOM, MAX_TOTAL)


def _estimates(a: Assessment, results: list[Result]) -> list[Result]:
    """A passing memory requirement that rests on a low-confidence figure (sources/confidence.py: unknown
    layout, unread structural keys, towers not sized) fails unless the deployment sets allow_estimates."""
    sc = a.scenario
    low = [s for s in (sc.target, sc.draft) if s is not None and s.confidence == "low"]
    if not low or sc.deployment.allow_estimates:
        return results
    why = "; ".join(f"{s.id}: {s.assumptions[0] if s.assumptions else 'low confidence'}" for s in low)
    return [Result(r.deployment, r.machine, r.requirement, FAIL, r.value, r.bound,
                   f"{r.message}, but the figure is an estimate ({why}); set allow_estimates = true in the "
                   f"deployment to accept it")
            if r.requirement in _MEMORY and r.status == PASS else r for r in results]


def _compatible(a: Assessment) -> Result:
    sc = a.scenario
    d, engine = sc.deployment, sc.settings.engine
    v = a.verdict
    if v is None or sc.method is None:  # a verdict exists only for a draft
        return Result(d.name, sc.label, COMPATIBLE, SKIP, None, True, "no draft: nothing to pair")
    conf = f" (confidence: {v.confidence})" if v.confidence != EXACT else ""
    if v.compatible:
        return Result(d.name, sc.label, COMPATIBLE, PASS, True, True,
                      f"{engine} runs {_algorithm(sc.method.kind)} with {sc.method.label}{conf}")
    fb = a.fallback
    refused = f"{engine} refuses {_algorithm(sc.method.kind, 'the plain algorithm')}: {v.failed_rule} ({v.detail})"
    if fb and d.require.allow_fallback:
        return Result(d.name, sc.label, COMPATIBLE, PASS, "fallback", "allow_fallback",
                      f"{refused}; runs with {fb} (allowed by compatible = \"allow_fallback\"){conf}")
    if fb:
        return Result(d.name, sc.label, COMPATIBLE, FAIL, False, True,
                      f"{refused}; {fb} would run it: set require.compatible = \"allow_fallback\" to accept{conf}")
    return Result(d.name, sc.label, COMPATIBLE, FAIL, False, True, f"{refused}; no fallback in {engine}{conf}")


def _speedup(a: Assessment, bound: float) -> Result:
    """require.min_speedup = `bound`."""
    sc = a.scenario
    d = sc.deployment
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

def _assess(piece: tuple[Scenario, bool]) -> Assessment:
    """One scenario's assessment (a --jobs worker runs this; module level, so the pool can pickle it)."""
    sc, need_speed = piece
    return assess(sc, need_speed=need_speed)


def check(policy: Policy, *, machines: Sequence[str] = (), deployments: Sequence[str] = (), jobs: int = 1,
          progress: Callable[[int, int, tuple[Scenario, bool]], None] | None = None) -> CheckReport:
    """Judge every deployment (or the named ones) on its machines (or on `machines`).

    Args:
        policy: from policy.load_policy.
        machines: --machine names; replace every deployment's machine description.
        deployments: only these deployment names (default: all).
        jobs: worker processes for the assessments (core/pool.py; the results are the serial run's);
            `progress(done, total, piece)` hears of each.

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
    pieces = ((sc, d.require.min_speedup is not None) for d in policy.deployments
              if not deployments or d.name in deployments
              for sc in scenarios(d, machines_for(d, machines, origin=policy.path), base=base, cache=cache,
                                  origin=policy.path))
    # serial: each scenario resolved then assessed in turn (the first failure, whichever step, is the one
    # raised); with jobs, every scenario is resolved first, in order, then the assessments run in the pool
    assessments = [_assess(p) for p in pieces] if jobs <= 1 else pool.map_in_order(_assess, list(pieces), jobs,
                                                                                      progress)
    results = [r for a in assessments for r in judge(a)]
    return CheckReport(policy=policy.path, assessments=tuple(assessments), results=tuple(results))


def _algorithm(kind: str, plain: str = "the plain draft algorithm") -> str:
    """How results name the method: a draft model's keeps its wording ('the plain (draft) algorithm')."""
    return plain if kind == "draft_model" else f"{kind} drafting"
