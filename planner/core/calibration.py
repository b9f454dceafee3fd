"""Fitted constants as data: `catalogs/calibration/*.json`, one entry per constant with the rows it came from.

Why: a number fitted on published measurements (an engine's achieved bandwidth share, a fixed cost per
forward, a format factor) is only as good as the rows behind it, and a benchmark that scores the same
rows again is in-sample. Each entry says its key (engine, machine class, term), value, unit, how it was
fitted, the ids of the rows it was fitted on (rows of benchmarks/data/published_*.json, or points quoted
in the entry), the rows held out from it, and its source. Engine files and speed/ read values here and
keep only behaviour; `tests/test_calibration.py` re-derives every entry from its points, and the
benchmarks mark a row in-sample when any entry lists it.

The calibration is the package's own (the code's numbers moved to data), so it is always read from the
bundled catalogs, never from a SPEC_PLANNER_CATALOG override (which replaces what users may edit:
machines, models, pairs).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .constants import _bundled_catalog_dir
from .errors import ConfigError
from .jsonio import is_finite_number, read_json_object

ANY = "any"  # machine class of a constant that holds on every machine the engine runs on
# How an entry's value follows from its points (tests/test_calibration.py re-derives each):
#   formula   a closed form over named inputs (each input a published figure), rounded as stated
#   median, mean   of the per-row values in `points`
#   equal_to  assumed equal to another entry (an engine without its own measurement)
#   two_point the (share, fixed cost) fit t = bytes / (share x peak) + fixed on a small and a large model
#   implied_share  share = streamed bytes / (peak x (1/t - overhead)) of the rows, then median
#   assumed   a stated assumption with no data to fit (fit.reason says why; fit.at names the code or catalog
#             number it stands for where the code keeps its own copy): nothing to re-derive, so it is no fit
FIT_METHODS = ("formula", "median", "mean", "equal_to", "two_point", "implied_share", "assumed")
_FIELDS = ("engine", "machine_class", "term", "value", "unit", "fit", "rows", "held_out", "source")
_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Calibration:
    """One fitted constant: its key, value and unit, how it was fitted, on which rows, and its source."""

    engine: str
    machine_class: str
    term: str
    value: float
    unit: str
    fit: dict[str, Any]
    rows: tuple[str, ...]
    held_out: tuple[str, ...]
    source: str
    dependent: tuple[str, ...] = ()  # rows of the same setup as a fitted row (same paper, GPU, model): not independent
    # the engine versions the figure was measured on and the ones it is taken to hold for (engines/versions.py):
    # {"scheme", "measured", "applies_from", "applies_to", "why"}; None: not recorded
    versions: dict[str, Any] | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.engine, self.machine_class, self.term)

    @property
    def method(self) -> str:
        return str(self.fit["method"])


def _entry(raw: Any, origin: str) -> Calibration:
    if not isinstance(raw, dict) or any(f not in raw for f in _FIELDS):
        raise ConfigError(f"Cannot read calibration entry in '{origin}': expected the fields {', '.join(_FIELDS)} "
                          f"(got {sorted(raw) if isinstance(raw, dict) else type(raw).__name__}).", origin)
    fit, value = raw["fit"], raw["value"]
    if not is_finite_number(value) or not isinstance(fit, dict) or fit.get("method") not in FIT_METHODS:
        raise ConfigError(f"Cannot read calibration entry {raw['engine']}/{raw['machine_class']}/{raw['term']} in "
                          f"'{origin}': value must be a number and fit.method one of {', '.join(FIT_METHODS)}.",
                          origin)
    return Calibration(str(raw["engine"]), str(raw["machine_class"]), str(raw["term"]), float(value),
                       str(raw["unit"]), fit, tuple(map(str, raw["rows"])), tuple(map(str, raw["held_out"])),
                       str(raw["source"]), tuple(map(str, raw.get("dependent", ()))), _versions(raw, origin))


def _versions(raw: dict[str, Any], origin: str) -> dict[str, Any] | None:
    """An entry's version range, checked: a scheme, what it was measured on, integer bounds or null."""
    v = raw.get("versions")
    if v is None:
        return None
    bounds = (v.get("applies_from"), v.get("applies_to")) if isinstance(v, dict) else ()
    if not isinstance(v, dict) or not isinstance(v.get("scheme"), str) or not isinstance(v.get("measured"), str) \
            or any(b is not None and (not isinstance(b, int) or isinstance(b, bool)) for b in bounds):
        raise ConfigError(f"Cannot read calibration entry {raw['engine']}/{raw['machine_class']}/{raw['term']} in "
                          f"'{origin}': versions must give scheme and measured (text) and applies_from / applies_to "
                          f"(integers or null).", origin)
    return v


@lru_cache(maxsize=1)
def entries() -> dict[tuple[str, str, str], Calibration]:
    """Every calibration entry, keyed by (engine, machine class, term), from all files in the folder.

    Raises:
        ConfigError: an unreadable file, a malformed entry or a key given twice.
    """
    out: dict[tuple[str, str, str], Calibration] = {}
    for path in sorted((_bundled_catalog_dir() / "calibration").glob("*.json")):
        for raw in read_json_object(path, max_bytes=_MAX_BYTES, what="calibration file").get("entries", []):
            e = _entry(raw, str(path))
            if e.key in out:
                raise ConfigError(f"Cannot read '{path}': calibration key {'/'.join(e.key)} is given twice.", path)
            out[e.key] = e
    return out


def get(engine: str, machine_class: str, term: str) -> Calibration:
    """The entry for (engine, machine class, term).

    Raises:
        ConfigError: no such entry (a code path asks for a constant the catalog does not hold).
    """
    e = entries().get((engine, machine_class, term))
    if e is None:
        raise ConfigError(f"Cannot find calibration {engine}/{machine_class}/{term} in catalogs/calibration/.",
                          "catalogs/calibration")
    return e


def value(engine: str, machine_class: str, term: str) -> float:
    """The fitted value of (engine, machine class, term)."""
    return get(engine, machine_class, term).value


def sourced(engine: str, machine_class: str, term: str) -> tuple[float, str]:
    """(value, source): the shape the Engine's share and factor tables hold."""
    e = get(engine, machine_class, term)
    return e.value, e.source
