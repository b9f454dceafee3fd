"""Will speculation be faster? The pure speed model (docs/speed.md "The model").

Why a chain of small functions: every step of the argument is one closed form
that a test can check by hand (speed/rounds.py holds them), and `predict()` only composes them with the
acceptance interval, the verdict and the mechanism that makes speculation lose. Inputs are measured (or
roofline) costs and an acceptance rate; nothing here does I/O.

  t_round(K) = K * t_d + t_v(K+1) + t_o                     (one draft-verify round)
  E(K)       = (1 - a**(K+1)) / (1 - a)                      (tokens per round, bonus included)
  S(K)       = E(K) * t_v(1) / t_round(K)                    (speed-up over plain decoding)

`verify_s[n-1]` is t_v(n): one target forward of n new tokens of ONE sequence on a
KV prefix of the deployment context. Curves can be jagged or non-monotonic, so the
best K is searched over the measured vector; nothing assumes convexity.

Example:
    >>> p = predict([0.02] * 12, 0.001, 0.7)        # flat verify cost, t_d/t_v(1) = 0.05
    >>> p.k_best, round(p.speedup, 2), p.verdict
    (6, 2.35, 'faster')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..core.constants import DRAFT_RATIO_WARN, VERIFY_SLOPE_WARN
from ..core.errors import UsageError
from .rounds import (
    Alpha,
    alpha_for_expected,
    best_k,
    break_even_alpha,
    check_alpha,
    expected_accepted,
    mean_verify_slope,
    round_time_s,
    speedup,
    speedup_curve,
    verify_slope,
)


class PositionRates(Protocol):
    """How an acceptance falls by position (speed/position_decay.PositionDecay): rates a_1..a_K from the
    first position's, and the depth, factor and source a plan states."""

    @property
    def depth(self) -> int: ...
    @property
    def factor(self) -> float: ...
    @property
    def source(self) -> str: ...
    def rates(self, alpha: float, k: int) -> tuple[float, ...]: ...

FASTER, SLOWER, UNCERTAIN = "faster", "slower", "uncertain"


@dataclass(frozen=True)
class Acceptance:
    """An acceptance rate as alpha, with an interval and its provenance.

    `given` names the convention and raw value the alpha came from (e.g.
    "accepted_per_drafted = 0.721 at K=5"); `source` names where that number was
    published or measured, or says "assumed".
    """

    alpha: float
    low: float
    high: float
    given: str
    source: str
    # how the rate falls by position (MTP layers reused past their depth); alpha, low, high are then the
    # first position's rate and predict() prices each position with its own (speed/position_decay.py)
    decay: PositionRates | None = None

    def __post_init__(self) -> None:
        for name in ("alpha", "low", "high"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and 0.0 <= v <= 1.0):
                raise UsageError(f"Cannot use acceptance {name} = {v}: expected a number in [0, 1].")
        if not self.low <= self.alpha <= self.high:
            raise UsageError(f"Cannot use acceptance interval [{self.low}, {self.high}]: it must contain "
                             f"alpha = {self.alpha}.")


# --- verdict and mechanism ---------------------------------------------------------

def verdict(speedup_low: float, speedup_high: float) -> str:
    """faster: even the pessimistic end beats plain decoding; slower: even the optimistic end
    does not; uncertain: the interval straddles 1.0."""
    if speedup_low > 1.0:
        return FASTER
    if speedup_high <= 1.0:
        return SLOWER
    return UNCERTAIN


@dataclass(frozen=True)
class Counterfactuals:
    """Best speed-up over K if one mechanism were ideal, the others as measured.

    flat_verify: t_v(n) = t_v(1) for every n (perfectly batch-parallel verification);
    free_draft: t_d = 0; perfect_acceptance: alpha = 1; no_overhead: t_o = 0.
    """

    actual: float
    flat_verify: float
    free_draft: float
    perfect_acceptance: float
    no_overhead: float


