"""predict() for confidence-stopped drafting (llama.cpp --draft-p-min), and the one entry point for both kinds.

Why apart from speed/model.py: the fixed-K model is the seed's formula with its own reasons and
break-even search; under a confidence stop K is the most a round drafts and the round's tokens and
time come from speed/adaptive.py. Plans call `predict_plan`, which takes either.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.errors import UsageError
from . import adaptive as adaptive_model
from .adaptive import Adaptive
from .model import (
    UNCERTAIN,
    Acceptance,
    Alpha,
    Prediction,
    best_k,
    break_even_alpha,
    k_top_for,
    predict,
    slower_reasons,
    unpack_alpha,
    verdict,
)


def predict_plan(verify_s: Sequence[float], draft_s: float, alpha: Alpha | Acceptance, overhead_s: float = 0.0,
                 k_max: int | None = None, verify_bounds: tuple[Sequence[float], Sequence[float]] | None = None,
                 k_fixed: int | None = None, overhead_low_s: float | None = None,
                 adaptive: Adaptive | None = None) -> Prediction:
    """model.predict, or its confidence-stopped counterpart when `adaptive` is given (same arguments)."""
    if adaptive is None or (adaptive.p_min == 0.0 and adaptive.n_min == 0):  # every round drafts K
        return predict(verify_s, draft_s, alpha, overhead_s, k_max=k_max, verify_bounds=verify_bounds,
                       k_fixed=k_fixed, overhead_low_s=overhead_low_s)
    central, low, high, given = unpack_alpha(alpha)
    return _predict_adaptive(verify_s, draft_s, central, low, high, given, overhead_s, k_max, verify_bounds,
                             k_fixed, overhead_low_s, adaptive)


def _predict_adaptive(verify_s: Sequence[float], draft_s: float, central: Alpha, low: float | None,
                      high: float | None, given: str | None, overhead_s: float, k_max: int | None,
                      verify_bounds: tuple[Sequence[float], Sequence[float]] | None, k_fixed: int | None,
                      overhead_low_s: float | None, policy: Adaptive) -> Prediction:
    """predict() under confidence-stopped drafting: K is n_max, the most a round drafts (speed/adaptive.py)."""
    a_mid = float(central) if isinstance(central, (int, float)) else sum(central) / len(central)
    k_top = k_top_for(verify_s, draft_s, overhead_s, a_mid, k_max)

    def s_at(k: int, v: Sequence[float], a: float, o: float) -> float:
        return adaptive_model.speedup(k, v, draft_s, a, o, policy)

    curve = tuple(s_at(k, verify_s, a_mid, overhead_s) for k in range(1, k_top + 1))
    if k_fixed is not None and not 1 <= k_fixed <= k_top:
        raise UsageError(f"Cannot judge K = {k_fixed}: the costs cover K = 1..{k_top}.")
    k = k_fixed or best_k(curve)
    fast, slow = verify_bounds if verify_bounds is not None else (verify_s, verify_s)
    a_low, a_high = (low if low is not None else a_mid), (high if high is not None else a_mid)
    o_high = overhead_s if overhead_low_s is None else min(overhead_low_s, overhead_s)
    s_low = min(s_at(k, v, a_low, overhead_s) for v in (slow, fast))
    s_high = max(s_at(k, v, a_high, o_high) for v in (fast, slow))
    result = verdict(s_low, s_high)
    t1 = verify_s[0]
    drafted = adaptive_model.mean_drafted(a_mid, k, policy)
    probs, accepted = adaptive_model.round_profile(a_mid, k, policy)
    tokens = sum(p * (1.0 + a) if n >= policy.n_min else p for n, (p, a) in enumerate(zip(probs, accepted, strict=True), start=1))
    line = (f"K={k} at most, {policy.describe()}: {drafted:.2f} drafted and {tokens:.2f} tokens per round on "
            f"average for {tokens / curve[k - 1]:.2f} target steps of time (t_d/t_v(1) = {draft_s / t1:.2f}, "
            f"alpha = {a_mid:.2f}; drafting stops after the first draft token under p-min)")
    reasons: tuple[str, ...] = (line,)
    if curve[k - 1] <= 1.0:  # why it loses is in the costs: the fixed-K diagnosis says which one
        reasons += slower_reasons(verify_s, draft_s, a_mid, overhead_s, k_top)
    if result == UNCERTAIN:
        why = f"acceptance interval [{a_low:.2f}, {a_high:.2f}]"
        if verify_bounds is not None and tuple(fast) != tuple(slow):
            why += " and the kernels' verify costs"
        reasons = (f"{why} give speed-up {s_low:.2f}x to {s_high:.2f}x, which straddles 1.0", *reasons)
    be, be_k = break_even_alpha(verify_s, draft_s, overhead_s, k_top)
    return Prediction(
        k_best=k, speedup=curve[k - 1], speedup_by_k=curve, tokens_per_round=tokens,
        round_time_s=tokens * t1 / curve[k - 1], break_even_alpha=be, break_even_k=be_k, verdict=result,
        reasons=reasons, speedup_low=s_low, speedup_high=s_high, draft_ratio=draft_s / t1, verify_ratio=verify_s[k] / t1,
        alpha=float(central) if isinstance(central, (int, float)) else tuple(central),
        alpha_low=low, alpha_high=high, acceptance_given=given)
