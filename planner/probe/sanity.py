"""Is a probe's measurement physically possible? Impossible step costs, one re-measurement, the verdict.

Why its own module: on a busy machine a probe can time a 135M draft step at 3.6 s against 1.1 s for a
0.5B target (issue #28), and a confident curve built on that is wrong in the direction that matters
(it says speculation cannot pay). Two results cannot happen on one backend whatever the load pattern
of a quiet machine: a draft with at most a tenth of the target's active parameters and no more layers
costing more per step than the target (a decode step reads every active weight once and pays a fixed
dispatch cost per layer, so its cost grows with both; a deep narrow draft on a launch-bound GPU may
legitimately be slower, so more layers exempt it), and
the same model timed twice at costs that differ beyond what their repeats spread. Either triggers one
re-measurement of both step costs; if it persists, the profile says "unreliable measurement: the
machine is busy" (Profile.unreliable, a problem in the diagnosis) instead of presenting the curve as
measured. Pure functions: the re-measurement is a callable, so tests inject the timings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..core.spec import ModelSpec

SMALL_DRAFT_SHARE = 0.1  # a draft at most this share of the target's active parameters must step faster
SAME_MODEL_TOLERANCE = 0.25  # the same model's two step costs may differ this much before the spread counts


@dataclass(frozen=True)
class Steps:
    """The two step costs a sanity check compares (seconds) and their spread (IQR / median, each)."""

    target_s: float
    draft_s: float
    target_spread: float = 0.0
    draft_spread: float = 0.0


def same_model(target: ModelSpec, draft: ModelSpec) -> bool:
    """The same model twice: one id, or the same layers and active parameters (a copy under two names)."""
    return target.id == draft.id or (target.params_active == draft.params_active and target.layers == draft.layers)


def impossible(target: ModelSpec, draft: ModelSpec | None, steps: Steps) -> str | None:
    """Why these step costs cannot both be true on one backend, or None when they can.

    A draft with <= SMALL_DRAFT_SHARE of the target's active parameters and no more layers must not step
    slower than the target; the same model twice must not differ by more than SAME_MODEL_TOLERANCE plus both spreads."""
    if draft is None or steps.target_s <= 0 or steps.draft_s <= 0:
        return None
    if same_model(target, draft):
        allowed = SAME_MODEL_TOLERANCE + steps.target_spread + steps.draft_spread
        gap = abs(steps.draft_s - steps.target_s) / min(steps.draft_s, steps.target_s)
        if gap > allowed:
            return (f"the same model timed at {steps.target_s * 1e3:.3g} ms and {steps.draft_s * 1e3:.3g} ms per "
                    f"step ({gap:.0%} apart, beyond the {allowed:.0%} its repeats allow)")
        return None
    share = draft.params_active / target.params_active if target.params_active else 1.0
    if share <= SMALL_DRAFT_SHARE and draft.n_layers <= target.n_layers and steps.draft_s > steps.target_s:
        return (f"the draft ({share:.0%} of the target's active parameters) timed slower per step "
                f"({steps.draft_s * 1e3:.3g} ms) than the target ({steps.target_s * 1e3:.3g} ms)")
    return None


@dataclass(frozen=True)
class Verdict:
    """What the probe keeps: the step costs to use, the re-measurement's, and why it is unreliable (or None)."""

    steps: Steps
    remeasured: bool
    unreliable: str | None


def checked(target: ModelSpec, draft: ModelSpec | None, first: Steps,
            remeasure: Callable[[], Steps]) -> Verdict:
    """The first step costs when possible; else one re-measurement, kept when possible; else unreliable.

    An unreliable verdict keeps the re-measured costs (the later of two bad readings) and names both."""
    why = impossible(target, draft, first)
    if why is None:
        return Verdict(first, False, None)
    second = remeasure()
    again = impossible(target, draft, second)
    if again is None:
        return Verdict(second, True, None)
    return Verdict(second, True, f"unreliable measurement: the machine is busy ({why}; re-measured: {again}). "
                                 f"Re-run planner probe on an idle machine, or with --threads 1 --clock thread")
