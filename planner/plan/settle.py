"""What would settle a plan whose interval straddles 1.0 while its central estimate is below it.

Why a module: such a plan is neither a clear "no" nor a "yes": the most likely outcome is a slowdown,
but the optimistic end is a speed-up. A user can only act on that by measuring, and which measurement
helps depends on what makes the interval wide: the acceptance interval (settled by the real acceptance:
`planner bench --endpoint` against a running server of the pair, or `planner probe --draft` on the
machine) or the verify-cost interval of the kernels (settled by measured costs: `planner probe`, whose
profile `--profile` then prices). Each is priced here at the plan's K with the other held central.
"""

from __future__ import annotations

from ..engines.base import DRAFT_MODEL
from ..speed import model as speed
from ..speed.acceptance import Acceptance
from ..speed.model import Costs, Prediction


def widths(pred: Prediction, costs: Costs, alpha: Acceptance) -> tuple[float, float]:
    """(acceptance span, verify-cost span) of the speed-up at the plan's K, each with the other central.

    # acceptance: S(K; alpha_high) - S(K; alpha_low) on the central costs
    # verify cost: |S(K; fastest t_v) - S(K; slowest t_v)| at the central alpha (0 without a kernel interval)
    """
    k, v, t_d, t_o = pred.k_best, costs.verify_s, costs.draft_s, costs.overhead_s
    by_position = speed.by_position_rates(alpha, len(v) - 1)
    central, low, high = by_position if by_position is not None else (alpha.alpha, alpha.low, alpha.high)
    acc_span = speed.speedup(k, v, t_d, high, t_o) - speed.speedup(k, v, t_d, low, t_o)
    bounds = costs.verify_bounds
    cost_span = abs(speed.speedup(k, bounds[0], t_d, central, t_o) - speed.speedup(k, bounds[1], t_d, central, t_o)) \
        if bounds is not None else 0.0
    return acc_span, cost_span


def reason(pred: Prediction, costs: Costs, alpha: Acceptance, measured: bool, kind: str = DRAFT_MODEL) -> str | None:
    """The plan's line saying what would settle it; None unless the interval straddles 1.0 with the central
    estimate below it. `measured`: the costs already come from a probe or a live server; `kind`: the drafting
    method (a draft model can be probed here; the others are measured on their server)."""
    if pred.verdict != speed.UNCERTAIN or pred.speedup >= 1.0:
        return None
    acc_span, cost_span = widths(pred, costs, alpha)
    how = ("'planner bench TARGET --draft D --endpoint URL' against a running server, or 'planner probe TARGET "
           "--draft D' here" if kind == DRAFT_MODEL else
           "the server's own counters with the plan's command running (llama-server's draft acceptance, vLLM's "
           "SpecDecoding metrics)")
    acceptance = (f"the acceptance (interval [{alpha.low:.2f}, {alpha.high:.2f}] moves the speed-up by "
                  f"{acc_span:.2f}x): measure it on the real pair, {how}")
    cost = (f"the verify cost (the kernels' interval moves it by {cost_span:.2f}x): measure t_v(n) with "
            f"'planner probe TARGET' and price with --profile FILE")
    first, second = (cost, acceptance) if cost_span > acc_span and not measured else (acceptance, cost)
    rest = f"; then {second}" if cost_span > 0 and not measured else ""
    return (f"central estimate {pred.speedup:.2f}x is below 1 but the interval reaches {pred.speedup_high:.2f}x: "
            f"most likely slower; what settles it is {first}{rest}")
