"""Engine costs by engine version: which measured range a plan assumes, and `--engine-version` to choose.

Why a module: an engine's fixed cost per forward is host work (graph build, scheduling, sampling) that
the engine's own releases change. llama.cpp builds of 2024 built and allocated the compute graph on
every llama_decode (issue #5916); graph reuse (PR #14482, July 2025; on by default from PR #14959,
August 2025) skips both for a decode of the same shape. A fixed cost fitted on 2024 builds charges a
2026 build for work it no longer does, and calls a clear speed-up of a fast draft a slowdown.

Each version-dependent figure is a catalogs/calibration entry with a `versions` field: the scheme
(llama.cpp build numbers), what it was measured on, and the builds it is taken to hold for
(applies_from / applies_to, inclusive; null: open). A selected version picks the entry whose range
holds it; one in no range falls back to the base entry (the measured one) and says which range
that is. With no version selected the base entry is used and the plan says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from ..core.calibration import Calibration, entries
from ..core.errors import UsageError

LLAMACPP = "llama.cpp"
_BUILD = re.compile(r"^b?(\d{1,6})$")
_SELECTED: ContextVar[Mapping[str, int] | None] = ContextVar("engine_versions", default=None)


@dataclass(frozen=True)
class Choice:
    """The figure a plan uses for one versioned term: its entry and the sentence that says why."""

    entry: Calibration
    note: str


def parse(text: str | None, engine: str | None) -> dict[str, int]:
    """`--engine-version`: 'b8000' (a llama.cpp build), 'llama.cpp=b8000'; {} when not given.

    Raises:
        UsageError: not a llama.cpp build number, or an engine whose costs carry no version scheme.
    """
    if not text:
        return {}
    name, _, ver = text.rpartition("=")
    name = name.strip() or (engine if engine not in (None, "auto") else LLAMACPP)
    m = _BUILD.match(ver.strip().lower())
    if name != LLAMACPP:
        raise UsageError(f"Cannot use --engine-version {text!r}: only llama.cpp's costs carry the builds they were "
                         f"measured on (catalogs/calibration); {name}'s figures are used as measured.")
    if m is None:
        raise UsageError(f"Cannot use --engine-version {text!r}: expected a llama.cpp build number such as b8000 "
                         f"(llama-server --version prints it).")
    return {LLAMACPP: int(m.group(1))}


def current_key() -> tuple[tuple[str, int], ...]:
    """The versions selected now, as a hashable value (a memoised cost must key on what priced it)."""
    return tuple(sorted((_SELECTED.get() or {}).items()))


@contextmanager
def selected(choice: Mapping[str, int]) -> Iterator[None]:
    """Price every plan inside with these engine versions (a command sets it once around its work)."""
    token = _SELECTED.set(dict(choice))
    try:
        yield
    finally:
        _SELECTED.reset(token)


def fixed_cost(engine: str, machine_class: str) -> Choice | None:
    """The fixed cost per forward of `engine` on `machine_class` for the selected version (None: the term
    has no versioned entries there)."""
    base = entries().get((engine, machine_class, "forward_fixed_s"))
    if base is None or base.versions is None:
        return None
    alternatives = [e for e in entries().values() if e.engine == engine and e.machine_class == machine_class
                    and e.term.startswith("forward_fixed_s") and e.versions is not None]
    build = (_SELECTED.get() or {}).get(engine)
    if build is None:
        return Choice(base, f"assumes {_span(base)} (measured on {base.versions['measured']}); "
                            f"--engine-version selects another")
    holding = [e for e in alternatives if _holds(e, build)]
    if holding:
        e = holding[0]
        return Choice(e, f"build b{build}: {_span(e)} ({e.versions['why'] if e.versions else ''})")
    ranges = "; ".join(_span(e) for e in alternatives)
    return Choice(base, f"build b{build} lies in no catalogued range ({ranges}): falls back to {_span(base)} "
                        f"(measured on {base.versions['measured']})")


def _holds(e: Calibration, build: int) -> bool:
    v = e.versions or {}
    lo, hi = v.get("applies_from"), v.get("applies_to")
    return (lo is None or build >= lo) and (hi is None or build <= hi)


def _span(e: Calibration) -> str:
    v = e.versions or {}
    lo, hi = v.get("applies_from"), v.get("applies_to")
    what = f"{e.value * 1e3:.3g} ms per forward"
    if lo is None and hi is None:
        return f"{what}, every build"
    if lo is None:
        return f"{what} for builds up to b{hi}"
    if hi is None:
        return f"{what} for builds from b{lo}"
    return f"{what} for builds b{lo}-b{hi}"
