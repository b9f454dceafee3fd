"""Memoisation by value for the machine-independent part of a plan, with one reset.

Why: a fleet report prices every target on every machine, and most of that work does not depend
on the machine (acceptance priors, KV bytes of a spec at a context, the E(K) inversions). Computing
it once per value makes a 10-machine report cost little more than the per-machine part (issue #33).

Three kinds, all registered here so `clear()` empties every one (tests call it; so does
`engines.register`, since an engine's rules enter many memoised values by its name):

* `cached(maxsize)`: `functools.lru_cache` for pure functions of hashable values;
* `per_object(obj, key, compute)`: a value derived from one object (a ModelSpec: hashing its
  layers and tensors by value costs more than the work), keyed by identity. The table keeps the
  object alive beside its values, so an id is never reused while its entry stands; it is bounded
  (emptied whole when full: a report holds a few hundred specs);
* `per_pair(a, b, key, compute)`: a value of two such objects (a target and a draft), by both identities.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import lru_cache
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

PER_OBJECT_MAX = 4096  # objects with memoised values (a report: targets + drafts, a few hundred)

_CACHES: list[Any] = []
_PER_OBJECT: dict[int, tuple[Any, dict[Hashable, Any]]] = {}


def cached(maxsize: int = 4096) -> Callable[[F], F]:
    """`lru_cache(maxsize)` whose cache `clear()` empties (arguments must be hashable values)."""
    def wrap(fn: F) -> F:
        out = lru_cache(maxsize=maxsize)(fn)
        _CACHES.append(out)
        return out  # type: ignore[return-value]
    return wrap


def per_object(obj: Any, key: Hashable, compute: Callable[[], T]) -> T:
    """`compute()` once per (`obj` by identity, `key`); later calls return the same value.

    Only for values that are a pure function of `obj` (immutable) and `key`.
    """
    hit = _PER_OBJECT.get(id(obj))
    if hit is None or hit[0] is not obj:
        if len(_PER_OBJECT) >= PER_OBJECT_MAX:
            _PER_OBJECT.clear()
        hit = (obj, {})
        _PER_OBJECT[id(obj)] = hit
    table = hit[1]
    if key not in table:
        table[key] = compute()
    return table[key]


def per_pair(a: Any, b: Any, key: Hashable, compute: Callable[[], T]) -> T:
    """`compute()` once per (`a` by identity, `b` by identity, `key`): a value of two immutable objects
    (a target and a draft: their pairing verdicts, the draft's acceptance prior on that target).

    The table under `a` keeps `b` beside its value, so an id of `b` is never taken for another object.
    """
    table: dict[int, tuple[Any, T]] = per_object(a, ("per_pair", key), dict)
    hit = table.get(id(b))
    if hit is None or hit[0] is not b:
        hit = (b, compute())
        table[id(b)] = hit
    return hit[1]


def clear() -> None:
    """Forget every memoised value (tests; a newly registered engine)."""
    for c in _CACHES:
        c.cache_clear()
    _PER_OBJECT.clear()


def sizes() -> tuple[int, int]:
    """(values held by the lru caches, objects held by per_object): for tests and benchmarks."""
    return sum(c.cache_info().currsize for c in _CACHES), len(_PER_OBJECT)