def counterfactuals(verify_s: Sequence[float], draft_s: float, alpha: Alpha, overhead_s: float,
                    k_top: int) -> Counterfactuals:
    """Remove one mechanism at a time and re-optimise K (each K searched again, no shortcut)."""
    flat = [verify_s[0]] * len(verify_s)
    perfect: Alpha = 1.0 if isinstance(alpha, (int, float)) else [1.0] * len(alpha)
    return Counterfactuals(
        actual=max(speedup_curve(verify_s, draft_s, alpha, overhead_s, k_top)),
        flat_verify=max(speedup_curve(flat, draft_s, alpha, overhead_s, k_top)),
        free_draft=max(speedup_curve(verify_s, 0.0, alpha, overhead_s, k_top)),
        perfect_acceptance=max(speedup_curve(verify_s, draft_s, perfect, overhead_s, k_top)),
        no_overhead=max(speedup_curve(verify_s, draft_s, alpha, 0.0, k_top)),
    )


def slower_reasons(verify_s: Sequence[float], draft_s: float, alpha: Alpha, overhead_s: float,
                   k_top: int) -> tuple[str, ...]:
    """Name the mechanisms that keep speculation at or below 1.0, most severe first.

    Named when (each against its own ideal, the others as measured):
      verification  a flat verify cost would help, and would make it faster or the mean
                    slope is >= VERIFY_SLOPE_WARN;
      draft         a free draft would help, and would make it faster or t_d/t_v(1) >= DRAFT_RATIO_WARN;
      acceptance    alpha is below the break-even alpha of an ideal (flat) verifier with this
                    draft: no hardware could make this acceptance pay;
      overhead      dropping t_o would help, and would make it faster or t_o/t_v(1) >= DRAFT_RATIO_WARN.
    Severity is the measured figure over its warning threshold (alpha: break-even over alpha).
    If none qualifies, every mechanism that helps at all is named. Each reason quotes its ratios.
    """
    cf = counterfactuals(verify_s, draft_s, alpha, overhead_s, k_top)
    k = best_k(speedup_curve(verify_s, draft_s, alpha, overhead_s, k_top))
    t1, helps = verify_s[0], (lambda gain: gain > cf.actual * (1.0 + 1e-9))
    slope = mean_verify_slope(verify_s, k_top + 1)
    a_eff = alpha if isinstance(alpha, (int, float)) else alpha_for_expected(expected_accepted(alpha, k), k)
    be_flat, be_flat_k = break_even_alpha([t1] * len(verify_s), draft_s, overhead_s, k_top)
    be, be_k = break_even_alpha(verify_s, draft_s, overhead_s, k_top)
    be_text = f"break-even alpha is {be:.2f} at K={be_k}" if be is not None else "no alpha breaks even here"
    found = []  # (named, helps, severity, text)
    found.append((cf.flat_verify > 1.0 or slope >= VERIFY_SLOPE_WARN, helps(cf.flat_verify), slope / VERIFY_SLOPE_WARN,
                  f"verification not batch-parallel: t_v(n) grows ~linearly with n (t_v({k + 1})/t_v(1) = "
                  f"{verify_s[k] / t1:.2f} at K={k}; each extra verified token costs "
                  f"{verify_slope(verify_s, k + 1) if k else 0.0:.2f} of a one-token step there, 0 ideal, 1 serial); "
                  f"a flat verify cost would give {cf.flat_verify:.2f}x"))
    c = draft_s / t1
    found.append((cf.free_draft > 1.0 or c >= DRAFT_RATIO_WARN, helps(cf.free_draft), c / DRAFT_RATIO_WARN,
                  f"draft too slow: t_d/t_v(1) = {c:.2f} (K={k} drafts cost {k * c:.2f} target steps per round); "
                  f"a free draft would give {cf.free_draft:.2f}x"))
    low = be_flat is not None and a_eff < be_flat
    found.append((low, low, (be_flat or 0.0) / max(a_eff, 1e-12),
                  f"acceptance too low: {_alpha_text(alpha, k)} yields {expected_accepted(alpha, k):.2f} of {k + 1} "
                  f"possible tokens per round at K={k}; even a batch-parallel verifier needs alpha >= "
                  f"{be_flat or 0.0:.2f} (K={be_flat_k}) with this draft; {be_text}"))
    o = overhead_s / t1
    found.append((cf.no_overhead > 1.0 or o >= DRAFT_RATIO_WARN, helps(cf.no_overhead), o / DRAFT_RATIO_WARN,
                  f"per-round overhead too high: t_o/t_v(1) = {o:.2f}; without it the best K would give "
                  f"{cf.no_overhead:.2f}x"))
    chosen = [m for m in found if m[0] and m[1]] or [m for m in found if m[1]]
    return tuple(m[3] for m in sorted(chosen, key=lambda m: -m[2]))


