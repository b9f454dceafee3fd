"""`--jobs N`: independent pieces of a report (one machine's rows, one deployment's assessment) in a process pool.

Why processes: the work is pure Python on one core each (no I/O to overlap), so threads would share one
interpreter lock. Results come back in the order of the inputs, whatever order the workers finish in, so
a report is the same rows as the serial run; `progress` hears of each piece as it completes (the
commands print it on stderr). `jobs <= 1` or a single piece runs in this process, with no pool at all.

Where a sweep outgrows one machine, do not grow this into a scheduler: shard it (one `planner report
--json` per shard, merged; docs/report.md).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing.reduction import ForkingPickler
from types import MappingProxyType
from typing import Any, TypeVar

from .errors import UsageError

T = TypeVar("T")
R = TypeVar("R")

MAX_JOBS = 256  # more workers than this is a typo, not a machine


def _proxy(items: dict[Any, Any]) -> MappingProxyType:
    return MappingProxyType(items)


def _reduce_proxy(mp: MappingProxyType) -> tuple[Callable[[dict[Any, Any]], MappingProxyType], tuple[dict, ...]]:
    # Read-only views (specs, headers) cross to the parent as the dict they show, and are views again there.
    return _proxy, (dict(mp),)


ForkingPickler.register(MappingProxyType, _reduce_proxy)  # only the pool's pickler: no global copyreg entry


def check_jobs(jobs: int) -> int:
    """A `--jobs` value, or a UsageError naming the range (0 means one per CPU)."""
    if not 0 <= jobs <= MAX_JOBS:
        raise UsageError(f"Cannot use --jobs {jobs}: expected 0 (one per CPU) to {MAX_JOBS}.")
    return jobs or (os.cpu_count() or 1)


def map_in_order(fn: Callable[[T], R], items: Sequence[T], jobs: int,
                 progress: Callable[[int, int, T], None] | None = None) -> list[R]:
    """`[fn(x) for x in items]`, with up to `jobs` worker processes; `progress(done, total, item)` per piece.

    `fn` must be a module-level function, and items and results picklable. An exception in a piece is
    raised here, as the serial loop would raise it (the first in input order among those that failed).

    The first piece runs in this process before the pool starts: where workers are forked (Linux), they
    inherit what it memoised (core/memo.py: the machine-independent part of a plan) and the items
    themselves, so neither is computed or pickled again per worker. Elsewhere (spawn) each piece is
    sent by value and its worker starts cold: slower, the same rows.
    """
    total = len(items)
    out: list[R] = []
    for i, x in enumerate(items[: 1 if jobs > 1 else total], start=1):
        out.append(fn(x))
        if progress is not None:
            progress(i, total, x)
    if len(out) == total:
        return out
    results: dict[int, R] = {}
    errors: dict[int, BaseException] = {}
    ctx = mp.get_context()
    global _FORKED
    _FORKED = (fn, items) if ctx.get_start_method() == "fork" else None
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, total - 1), mp_context=ctx) as pool:
            futures = {(pool.submit(_forked_piece, i) if _FORKED else pool.submit(fn, items[i])): i
                       for i in range(1, total)}
            for done, fut in enumerate(as_completed(futures), start=2):
                i = futures[fut]
                exc = fut.exception()
                if exc is not None:
                    errors[i] = exc
                else:
                    results[i] = fut.result()
                if progress is not None:
                    progress(done, total, items[i])
    finally:
        _FORKED = None
    if errors:
        raise errors[min(errors)]
    return out + [results[i] for i in range(1, total)]


_FORKED: tuple[Callable[[Any], Any], Sequence[Any]] | None = None  # (fn, items) a forked worker inherits


def _forked_piece(i: int) -> Any:
    if _FORKED is None:  # set before the pool forks its workers: only a non-fork start gets here
        raise RuntimeError("a forked piece ran in a worker that was not forked")
    fn, items = _FORKED
    return fn(items[i])
