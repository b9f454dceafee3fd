"""Robust statistics of repeated timing trials: median, inter-quartile range, outlier rejection, budgets.

Why its own module: one noisy trial on a shared machine must not move a verdict, so every measured
machine figure (machine_detect.py) and every probe timing is summarised the same way: warm-up
discarded, trials until a time budget is spent, Tukey's fences drop outliers, and the median with
its inter-quartile range is what the rest of the planner reads. Pure functions; the clock is an
argument, so tests feed samples without timing anything.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.errors import UsageError

TUKEY_K = 1.5  # Tukey's fences: outside [q1 - 1.5 IQR, q3 + 1.5 IQR] is an outlier (Tukey 1977, EDA ch. 2)
DISAGREE_REL_IQR = 0.25  # trials disagree when the IQR is more than this share of the median


@dataclass(frozen=True)
class Spread:
    """A measured figure from repeated trials: the median and quartiles of the trials kept.

    `trials` ran, `kept` survived Tukey's fences; `seconds` is the wall time all trials took;
    `clock` names what timed them (e.g. "thread CPU time").
    """

    median: float
    q1: float
    q3: float
    trials: int
    kept: int
    seconds: float
    clock: str

    @property
    def rel_iqr(self) -> float:
        """IQR / median: the spread as a share of the centre (0 for one trial)."""
        return (self.q3 - self.q1) / self.median if self.median else math.inf

    @property
    def disagree(self) -> bool:
        """Trials that disagree: the IQR is more than DISAGREE_REL_IQR of the median."""
        return self.rel_iqr > DISAGREE_REL_IQR


def quantile(sorted_xs: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values by linear interpolation between order statistics
    (Hyndman & Fan 1996 type 7, numpy's default): h = (n - 1) q, x[floor h] + (h - floor h)(x[ceil h] - x[floor h])."""
    if not sorted_xs:
        raise UsageError("Cannot take a quantile of no trials.")
    h = (len(sorted_xs) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (h - lo) * (sorted_xs[hi] - sorted_xs[lo])


def reject_outliers(xs: Sequence[float], k: float = TUKEY_K) -> list[float]:
    """The values inside Tukey's fences [q1 - k IQR, q3 + k IQR], sorted (all of them below 4 values:
    quartiles of three points fence nothing reliably)."""
    s = sorted(xs)
    if len(s) < 4:
        return s
    q1, q3 = quantile(s, 0.25), quantile(s, 0.75)
    lo, hi = q1 - k * (q3 - q1), q3 + k * (q3 - q1)
    return [x for x in s if lo <= x <= hi]


def summarise(xs: Sequence[float], seconds: float, clock: str) -> Spread:
    """Median and quartiles of the trials left after outlier rejection.

    Raises:
        UsageError: no trials, or a trial that is not a finite number.
    """
    if not xs or not all(math.isfinite(x) for x in xs):
        raise UsageError(f"Cannot summarise trials {list(xs)[:8]}: expected finite numbers.")
    kept = reject_outliers(xs)
    return Spread(median=quantile(kept, 0.5), q1=quantile(kept, 0.25), q3=quantile(kept, 0.75),
                  trials=len(xs), kept=len(kept), seconds=seconds, clock=clock)


def run_trials(trial: Callable[[], float], *, budget_s: float, min_trials: int, max_trials: int,
               warmup: int = 1, wall: Callable[[], float], spent: Callable[[], float] | None = None,
               wall_cap_s: float | None = None) -> tuple[list[float], float]:
    """Run `trial` (returns one measured value) `warmup` times unrecorded, then at least `min_trials`
    and at most `max_trials` times, stopping once `budget_s` is spent on the `spent` clock (default
    `wall`) or, past `min_trials`, `wall_cap_s` of wall time has gone by.

    Why a budget on another clock: counted in wall time, a budget buys fewer trials the busier the host
    (2 cores at load 10: a 27 ms memcpy takes ~250 ms of wall time, so 0.6 s bought the 7-trial minimum),
    and a 7-trial median moves ~16% between runs where 30 trials move ~9% (docs/probe.md). Counted in the
    measuring thread's CPU time, the trial count is the same on a busy host as on an idle one; the wall
    cap bounds how long a very busy host is measured. Returns (values, wall seconds the trials took)."""
    for _ in range(warmup):
        trial()
    clock = spent or wall
    values: list[float] = []
    t0, c0 = wall(), clock()

    def more() -> bool:
        if len(values) >= max_trials:
            return False
        if len(values) < min_trials:
            return True
        return clock() - c0 < budget_s and (wall_cap_s is None or wall() - t0 < wall_cap_s)

    while more():
        values.append(trial())
    return values, wall() - t0