def faster_reason(verify_s: Sequence[float], draft_s: float, alpha: Alpha, overhead_s: float, k: int) -> str:
    """One line saying where the gain comes from at the chosen K."""
    t1 = verify_s[0]
    return (f"K={k}: {expected_accepted(alpha, k):.2f} tokens per round for "
            f"{round_time_s(k, verify_s, draft_s, overhead_s) / t1:.2f} target steps of time "
            f"(t_v({k + 1})/t_v(1) = {verify_s[k] / t1:.2f}, t_d/t_v(1) = {draft_s / t1:.2f}, "
            f"{_alpha_text(alpha, k)})")


@dataclass(frozen=True)
class Costs:
    """What predict() needs besides acceptance: t_v(1..n), t_d, t_o, and where they came from
    (a probe profile, a roofline, or the bench's own measurement)."""

    verify_s: tuple[float, ...]
    draft_s: float
    overhead_s: float = 0.0
    source: str = "given"
    context: int | None = None
    # t_v(n) at the fast and slow end of what the backend's kernels are known to do (roofline costs on
    # published kernel curves, speed/kernels.py); None: verify_s is the only curve (measured, or flat)
    verify_low_s: tuple[float, ...] | None = None
    verify_high_s: tuple[float, ...] | None = None
    # t_o at the optimistic end (the engine's per-sequence speculation cost hidden); None: overhead_s only
    overhead_low_s: float | None = None
    # the same costs at the ends of the machine's measured spread (e.g. bandwidth q1 and q3): the plan's
    # interval takes them in (plan/recommend.py widen_by_machine); empty: the machine figures are exact
    machine_spread: tuple[Costs, ...] = ()
    machine_spread_source: str | None = None

    @property
    def verify_bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        if self.verify_low_s is None or self.verify_high_s is None:
            return None
        return self.verify_low_s, self.verify_high_s


# --- the composed answer ---------------------------------------------------------

@dataclass(frozen=True)
class Prediction:
    """What speculation would do with these costs and this acceptance.

    speedup_by_k[K-1] and the other speed-ups are ratios to plain decoding (t_v(1) per token).
    speedup_low is S(k_best) at the pessimistic alpha (what deploying k_best would give);
    speedup_high is the best S over K at the optimistic alpha. Without an interval both equal
    `speedup`. k_best is the best K even when the verdict is "slower" (then: do not speculate).
    """

    k_best: int
    speedup: float
    speedup_by_k: tuple[float, ...]
    tokens_per_round: float
    round_time_s: float
    break_even_alpha: float | None
    break_even_k: int | None
    verdict: str
    reasons: tuple[str, ...]
    speedup_low: float
    speedup_high: float
    draft_ratio: float  # t_d / t_v(1)
    verify_ratio: float  # t_v(k_best + 1) / t_v(1)
    alpha: float | tuple[float, ...]
    alpha_low: float | None = None
    alpha_high: float | None = None
    acceptance_given: str | None = None


