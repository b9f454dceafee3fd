"""Progress of a bench run on stderr: one line each, at most one every few seconds.

Why: a bench on a slow host ran 650 s with no output (#31 item 10); a user could not tell a long run
from a hung one. The lines go to stderr so `--json` stdout stays one document, and they are rate
limited so a fast run prints a handful, not one per decode.
"""

from __future__ import annotations

import time
from collections.abc import Callable

MIN_INTERVAL_S = 5  # seconds between two lines: a few per minute on a slow run, none but the last on a fast one


class Progress:
    """Counts units of work (decodes) and reports `done/total` with the elapsed time.

    Example:
        >>> lines = []
        >>> t = iter([0, 1, 7, 8]).__next__
        >>> p = Progress(4, lines.append, clock=t)  # started at 0
        >>> p.step("baseline"); p.step("speculative"); p.step("baseline")
        >>> lines
        ['progress: 2/4 decodes (speculative), 7 s']
    """

    def __init__(self, total: int, emit: Callable[[str], None], *, min_interval_s: float = MIN_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.emit, self.min_interval_s, self.clock = total, emit, min_interval_s, clock
        self.done = 0
        self.started = self.last = clock()

    def step(self, what: str) -> None:
        """One unit done; a line when `min_interval_s` has passed since the last one (or this is the last)."""
        self.done += 1
        now = self.clock()
        if now - self.last >= self.min_interval_s or self.done == self.total:
            self.last = now
            self.emit(f"progress: {self.done}/{self.total} decodes ({what}), {now - self.started:.0f} s")
