"""A plan whose interval straddles 1.0 with its central estimate below it says what would settle it, the
wider of its two intervals first (plan/settle.py). Speed-ups worked by hand: S(1) = E(1) t_v(1) / (t_d + t_v(2))."""

from __future__ import annotations

import pytest

from planner.plan import settle
from planner.speed.model import Acceptance, Costs, predict


def _a(alpha: float, low: float, high: float) -> Acceptance:
    return Acceptance(alpha, low, high, given="test", source="test")


def test_the_acceptance_is_named_when_it_makes_the_interval():
    # flat verify, t_d = 0.4: S(1) = (1 + a) / 1.4: a = 0.35 -> 0.964, 0.2 -> 0.857, 0.6 -> 1.143 (K=2 is lower)
    costs = Costs(verify_s=(1.0, 1.0, 1.0), draft_s=0.4)
    a = _a(0.35, 0.2, 0.6)
    p = predict(costs.verify_s, costs.draft_s, a)
    assert (p.k_best, p.verdict) == (1, "uncertain") and p.speedup == pytest.approx(1.35 / 1.4)
    assert settle.widths(p, costs, a) == pytest.approx((0.4 / 1.4, 0.0))
    line = settle.reason(p, costs, a, measured=False)
    assert line.startswith("central estimate 0.96x is below 1 but the interval reaches 1.14x")
    assert "the acceptance (interval [0.20, 0.60] moves the speed-up by 0.29x)" in line
    assert "--endpoint URL" in line and "then" not in line  # no kernel interval to name second


def test_the_verify_cost_is_named_first_when_its_interval_is_wider():
    # t_v(2) between 0.8 and 1.2 (central 1.0), alpha 0.34-0.36: S(1) at 0.35 is 1.35/1.2 = 1.125 fast,
    # 1.35/1.6 = 0.844 slow (span 0.281); the acceptance moves it (0.36 - 0.34)/1.4 = 0.014
    costs = Costs(verify_s=(1.0, 1.0, 1.0), draft_s=0.4, verify_low_s=(1.0, 0.8, 0.8),
                  verify_high_s=(1.0, 1.2, 1.2))
    a = _a(0.35, 0.34, 0.36)
    p = predict(costs.verify_s, costs.draft_s, a, verify_bounds=costs.verify_bounds)
    assert p.verdict == "uncertain" and p.speedup < 1.0
    acc_span, cost_span = settle.widths(p, costs, a)
    assert acc_span == pytest.approx(0.02 / 1.4) and cost_span == pytest.approx(1.35 / 1.2 - 1.35 / 1.6)
    line = settle.reason(p, costs, a, measured=False)
    assert "what settles it is the verify cost (the kernels' interval moves it by 0.28x)" in line
    assert "; then the acceptance" in line
    # costs already measured: only the acceptance is left to settle
    measured = settle.reason(p, costs, a, measured=True, kind="mtp")
    assert "verify cost" not in measured and "SpecDecoding metrics" in measured and "--draft D" not in measured


def test_no_line_where_the_central_estimate_is_at_or_above_one_or_the_verdict_is_clear():
    costs = Costs(verify_s=(1.0, 1.0, 1.0), draft_s=0.4)
    above = _a(0.5, 0.2, 0.6)  # S(1) = 1.5 / 1.4 > 1: the likely outcome is a speed-up
    assert settle.reason(predict(costs.verify_s, costs.draft_s, above), costs, above, measured=False) is None
    clear = _a(0.1, 0.05, 0.15)  # even the high end is below 1: "slower"
    p = predict(costs.verify_s, costs.draft_s, clear)
    assert p.verdict == "slower" and settle.reason(p, costs, clear, measured=False) is None
