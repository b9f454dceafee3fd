"""Is this host busy while we measure it? Load average against cores, CPU steal, and thread pinning.

Why its own module: a measured figure is only as good as the machine was quiet, so detection says
in one line when it was not (load above the core count, a hypervisor stealing CPU, trials that
disagree), and pins the measuring thread to one core where the OS allows it (Linux
os.sched_setaffinity), so the scheduler does not move it between caches mid-trial. Each read of
the host is one small function, so tests fake a busy machine by patching them.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

from .measure_stats import Spread

PROC_STAT_MAX_BYTES = 4096  # the aggregate "cpu" line is the first; 4 KiB holds it on any core count
STEAL_BUSY = 0.05  # a hypervisor taking more than 5% of CPU time makes timings uncertain
STEAL_WINDOW_S = 0.1  # steal is a rate: two reads of /proc/stat this far apart


def _loadavg() -> float | None:
    """1-minute load average (os.getloadavg), None where the OS has none (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _cores() -> int:
    """Cores this process may run on (its affinity mask where the OS has one), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def parse_proc_stat(first_line: str) -> tuple[int, int] | None:
    """(steal, total) jiffies from the aggregate "cpu" line of /proc/stat, None when it is not one.

    Fields: user nice system idle iowait irq softirq steal guest guest_nice (proc(5)); guest time is
    already counted in user, so the total is the first eight."""
    f = first_line.split()
    if len(f) < 9 or f[0] != "cpu" or not all(x.isdigit() for x in f[1:9]):
        return None
    vals = [int(x) for x in f[1:9]]
    return vals[7], sum(vals)


def _cpu_times() -> tuple[int, int] | None:
    """(steal, total) jiffies now (Linux /proc/stat, first line, bounded read), else None."""
    try:
        with open("/proc/stat", "rb") as fh:
            first = fh.read(PROC_STAT_MAX_BYTES).split(b"\n", 1)[0].decode("ascii", "replace")
    except OSError:
        return None
    return parse_proc_stat(first)


def steal_fraction(window_s: float = STEAL_WINDOW_S) -> float | None:
    """Share of CPU time a hypervisor took over `window_s` (Linux /proc/stat steal), None elsewhere."""
    a = _cpu_times()
    if a is None:
        return None
    time.sleep(window_s)
    b = _cpu_times()
    if b is None or b[1] <= a[1]:
        return None
    return (b[0] - a[0]) / (b[1] - a[1])


def contention(load: float | None, cores: int, steal: float | None, trials: Spread | None) -> str | None:
    """One line naming what made this measurement uncertain, or None on a quiet machine.

    Busy: the 1-minute load average above the cores we may use (runnable threads queue for a core),
    steal above STEAL_BUSY, or trials whose IQR is more than a quarter of their median."""
    why = []
    if load is not None and load > cores:
        why.append(f"load average {load:.1f} on {cores} core{'s' if cores != 1 else ''}")
    if steal is not None and steal > STEAL_BUSY:
        why.append(f"{steal:.0%} CPU steal")
    if trials is not None and trials.disagree:
        why.append(f"trials disagree (IQR {trials.rel_iqr:.0%} of the median)")
    if not why:
        return None
    return ("machine busy while measuring: " + ", ".join(why)
            + "; figures carry their spread (re-measure on an idle machine to narrow it)")


def observe(trials: Spread | None) -> str | None:
    """contention() for this host now."""
    return contention(_loadavg(), _cores(), steal_fraction(), trials)


@contextlib.contextmanager
def pinned() -> Iterator[int | None]:
    """Pin this thread to one core it may use for the duration (Linux), yielding the core or None.

    The last core of the mask: core 0 takes most interrupts. Restores the previous mask after."""
    get = getattr(os, "sched_getaffinity", None)
    put = getattr(os, "sched_setaffinity", None)
    if get is None or put is None:
        yield None
        return
    try:
        before = get(0)
        core = max(before)
        put(0, {core})
    except OSError:
        yield None
        return
    try:
        yield core
    finally:
        with contextlib.suppress(OSError):
            put(0, before)