def predict(verify_s: Sequence[float], draft_s: float, alpha: Alpha | Acceptance, overhead_s: float = 0.0,
            k_max: int | None = None, verify_bounds: tuple[Sequence[float], Sequence[float]] | None = None,
            k_fixed: int | None = None, overhead_low_s: float | None = None) -> Prediction:
    """Best K, speed-up, break-even acceptance, verdict and reasons for one target/draft pair.

    Args:
        verify_s: t_v(n) for n = 1..N, seconds (verify_s[n-1] = t_v(n)); N >= 2.
        draft_s: t_d, seconds per draft token (draft forward incl. its framework overhead).
        alpha: acceptance: a float, a per-position list a_1..a_K, or an `Acceptance` (alpha with
            a [low, high] interval; an interval can make the verdict "uncertain").
        overhead_s: t_o, per-round overhead (sampling, rejection, cache rewind), seconds.
        k_max: the largest K to consider (default: all the curve allows, N-1).
        verify_bounds: (fastest, slowest) t_v curves the kernels allow; the pessimistic speed-up takes the
            slowest with the low alpha, the optimistic one the fastest with the high alpha, both at the
            plan's K (the interval is that plan's, not the best K the optimistic case would pick).
        k_fixed: judge this K (the one deployed) instead of searching; the verdict is that K's.
        overhead_low_s: t_o at the optimistic end of what the engine is known to cost (the optimistic
            speed-up takes it; None: overhead_s throughout).

    Returns:
        A `Prediction`; verdict is "faster", "slower" or "uncertain".

    Raises:
        UsageError: too short a curve, non-positive or non-finite times, alpha outside [0, 1].

    Example:
        >>> predict([1.0, 2.0, 3.0, 4.0], 0.05, 0.8).verdict   # serial verification
        'slower'
    """
    central, low, high, given = unpack_alpha(alpha)
    a_low: Alpha = low if low is not None else central
    a_high: Alpha = high if high is not None else central
    by_position = by_position_rates(alpha, len(verify_s) - 1)
    if by_position is not None:  # the interval is stated at the first position; each end falls the same way
        central, a_low, a_high = by_position
    k_top = k_top_for(verify_s, draft_s, overhead_s, central, k_max)
    curve = speedup_curve(verify_s, draft_s, central, overhead_s, k_top)
    if k_fixed is not None and not 1 <= k_fixed <= k_top:
        raise UsageError(f"Cannot judge K = {k_fixed}: the costs cover K = 1..{k_top}.")
    k = k_fixed or best_k(curve)
    fast, slow = verify_bounds if verify_bounds is not None else (verify_s, verify_s)
    # either curve may be the pessimistic one: a slower t_v(K+1) lowers S, a slower t_v(1) (the baseline)
    # raises it, and batched forwards shift both (speed/roofline.py beyond_curve_s)
    o_high = overhead_s if overhead_low_s is None else min(overhead_low_s, overhead_s)
    s_low = min(speedup(k, v, draft_s, a_low, overhead_s) for v in (slow, fast))
    s_high = max(speedup(k, v, draft_s, a_high, o_high) for v in (fast, slow))
    result = verdict(s_low, s_high)
    reasons: tuple[str, ...] = ()
    if curve[k - 1] <= 1.0:
        reasons = slower_reasons(verify_s, draft_s, central, overhead_s, k_top)
    else:
        reasons = (faster_reason(verify_s, draft_s, central, overhead_s, k),)
    if result == UNCERTAIN:
        why = f"acceptance interval [{_first(a_low):.2f}, {_first(a_high):.2f}]"
        if verify_bounds is not None and tuple(fast) != tuple(slow):
            why += (f" and the kernels' verify cost t_v({k + 1})/t_v(1) {fast[k] / fast[0]:.2f}-"
                    f"{slow[k] / slow[0]:.2f}")
        reasons = (f"{why} give speed-up {s_low:.2f}x to {s_high:.2f}x, which straddles 1.0", *reasons)
    be, be_k = break_even_alpha(verify_s, draft_s, overhead_s, k_top)
    t1 = verify_s[0]
    return Prediction(
        k_best=k, speedup=curve[k - 1], speedup_by_k=curve, tokens_per_round=expected_accepted(central, k),
        round_time_s=round_time_s(k, verify_s, draft_s, overhead_s), break_even_alpha=be, break_even_k=be_k,
        verdict=result, reasons=reasons, speedup_low=s_low, speedup_high=s_high, draft_ratio=draft_s / t1,
        verify_ratio=verify_s[k] / t1,
        alpha=float(central) if isinstance(central, (int, float)) else tuple(central),
        alpha_low=low, alpha_high=high, acceptance_given=given)


