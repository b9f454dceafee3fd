"""Honest timing: warm-up left out, the device synchronised around the clock, median of repeats
with outliers rejected (Tukey's fences, as the machine's own measurements: fits/measure_stats.py).

Why a module of its own: the probe and the bench (planner/bench) time the same kind of calls
(one forward, one rollback, one sampling step) and must agree on how (docs/probe.md "What it measures",
docs/bench.md "Accuracy benchmark"; after gpt-fast's `device_sync` before reading the clock). A
`Deadline` carries the whole probe's budget so every loop can stop early instead of overrunning it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..fits.measure_stats import quantile, reject_outliers


def sync(device: str) -> None:
    """Wait until queued device work is done (CUDA and MPS run asynchronously; CPU does not)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()
    elif device.startswith("mps"):
        import torch

        torch.mps.synchronize()


class Deadline:
    """A wall-clock budget started at construction; `left()` seconds remain."""

    def __init__(self, budget_s: float, clock: Callable[[], float] = time.perf_counter) -> None:
        self.budget_s = budget_s
        self._clock = clock
        self.start = clock()

    def elapsed(self) -> float:
        return self._clock() - self.start

    def left(self) -> float:
        return self.budget_s - self.elapsed()

    def sub(self, share: float) -> Deadline:
        """A deadline for one phase: `share` of what is left now (never past this one)."""
        return Deadline(max(0.0, self.left()) * share, self._clock)


@dataclass(frozen=True)
class Timing:
    """Median of the timed repeats inside Tukey's fences (seconds) and every sample, warm-up excluded.

    Why the fences: one repeat preempted by another process is an outlier on a busy machine; the median
    already resists it, and the spread (rel_iqr) then says how far the kept repeats agree."""

    median_s: float
    samples_s: tuple[float, ...]
    warmup: int
    truncated: bool = False  # the deadline cut the repeats short

    @property
    def spread_s(self) -> float:
        """max - min of the samples: how noisy the median is."""
        return max(self.samples_s) - min(self.samples_s)

    @property
    def rel_iqr(self) -> float:
        """Inter-quartile range of the repeats kept, as a share of their median (0 for one repeat)."""
        kept = reject_outliers(self.samples_s)
        return (quantile(kept, 0.75) - quantile(kept, 0.25)) / self.median_s if self.median_s > 0 else 0.0


def time_call(fn: Callable[[], object], device: str, clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds for one call of `fn`, with the device synchronised before and after.

    `clock` is wall time by default; `time.thread_time` (CPU time of this thread) is an option for
    single-threaded CPU runs on a busy machine, where preemption inflates long calls more than short ones.
    """
    sync(device)
    t0 = clock()
    fn()
    sync(device)
    return clock() - t0


def measure(fn: Callable[[], object], *, device: str, repeats: int = 7, warmup: int = 2,
            reset: Callable[[], object] | None = None, deadline: Deadline | None = None) -> Timing:
    """Warm up, then time `repeats` calls of `fn` and return the median.

    Args:
        fn: the call to time (one forward, one rollback, one sampling step...).
        device: "cpu", "cuda", "cuda:1", "mps": which device to synchronise.
        repeats: timed calls wanted (at least one is always made).
        warmup: untimed calls first (allocator, kernel selection, caches).
        reset: run after every call, outside the clock (e.g. roll the KV cache back).
        deadline: stop early once another call would not fit.

    Returns:
        Timing with the median, samples and whether the deadline truncated the run.
    """
    return measure_round_robin([fn], device=device, repeats=repeats, warmup=warmup, resets=[reset],
                               deadline=deadline)[0]


def measure_round_robin(fns: Sequence[Callable[[], object]], *, device: str, repeats: int = 7, warmup: int = 2,
                        resets: Sequence[Callable[[], object] | None] | None = None,
                        deadline: Deadline | None = None,
                        clock: Callable[[], float] = time.perf_counter) -> list[Timing]:
    """Time several calls in turn, one of each per round, and return each one's median.

    Why round-robin: when results are compared or combined (a few sample layers against the
    whole model, the extrapolation's differences), drift in clock speed or in other load on the
    machine then hits every call alike instead of biasing whichever ran during it.

    Args:
        fns: the calls.
        device: which device to synchronise.
        repeats: rounds timed (at least one always is).
        warmup: untimed rounds first.
        resets: per call, run after it outside the clock (None entries: nothing).
        deadline: stop starting rounds once another would not fit.
        clock: what a sample measures (time_call).

    Returns:
        One Timing per call, in order; sample r of every call comes from round r.
    """
    resets = list(resets) if resets is not None else [None] * len(fns)
    samples: list[list[float]] = [[] for _ in fns]
    round_s = 0.0
    done_warmup = 0
    truncated = False
    for r in range(warmup + repeats):
        timed = r >= warmup
        # the first round always runs (a cold first call is never a sample), and one timed round
        fits = r == 0 or deadline is None or deadline.left() >= 1.2 * round_s
        if not fits and (not timed or samples[0]):
            truncated = truncated or timed
            if timed:
                break
            continue
        round_s = 0.0
        for i, fn in enumerate(fns):
            s = time_call(fn, device, clock)
            round_s += s
            if timed:
                samples[i].append(s)
            reset = resets[i]
            if reset is not None:
                reset()
        done_warmup += 0 if timed else 1
    return [Timing(quantile(reject_outliers(s), 0.5), tuple(s), done_warmup, truncated) for s in samples]
