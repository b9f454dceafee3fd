"""The machine catalog: bundled `catalogs/machines/*.json` entries and user files in that schema.

Why one module: a machine description comes from a stranger's file or from the catalog, and
both go through the same bounded read and the same schema check (every key typed and ranged,
every figure with its public source) before a Machine is built from it. Detection
(machine_detect.py) asks the catalog for a detected device's bandwidth and FLOP/s figures
through `match_catalog`. Catalog machines never touch torch or subprocesses.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core.constants import MACHINE_JSON_MAX_BYTES, catalog_dir
from ..core.errors import ConfigError, MachineError
from ..core.jsonio import read_json
from .machine import FLOP_DTYPES, KINDS, MAX_DEVICES, Device, Machine

SOURCE_KEYS = ("memory", "bandwidth", "flops")
REQUIRED_KEYS = ("name", "display_name", "kind", "vendor", "memory_bytes", "devices", "bandwidth_bytes_per_s",
                 "peak_flops", "usable_fraction", "sources")
# host_bandwidth_bytes_per_s, gpu_cores, memory_type: each with its own sources entry
OPTIONAL_KEYS = ("device_names", "notes", "interconnect", "host_bandwidth_bytes_per_s", "gpu_cores", "memory_type",
                 "gpu_family", "gpu_tier", "dies")
MEMORY_TYPES = ("hbm", "gddr", "lpddr", "ddr")
GPU_TIERS = ("base", "pro", "max", "ultra")
MAX_DIES = 8


def machines_dir() -> Path:
    return catalog_dir() / "machines"


def _bad(origin: str, what: str, expected: str, got: Any) -> MachineError:
    return MachineError(f"Cannot read machine from '{origin}': {what} (expected {expected}, got {got!r}). "
                        f"Fix the file or see catalogs/machines/*.json for the schema.")


def _int_field(entry: Mapping[str, Any], key: str, origin: str, *, maximum: int = 1 << 60) -> int:
    v = entry.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= maximum:
        raise _bad(origin, f"'{key}' must be an integer in 1..{maximum}", "an integer", v)
    return v


def validate_entry(entry: Any, origin: str) -> dict[str, Any]:
    """Check one machine description against the catalog schema (docs/fit.md).

    Args:
        entry: the parsed JSON object.
        origin: where it came from, for messages.

    Returns:
        The entry itself, unchanged.

    Raises:
        MachineError: a key is missing, of the wrong type, out of range, or a figure has no source.
    """
    if not isinstance(entry, dict):
        raise _bad(origin, "the top level must be an object", "a JSON object", type(entry).__name__)
    missing = [k for k in REQUIRED_KEYS if k not in entry]
    if missing:
        raise _bad(origin, f"missing keys {', '.join(missing)}", "all of " + ", ".join(REQUIRED_KEYS), sorted(entry))
    unknown = sorted(set(entry) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS))
    if unknown:
        raise _bad(origin, f"unknown keys {', '.join(unknown)}", "only the schema's keys", unknown)
    for key in ("name", "display_name", "vendor"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise _bad(origin, f"'{key}' must be a non-empty string", "a string", entry[key])
    if entry["kind"] not in KINDS:
        raise _bad(origin, "'kind' is not a known kind", " | ".join(KINDS), entry["kind"])
    if (entry["vendor"].strip().lower() == "apple") != (entry["kind"] == "apple"):  # Apple silicon is its own kind
        raise _bad(origin, f"vendor '{entry['vendor']}' does not make a '{entry['kind']}' machine",
                   "vendor apple with kind apple, another vendor with gpu or cpu", entry["vendor"])
    _int_field(entry, "memory_bytes", origin)
    _int_field(entry, "devices", origin, maximum=MAX_DEVICES)
    _int_field(entry, "bandwidth_bytes_per_s", origin)
    flops = entry["peak_flops"]
    if not isinstance(flops, dict) or set(flops) != set(FLOP_DTYPES):
        raise _bad(origin, "'peak_flops' must name exactly " + ", ".join(FLOP_DTYPES), "an object",
                   sorted(flops) if isinstance(flops, dict) else flops)
    for k, v in flops.items():
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise _bad(origin, f"peak_flops.{k} must be a positive integer or null", "FLOP/s", v)
    if all(v is None for v in flops.values()):
        raise _bad(origin, "'peak_flops' has no figure at all", "at least one dtype", flops)
    frac = entry["usable_fraction"]
    if frac is not None and (not isinstance(frac, (int, float)) or isinstance(frac, bool) or not 0 < frac <= 1):
        raise _bad(origin, "'usable_fraction' must be in (0, 1] or null", "a fraction", frac)
    if entry["kind"] != "gpu" and frac is None:
        raise _bad(origin, f"a '{entry['kind']}' machine needs a usable_fraction", "a fraction", frac)
    sources = entry["sources"]
    need = [*SOURCE_KEYS, *(["usable_fraction"] if frac is not None else [])]
    if not isinstance(sources, dict) or any(not isinstance(sources.get(k), str) or not sources[k].strip()
                                            for k in need):
        raise _bad(origin, "'sources' must give a non-empty source for " + ", ".join(need), "strings", sources)
    link = entry.get("interconnect")
    if link is not None:
        ok = (isinstance(link, dict) and set(link) == {"bytes_per_s", "latency_s"}
              and isinstance(link["bytes_per_s"], int) and not isinstance(link["bytes_per_s"], bool)
              and 0 < link["bytes_per_s"] <= 1 << 60 and isinstance(link["latency_s"], (int, float))
              and not isinstance(link["latency_s"], bool) and 0 <= link["latency_s"] < 1)
        if not ok:
            raise _bad(origin, "'interconnect' must be {bytes_per_s: positive int, latency_s: seconds in [0, 1)}",
                       "an object", link)
        if not isinstance(sources.get("interconnect"), str) or not sources["interconnect"].strip():
            raise _bad(origin, "'sources' must give a source for interconnect", "a string", sources)
    if entry.get("host_bandwidth_bytes_per_s") is not None:
        _int_field(entry, "host_bandwidth_bytes_per_s", origin)
        if not isinstance(sources.get("host_bandwidth"), str) or not sources["host_bandwidth"].strip():
            raise _bad(origin, "'host_bandwidth_bytes_per_s' needs sources.host_bandwidth", "a string", sources)
    cores = entry.get("gpu_cores")
    if cores is not None:
        if not isinstance(cores, int) or isinstance(cores, bool) or not 0 < cores <= 4096:
            raise _bad(origin, "'gpu_cores' must be a whole number of GPU cores in 1..4096", "an int", cores)
        if not isinstance(sources.get("gpu_cores"), str) or not sources["gpu_cores"].strip():
            raise _bad(origin, "'gpu_cores' needs sources.gpu_cores", "a string", sources)
    mem = entry.get("memory_type")
    if mem is not None:
        if mem not in MEMORY_TYPES:
            raise _bad(origin, f"'memory_type' must be one of {', '.join(MEMORY_TYPES)}", "a string", mem)
        if not isinstance(sources.get("memory_type"), str) or not sources["memory_type"].strip():
            raise _bad(origin, "'memory_type' needs sources.memory_type", "a string", sources)
    _check_gpu_class(entry, sources, origin)
    names = entry.get("device_names", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _bad(origin, "'device_names' must be a list of strings", "a list", names)
    notes = entry.get("notes") or []
    if not (isinstance(notes, str) or (isinstance(notes, list) and all(isinstance(n, str) for n in notes))):
        raise _bad(origin, "'notes' must be a string or a list of strings", "text", notes)
    return entry


def _check_gpu_class(entry: Mapping[str, Any], sources: Mapping[str, Any], origin: str) -> None:
    """gpu_family (a lower-case slug such as 'apple-m2'), gpu_tier (GPU_TIERS) and dies (1..MAX_DIES), each sourced."""
    checks = (("gpu_family", lambda v: isinstance(v, str) and v.strip() == v and 0 < len(v) <= 40
               and v.replace("-", "").isalnum() and v == v.lower(), "a lower-case slug such as 'apple-m2'"),
              ("gpu_tier", lambda v: v in GPU_TIERS, f"one of {', '.join(GPU_TIERS)}"),
              ("dies", lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_DIES,
               f"a whole number of dies in 1..{MAX_DIES}"))
    for key, ok, expected in checks:
        if entry.get(key) is None:
            continue
        if not ok(entry[key]):
            raise _bad(origin, f"'{key}' must be {expected}", expected, entry[key])
        if not isinstance(sources.get(key), str) or not sources[key].strip():
            raise _bad(origin, f"'{key}' needs sources.{key}", "a string", sources)


def machine_from_entry(entry: Mapping[str, Any], origin: str, kind_of_origin: str = "catalog") -> Machine:
    """Build a Machine from a validated entry: `devices` identical devices."""
    e = validate_entry(dict(entry), origin)
    frac = float(e["usable_fraction"]) if e["usable_fraction"] is not None else None
    n = e["devices"]
    prefix = f"{n} x "
    dev_name = e["display_name"][len(prefix):] if n > 1 and e["display_name"].startswith(prefix) else e["display_name"]
    devs = tuple(Device(i, dev_name, e["kind"], e["memory_bytes"], None, frac) for i in range(n))
    notes = (e["notes"],) if isinstance(e.get("notes"), str) else tuple(e.get("notes") or ())
    return Machine(name=e["name"], display_name=e["display_name"], kind=e["kind"], vendor=e["vendor"],
                   devices=devs, bandwidth_bytes_per_s=e["bandwidth_bytes_per_s"], peak_flops=e["peak_flops"],
                   usable_fraction=frac, sources=e["sources"], origin=kind_of_origin, notes=notes,
                   device_names=tuple(e.get("device_names", [])),
                   interconnect=(e["interconnect"]["bytes_per_s"], float(e["interconnect"]["latency_s"]))
                   if e.get("interconnect") else None,
                   host_bandwidth_bytes_per_s=e.get("host_bandwidth_bytes_per_s"), gpu_cores=e.get("gpu_cores"),
                   memory_type=e.get("memory_type"), gpu_family=e.get("gpu_family"), gpu_tier=e.get("gpu_tier"),
                   dies=e.get("dies") or 1)


def read_entry(path: str | Path) -> dict[str, Any]:
    """Read and validate one machine JSON file (bounded read).

    Raises:
        MachineError: unreadable, too large, not JSON, or not the schema.
    """
    try:
        data = read_json(path, max_bytes=MACHINE_JSON_MAX_BYTES, what="machine file")
    except ConfigError as e:
        raise MachineError(str(e)) from e
    return validate_entry(data, str(path))


@lru_cache(maxsize=4)
def _catalog(directory: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    d = Path(directory)
    paths = sorted(d.glob("*.json")) if d.is_dir() else []
    if not paths:
        # A missing or empty machine catalog is a broken install (or a wrong SPEC_PLANNER_CATALOG).
        reason = "no *.json files in it" if d.is_dir() else "no such directory"
        raise MachineError(f"Cannot read the machine catalog from '{directory}': {reason} (expected the bundled "
                           f"catalogs/machines/*.json). Reinstall spec-planner, or point SPEC_PLANNER_CATALOG at a "
                           f"directory holding models/ and machines/.")
    return tuple((p.stem, read_entry(p)) for p in paths)


def catalog_entries() -> dict[str, dict[str, Any]]:
    """Every bundled machine entry by slug (file name = entry name, checked)."""
    out: dict[str, dict[str, Any]] = {}
    for stem, entry in _catalog(str(machines_dir())):
        if entry["name"] != stem:
            raise MachineError(f"Cannot use catalog file '{stem}.json': its name is '{entry['name']}' "
                               f"(expected '{stem}'). Rename the file or the entry.")
        out[stem] = entry
    return out


def match_catalog(name: str, memory_bytes: int) -> dict[str, Any] | None:
    """The catalog entry whose `device_names` holds `name` with the nearest memory (within 10%)."""
    want = name.strip().lower()
    best: tuple[float, dict[str, Any]] | None = None
    for entry in catalog_entries().values():
        if entry["devices"] != 1 or want not in (n.lower() for n in entry.get("device_names", [])):
            continue
        gap = abs(entry["memory_bytes"] - memory_bytes) / entry["memory_bytes"]
        if gap <= 0.1 and (best is None or gap < best[0]):
            best = (gap, entry)
    return best[1] if best else None