# --- helpers -------------------------------------------------------------------------

def _alpha_text(alpha: Alpha, k: int | None = None) -> str:
    """alpha, or the per-position rates up to position K (the ones a round of K drafts uses)."""
    if isinstance(alpha, (int, float)):
        return f"alpha = {alpha:.2f}"
    return "per-position alpha = [" + ", ".join(f"{a:.2f}" for a in list(alpha)[:k]) + "]"


def unpack_alpha(alpha: Alpha | Acceptance) -> tuple[Alpha, float | None, float | None, str | None]:
    if isinstance(alpha, Acceptance):
        central, low, high = (check_alpha(float(x)) for x in (alpha.alpha, alpha.low, alpha.high))
        if not low <= central <= high:
            raise UsageError(f"Cannot use acceptance interval [{low}, {high}]: it must contain alpha = {central}.")
        return central, low, high, alpha.given
    if isinstance(alpha, (int, float)):
        return check_alpha(float(alpha)), None, None, None
    rates = tuple(check_alpha(float(a)) for a in alpha)
    if not rates:
        raise UsageError("Cannot use an empty list of per-position acceptance rates: give at least one.")
    return rates, None, None, None


def by_position_rates(alpha: Alpha | Acceptance, n: int) -> tuple[Alpha, Alpha, Alpha] | None:
    """An `Acceptance` that falls by position (its `decay`) as per-position rates a_1..a_n at its centre
    and both ends; None for any other acceptance (one alpha for every position)."""
    if not isinstance(alpha, Acceptance) or alpha.decay is None:
        return None
    d = alpha.decay
    return d.rates(alpha.alpha, n), d.rates(alpha.low, n), d.rates(alpha.high, n)


def _first(a: Alpha) -> float:
    """The first position's rate: the one an interval is stated in."""
    return float(a) if isinstance(a, (int, float)) else float(a[0])


def k_top_for(verify_s: Sequence[float], draft_s: float, overhead_s: float, alpha: Alpha, k_max: int | None) -> int:
    if len(verify_s) < 2:
        raise UsageError(f"Cannot predict a speed-up from {len(verify_s)} verify cost(s): expected t_v(1) and "
                         f"at least t_v(2) (verify_s[n-1] = t_v(n)). Measure n = 1..K+1.")
    for i, t in enumerate(verify_s, start=1):
        if not (isinstance(t, (int, float)) and math.isfinite(t) and t > 0):
            raise UsageError(f"Cannot use t_v({i}) = {t}: expected a positive number of seconds.")
    for name, t in (("draft_s", draft_s), ("overhead_s", overhead_s)):
        if not (isinstance(t, (int, float)) and math.isfinite(t) and t >= 0):
            raise UsageError(f"Cannot use {name} = {t}: expected a number of seconds >= 0.")
    top = len(verify_s) - 1
    if not isinstance(alpha, (int, float)):
        top = min(top, len(alpha))  # no extrapolation past the measured positions
    if k_max is not None:
        if k_max < 1:
            raise UsageError(f"Cannot use k_max = {k_max}: expected K >= 1.")
        top = min(top, k_max)
    return top
