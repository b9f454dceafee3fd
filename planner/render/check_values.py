"""`planner check` result values and bounds for people (the check table, the report's policy block).

Why its own module: it needs plan/check.py's requirement names, and render/text.py (the memory and
fit tables) must not import plan/ to render a ledger: `planner memory` would load the policy judge,
the scenario and the recommender at start-up for nothing.
"""

from __future__ import annotations

from typing import Any

from ..core.fmt import fmt_bytes
from ..plan.check import COMPATIBLE, MAX_CROSSOVER, MIN_SPEEDUP


def format_value(requirement: str, value: Any) -> str:
    """A `planner check` result value or bound for people: bytes in binary units, speed-ups as 1.23x,
    concurrencies as B=N (a count of sequences, never bytes).

    Example:
        >>> format_value("min_speedup", 1.234), format_value("compatible", False), format_value("fits", None)
        ('1.23x', 'no', '-')
        >>> format_value("max_crossover_below", 16)
        'B=16'
    """
    if value is None:
        return "-"
    if requirement == MIN_SPEEDUP:
        return f"{value:.2f}x"
    if requirement == MAX_CROSSOVER:
        return f"B={value:,}"
    if requirement == COMPATIBLE:
        return {True: "yes", False: "no"}.get(value, str(value))
    return fmt_bytes(value)
