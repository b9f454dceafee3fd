"""A measured machine's spread in a plan's speed-up interval (issue #28: same answer every run).

Why its own module: a detected CPU's bandwidth is the median of repeated trials with an IQR
(fits/machine_detect.py); a plan priced only at the median would claim a precision the measurement
does not have, so the same K is priced at both ends of the spread and the verdict follows the widened
interval. recommend (plan/recommend.py), check (plan/assess.py) and so report (plan/fleet.py, through
recommend) call it for every plan whose costs carry a spread; `spread_costs` puts the spread in the costs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..speed import acceptance as acc
from ..speed import model as speed
from ..speed import roofline
from ..speed.adaptive import Adaptive
from ..speed.adaptive_predict import predict_plan
from ..speed.model import Costs


def spread_costs(c: Costs, ends: tuple[tuple[roofline.Roof, ...], str] | None,
                 price: Callable[[roofline.Roof], Costs]) -> Costs:
    """`c` with the same plan priced on the roof at each end of the measured spread (plan/roof.py
    measured_ends), and the line naming them; `c` unchanged when nothing was measured (catalogued machines)."""
    if ends is None:
        return c
    return replace(c, machine_spread=tuple(price(r) for r in ends[0]), machine_spread_source=ends[1])


def widen_by_machine(pred: speed.Prediction, costs: Costs, alpha: acc.Acceptance, k_max: int,
                     policy: Adaptive | None) -> speed.Prediction:
    """The plan's interval with the machine's measured spread in it: the same K priced on the costs at each
    end of the spread (each end with its own acceptance and kernel interval), the lowest and highest
    speed-up kept; the verdict is faster/slower only where the widened interval is clear of 1.0."""
    if not costs.machine_spread:
        return pred
    ends = [predict_plan(c.verify_s, c.draft_s, alpha, c.overhead_s, k_max=k_max, verify_bounds=c.verify_bounds,
                         k_fixed=pred.k_best, overhead_low_s=c.overhead_low_s, adaptive=policy)
            for c in costs.machine_spread]
    low = min(pred.speedup_low, *(e.speedup_low for e in ends))
    high = max(pred.speedup_high, *(e.speedup_high for e in ends))
    result = speed.verdict(low, high)
    reasons = pred.reasons
    if result == speed.UNCERTAIN and pred.verdict != speed.UNCERTAIN:
        reasons = (f"{costs.machine_spread_source} gives speed-up {low:.2f}x to {high:.2f}x, which straddles 1.0: "
                   f"re-measure on an idle machine (planner machines detect --save) or measure the costs "
                   f"(planner probe)", *reasons)
    return replace(pred, speedup_low=low, speedup_high=high, verdict=result, reasons=reasons)
