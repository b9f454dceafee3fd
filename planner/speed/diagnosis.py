"""Diagnosing a machine profile: verification slope, draft ratio, ceiling and expected speed-up.

Why its own module: the diagnosis is pure arithmetic over the measured numbers (no files, no
torch), run by `planner probe` and its importers when they build a profile and reusable by the
speed model; it names the mechanism that makes speculation pay or not (docs/probe.md "Diagnosis"),
with thresholds from core/constants.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core import constants
from . import rounds
from .profile import Finding, MeasuredAcceptance, ModelCurve


def verify_slope(verify_s: Sequence[float], n: int | None = None) -> float:
    """Extra cost per extra token, in target steps (speed/rounds.verify_slope); `n` defaults to the longest point.

    0 = flat (n tokens cost one step: memory-bound, batch-parallel), 1 = n tokens cost n steps
    (verification degenerates to sequential decoding).
    """
    n = n or len(verify_s)
    return rounds.verify_slope(verify_s, n) if n >= 2 else 0.0


def draft_ratio(step_s: float, target_step_s: float) -> float:
    """c = t_d / t_v(1): the draft's step in units of the target's."""
    return step_s / target_step_s


def expected_tokens(alpha: float, k: int) -> float:
    """E(K), tokens per round incl. the bonus token: speed/rounds.expected_accepted (Leviathan 2023)."""
    return rounds.expected_accepted(min(alpha, 1.0), k)


def expected_tokens_positional(per_position: Sequence[float], k: int) -> float:
    """E(K) = 1 + sum_{j<=K} prod_{i<=j} a_i from per-position acceptance (positions past the list: 0)."""
    return rounds.expected_accepted(list(per_position[:k]), min(k, len(per_position)))


def round_speedup(verify_s: Sequence[float], step_s: float, overhead_s: float, k: int,
                  tokens: float) -> float:
    """speedup(K) = E(K) * t_v(1) / t_round(K), with t_round from speed/rounds.round_time_s."""
    return tokens * verify_s[0] / rounds.round_time_s(k, verify_s, step_s, overhead_s)


def best_speedup(verify_s: Sequence[float], step_s: float, overhead_s: float, *,
                 alpha: float = 1.0, per_position: Sequence[float] | None = None) -> tuple[int, float]:
    """(K*, speedup(K*)) over K = 1..len(verify_s)-1, on the measured (possibly jagged) curve.

    With `per_position` the tokens per round use a_1..a_K (only K it covers); else alpha.
    alpha = 1 gives the ceiling: what perfect acceptance could reach on these costs.
    """
    best = (0, 0.0)
    k_max = len(verify_s) - 1
    if per_position:
        k_max = min(k_max, len(per_position))
    for k in range(1, k_max + 1):
        e = expected_tokens_positional(per_position, k) if per_position else expected_tokens(alpha, k)
        s = round_speedup(verify_s, step_s, overhead_s, k, e)
        if s > best[1]:
            best = (k, s)
    return best


# backends where a non-parallel verify curve has a known, named cause (issue #28: name only the
# measured backend's mechanisms): quantised Metal mat-vec kernels run an n-token batch as n passes
METAL_BACKENDS = ("mps", "metal", "apple")


def _verify_findings(curve: ModelCurve, device: str | None = None) -> list[Finding]:
    v = curve.verify_s
    n = len(v)
    if n < 2:
        return [Finding("verify_single_point", "info", "only t_v(1) was measured: batch-parallelism unknown")]
    r, s = v[-1] / v[0], verify_slope(v)
    ratio_txt = f"t_v({n})/t_v(1) = {r:.2f} (flat = 1.00, sequential = {n}.00, slope {s:.2f} step/token)"
    out = []
    if s >= constants.VERIFY_SLOPE_BAD:
        out.append(Finding("verify_not_parallel", "problem",
                           f"verification is not batch-parallel: {ratio_txt}; each drafted token costs about "
                           f"a target step, so speculation cannot pay on this backend"
                           f"{' (the quantised-Metal failure)' if (device or '').lower() in METAL_BACKENDS else ''}. "
                           f"Try f16/bf16 weights, another backend or kernel.", r))
    elif s >= constants.VERIFY_SLOPE_WARN:
        out.append(Finding("verify_partly_parallel", "warning",
                           f"verification is only partly batch-parallel: {ratio_txt}; large K will not pay.", r))
    else:
        out.append(Finding("verify_parallel", "ok", f"verification is batch-parallel: {ratio_txt}.", r))
    drops = [i + 1 for i in range(1, n) if v[i] < 0.9 * v[i - 1]]
    if drops:
        out.append(Finding("verify_jagged", "info",
                           f"the verify curve is jagged (t_v(n) falls >10% at n = {', '.join(map(str, drops))}): "
                           f"kernel choice changes with n; K is picked on the measured points.", None))
    return out


def _draft_findings(target: ModelCurve, draft: ModelCurve) -> list[Finding]:
    c = draft_ratio(draft.step_s, target.step_s)
    txt = f"t_d/t_v(1) = {c:.3f}"
    if c >= constants.DRAFT_RATIO_BAD:
        return [Finding("draft_too_slow", "problem",
                        f"the draft step is too slow against the target's: {txt} (speed-up is below 1/c = "
                        f"{1 / c:.2f}x even at perfect acceptance); pick a much smaller draft or a larger target.",
                        c)]
    if c >= constants.DRAFT_RATIO_WARN:
        return [Finding("draft_slow", "warning",
                        f"the draft step is slow against the target's: {txt}; speculation needs high acceptance.",
                        c)]
    return [Finding("draft_fast", "ok", f"the draft step is cheap against the target's: {txt}.", c)]


def diagnose(target: ModelCurve, draft: ModelCurve | None, overhead_s: float,
             acceptance: MeasuredAcceptance | None = None, device: str | None = None) -> tuple[Finding, ...]:
    """Name the mechanism that makes speculation pay or not, from the measured ratios.

    Args:
        target: the target's curve (t_v(1..K+1)).
        draft: the draft's curve (its step t_d), or None when only the target was probed.
        overhead_s: per-round overhead t_o.
        acceptance: measured acceptance, if any; adds the expected speed-up at it.
        device: the backend measured (cpu, cuda, mps); a mechanism is named only for its own backend.

    Returns:
        Findings, most fundamental first: verification parallelism, draft cost, the ceiling
        speed-up at perfect acceptance, and (with acceptance) the expected speed-up.
    """
    out = _verify_findings(target, device)
    if draft is None:
        return tuple(out)
    out += _draft_findings(target, draft)
    v = target.verify_s
    if len(v) >= 2:
        k, ceiling = best_speedup(v, draft.step_s, overhead_s, alpha=1.0)
        if ceiling < 1.0:
            out.append(Finding("slower_at_any_acceptance", "problem",
                               f"slower at any acceptance: even with every drafted token accepted the best is "
                               f"{ceiling:.2f}x (K={k}) on these costs.", ceiling))
        else:
            out.append(Finding("ceiling", "info",
                               f"ceiling at perfect acceptance: {ceiling:.2f}x (K={k}).", ceiling))
    if acceptance is not None and len(v) >= 2:
        pp = acceptance.per_position if acceptance.temperature > 0 else None
        k, s = best_speedup(v, draft.step_s, overhead_s, alpha=min(acceptance.alpha, 1.0), per_position=pp)
        sev = "ok" if s > 1.0 else "problem"
        code = "expected_speedup" if s > 1.0 else "acceptance_too_low"
        out.append(Finding(code, sev, f"at the measured acceptance (alpha {acceptance.alpha:.3f}) the best is "
                                      f"{s:.2f}x at K={k}.", s))
    return tuple(out)
