"""What to probe and how hard: ProbeSettings, validated once and read by every stage of a probe.

Why separate: the settings are built by the CLI and read by the synthetic and real probes
(runner.py, curves.py) and the llama.cpp backend (llamacpp.py); a leaf module keeps them
importable by all of those without a cycle, and an invalid flag fails before torch is imported.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..core import constants
from ..core.errors import UsageError

Progress = Callable[[str, float], None]


def check_threads(threads: int | None) -> int | None:
    """`--threads` as given (None: torch's default), checked against the CPUs of this machine.

    Why a ceiling: torch.set_num_threads(100000) returns, and the next parallel kernel kills the
    process (OpenMP cannot start that many threads); more threads than CPUs never time better.

    Raises:
        UsageError: below 1 or above os.cpu_count().
    """
    cpus = os.cpu_count() or 1
    if threads is not None and not 1 <= threads <= cpus:
        raise UsageError(f"Cannot use --threads {threads} (expected 1..{cpus}: this machine has {cpus} CPUs). "
                         f"Pass a count in that range, or leave --threads out for the default.")
    return threads


@dataclass(frozen=True)
class ProbeSettings:
    """What to probe and how hard.

    `mode`: auto (samples, then the whole model when it fits), extrapolate (samples only) or
    full (the whole model, error if it does not fit). `memory_bytes` overrides the detected
    available memory (tests, or to keep room for other work).
    """

    device: str = "auto"
    dtype: str | None = None
    max_k: int = constants.DEFAULT_MAX_K
    context: int = constants.DEFAULT_CONTEXT
    budget_s: float | None = None
    repeats: int = constants.PROBE_REPEATS
    warmup: int = constants.PROBE_WARMUP
    seed: int = 0
    temperature: float = 1.0
    mode: str = "auto"
    group_layers: int = 2
    memory_bytes: int | None = None
    threads: int | None = None
    clock: str = "wall"

    def __post_init__(self) -> None:
        if not 1 <= self.max_k <= 64:
            raise UsageError(f"Cannot probe with --max-k {self.max_k} (expected 1..64).")
        if self.context < 1:
            raise UsageError(f"Cannot probe with --context {self.context} (expected >= 1).")
        if self.budget_s is not None and self.budget_s <= 0:
            raise UsageError(f"Cannot probe with --budget-s {self.budget_s} (expected > 0 seconds).")
        if self.mode not in ("auto", "extrapolate", "full"):
            raise UsageError(f"Cannot probe in mode '{self.mode}' (expected auto, extrapolate or full).")
        if self.repeats < 1 or self.warmup < 0 or self.group_layers < 1:
            raise UsageError("Cannot probe with repeats < 1, warmup < 0 or group_layers < 1.")
        check_threads(self.threads)
        if self.clock not in ("wall", "thread"):
            raise UsageError(f"Cannot probe with --clock {self.clock} (expected wall or thread).")
        if self.clock == "thread" and (self.threads != 1 or self.device not in ("cpu", "auto")):
            raise UsageError("Cannot probe with --clock thread unless --device cpu --threads 1 (expected one "
                             "CPU thread: thread CPU time misses work done on other threads or devices).")

    @property
    def clock_fn(self) -> Callable[[], float]:
        """Wall clock, or this thread's CPU time (preemption by other processes excluded)."""
        return time.thread_time if self.clock == "thread" else time.perf_counter
