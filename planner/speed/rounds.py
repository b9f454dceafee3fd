"""One draft-verify round in closed forms: tokens per round E(K), round time, speed-up S(K), break-even alpha
and the verify slope (docs/speed.md "The model"). speed/model.py composes them into a Prediction.

  t_round(K) = K * t_d + t_v(K+1) + t_o                     (one draft-verify round)
  E(K)       = (1 - a**(K+1)) / (1 - a)                      (tokens per round, bonus included)
  S(K)       = E(K) * t_v(1) / t_round(K)                    (speed-up over plain decoding)

Why apart: these are the formulas a test checks by hand, with no acceptance intervals, verdicts or reasons.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..core import memo
from ..core.errors import UsageError

Alpha = float | Sequence[float]  # one alpha, or per-position a_1..a_K
_BISECT_STEPS = 200  # bisection on [0, 1]: 2**-200 is far below float resolution


# --- tokens per round ---------------------------------------------------------

def expected_accepted(alpha: Alpha, k: int) -> float:
    """Expected tokens emitted per round with K drafted tokens (accepted drafts + 1 bonus/correction).

    # E(K) = (1 - a**(K+1)) / (1 - a) = sum_{j=0..K} a**j    (Leviathan et al. 2023, eq. 1)
    # alpha = 1 exactly: every draft is accepted, E = K + 1
    # per-position a_i: E = 1 + sum_{k=1..K} prod_{i<=k} a_i  (a draft counts only if all before it did)

    Raises:
        UsageError: alpha outside [0, 1], or fewer per-position rates than K.
    """
    if k < 0:
        raise UsageError(f"Cannot use K = {k} drafted tokens: K must be >= 0.")
    if isinstance(alpha, (int, float)):
        a = check_alpha(float(alpha))
        if a == 1.0:
            return float(k + 1)
        if a > 1.0 - 1e-6:  # closed form cancels near 1; the finite sum does not
            return math.fsum(a**j for j in range(k + 1))
        return (1.0 - a ** (k + 1)) / (1.0 - a)
    rates = [check_alpha(float(x)) for x in alpha]
    if len(rates) < k:
        raise UsageError(f"Cannot compute E(K={k}) from {len(rates)} per-position acceptance rates: "
                         f"expected at least {k}. Measure more positions or lower K.")
    total, prod = 1.0, 1.0
    for a in rates[:k]:
        prod *= a
        total += prod
    return total


@memo.cached(maxsize=4096)  # pure; the same inversions recur per target x machine in a report
def alpha_for_expected(tokens: float, k: int) -> float:
    """The constant alpha at which E(K) equals `tokens` (inverse of `expected_accepted`).

    # E(K, a) = sum_{j=0..K} a**j rises monotonically from 1 (a=0) to K+1 (a=1): bisection.

    Raises:
        UsageError: `tokens` outside [1, K+1].
    """
    if k < 1 or not 1.0 <= tokens <= k + 1:
        raise UsageError(f"Cannot invert E(K) = {tokens} at K = {k}: expected 1 <= E <= K+1 = {k + 1}.")
    # bisect_increasing(lambda a: _expected_float(a, k), tokens), inlined: the same steps and arithmetic,
    # without two calls per step (a fleet report inverts E(K) ~25k times; issue #33)
    lo, hi, p = 0.0, 1.0, k + 1
    for _ in range(_BISECT_STEPS):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        e = ((1.0 - mid ** p) / (1.0 - mid) if mid <= 1.0 - 1e-6 else math.fsum(mid**j for j in range(p)))
        if e < tokens:
            lo = mid
        else:
            hi = mid
    return hi


def _expected_float(a: float, k: int) -> float:
    """`expected_accepted(a, k)` for a float a in [0, 1] already checked: the same arithmetic, branch for
    branch, without the checks (a bisection calls it ~50 times per inversion, thousands of times a report)."""
    if a == 1.0:
        return float(k + 1)
    if a > 1.0 - 1e-6:
        return math.fsum(a**j for j in range(k + 1))
    return (1.0 - a ** (k + 1)) / (1.0 - a)


# --- time per round and speed-up -----------------------------------------------

def round_time_s(k: int, verify_s: Sequence[float], draft_s: float, overhead_s: float = 0.0) -> float:
    """Seconds for one round: K draft steps, one target forward of K+1 tokens, per-round overhead.

    # t_round(K) = K * t_d + t_v(K+1) + t_o    (verify_s[K] is t_v(K+1))
    """
    return k * draft_s + verify_s[k] + overhead_s


def speedup(k: int, verify_s: Sequence[float], draft_s: float, alpha: Alpha, overhead_s: float = 0.0) -> float:
    """Speed-up of speculation with K drafts over plain decoding at t_v(1) per token.

    # S(K) = E(K) * t_v(1) / t_round(K)    (Leviathan et al. 2023, Theorem 3.8, with measured t_v)
    """
    return expected_accepted(alpha, k) * verify_s[0] / round_time_s(k, verify_s, draft_s, overhead_s)


def speedup_curve(verify_s: Sequence[float], draft_s: float, alpha: Alpha, overhead_s: float,
                  k_top: int) -> tuple[float, ...]:
    """S(K) for K = 1..k_top (index K-1)."""
    return tuple(speedup(k, verify_s, draft_s, alpha, overhead_s) for k in range(1, k_top + 1))


def best_k(curve: Sequence[float]) -> int:
    """The K with the highest speed-up (first one on ties): an argmax, never a convexity shortcut."""
    return max(range(len(curve)), key=lambda i: (curve[i], -i)) + 1


def break_even_alpha(verify_s: Sequence[float], draft_s: float, overhead_s: float,
                     k_top: int) -> tuple[float | None, int | None]:
    """Smallest constant alpha at which the best K reaches speed-up 1.0, and that K.

    # S(K) = 1  <=>  E(K, a) = t_round(K) / t_v(1) =: R_K ; E(K, .) rises from 1 to K+1, so
    # a_K = 0 if R_K <= 1, none if R_K > K+1, else the root; break-even = min_K a_K.
    Returns (None, None) when no alpha in [0, 1] reaches 1.0 at any K.
    """
    best: tuple[float | None, int | None] = (None, None)
    for k in range(1, k_top + 1):
        need = round_time_s(k, verify_s, draft_s, overhead_s) / verify_s[0]
        if need > k + 1:
            continue
        if best[0] is not None and need > 1.0 and _floor_alpha(need, k) > best[0] * (1.0 + 1e-9):
            continue  # this K's root cannot beat the best so far: no inversion (issue #33)
        a = 0.0 if need <= 1.0 else alpha_for_expected(need, k)
        if best[0] is None or a < best[0]:
            best = (a, k)
    return best


def _floor_alpha(need: float, k: int) -> float:
    """A lower bound on the root of E(K, a) = need (1 < need <= K+1), from two upper bounds on E.

    # E(K, a) = sum_{j=0..K} a**j <= 1 + K a      (a**j <= a on [0, 1])   =>  a >= (need - 1) / K
    # E(K, a) < 1 / (1 - a)                                                =>  a >  1 - 1 / need
    """
    return max((need - 1.0) / k, 1.0 - 1.0 / need)


def verify_slope(verify_s: Sequence[float], n: int) -> float:
    """Extra cost of each additional verified token, as a fraction of t_v(1).

    # s(n) = (t_v(n) / t_v(1) - 1) / (n - 1):  0 = batch-parallel (flat), 1 = serial (n forwards)
    # (same definition as constants.VERIFY_SLOPE_*, used by the probe diagnosis)
    """
    return (verify_s[n - 1] / verify_s[0] - 1.0) / (n - 1)


def mean_verify_slope(verify_s: Sequence[float], n_top: int) -> float:
    """Mean of s(n) over n = 2..n_top: how far the whole measured curve is from batch-parallel."""
    return math.fsum(verify_slope(verify_s, n) for n in range(2, n_top + 1)) / (n_top - 1)


# --- helpers ----------------------------------------------------------------------

def check_alpha(a: float) -> float:
    """`a` itself when it is an acceptance rate (finite, in [0, 1]).

    Raises:
        UsageError: anything else.
    """
    if not (math.isfinite(a) and 0.0 <= a <= 1.0):
        raise UsageError(f"Cannot use acceptance alpha = {a}: expected a number in [0, 1].")
    return a


def bisect_increasing(f: Callable[[float], float], target: float) -> float:
    """Smallest a in [0, 1] with f(a) >= target, for f rising monotonically on [0, 1] (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(_BISECT_STEPS):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return hi
