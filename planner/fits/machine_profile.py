"""A saved machine profile: this host's measured figures, written once and read by `--machine auto`.

Why its own module: measuring a busy host twice gives two figures; reading the same saved figures
gives the same answer every run, in milliseconds. `planner machines detect --save` (and
`planner probe --save`) writes the measured figures with a hardware fingerprint (CPU model, core
count, RAM, GPU names) and the time; `--machine auto` applies them to the live detection (memory
and free memory stay live) when the fingerprint matches and the profile is younger than
MACHINE_PROFILE_MAX_AGE_S, else ignores it with a note. Where it lives: SPEC_PLANNER_PROFILE_DIR,
else the user's cache directory (platformdirs when installed, else the platform's convention).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.atomic import atomic_write
from ..core.constants import (
    FREE_MEMORY_STABLE_FRACTION,
    MACHINE_PROFILE_MAX_AGE_S,
    MACHINE_PROFILE_MAX_BYTES,
    MACHINE_PROFILE_NAME,
    PROBE_PROFILE_NAME,
    profile_dir_override,
)
from ..core.errors import PlannerError, UsageError
from ..core.jsonio import is_finite_number, parse_json
from .machine import Machine
from .measure_stats import Spread

SCHEMA = 1
APP = "spec-planner"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def profile_dir() -> Path:
    """SPEC_PLANNER_PROFILE_DIR, else platformdirs' user cache dir, else the convention it follows:
    ~/Library/Caches (macOS), %LOCALAPPDATA% (Windows), $XDG_CACHE_HOME or ~/.cache (elsewhere)."""
    forced = profile_dir_override()
    if forced:
        return Path(forced).expanduser()
    try:
        import platformdirs  # optional: a small pure-Python package many environments already have

        return Path(platformdirs.user_cache_dir(APP, appauthor=False))
    except ImportError:
        pass
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / APP
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local") / APP / "Cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / APP


def profile_path() -> Path:
    return profile_dir() / MACHINE_PROFILE_NAME


def saved_path(name: str = MACHINE_PROFILE_NAME) -> Path:
    """Where a saved profile goes, its directory made (the machine's, or PROBE_PROFILE_NAME for `probe --save`).

    Raises:
        UsageError: the directory cannot be made.
    """
    p = profile_dir() / name
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"Cannot save the profile in '{p.parent}': {e.strerror or e}. Set "
                         f"SPEC_PLANNER_PROFILE_DIR to a writable directory.") from e
    return p


def probe_path() -> Path:
    """Where `planner probe --save` writes the measured costs (read back with --profile)."""
    return saved_path(PROBE_PROFILE_NAME)


def fingerprint(m: Machine) -> dict[str, Any]:
    """What identifies the hardware the figures were measured on: device names, host RAM, cores."""
    return {"kind": m.kind, "devices": [d.name for d in m.devices], "device_memory_bytes": m.memory_bytes,
            "host_memory_bytes": m.host_memory_bytes, "cores": os.cpu_count() or 0}


def to_json(m: Machine, now: float) -> dict[str, Any]:
    """The profile document: the fingerprint and the measured machine figures with their spread."""
    return {"schema": SCHEMA, "fingerprint": fingerprint(m), "saved_unix": round(now, 3),
            "measured_at": m.measured_at or time.strftime(TIME_FORMAT, time.gmtime(now)),
            "bandwidth_bytes_per_s": m.bandwidth_bytes_per_s, "peak_flops": dict(m.peak_flops),
            "sources": {k: m.sources[k] for k in ("bandwidth", "flops") if k in m.sources},
            "contention": m.contention, "free_bytes": [d.free_bytes for d in m.devices],
            "measured": {k: {"median": s.median, "q1": s.q1, "q3": s.q3, "trials": s.trials, "kept": s.kept,
                             "seconds": s.seconds, "clock": s.clock} for k, s in m.measured.items()}}


def save(m: Machine, path: Path | None = None, now: float | None = None) -> Path:
    """Write `m`'s measured figures as this host's profile (atomically); returns the path.

    Raises:
        UsageError: the directory cannot be made or the file cannot be written.
    """
    p = path or profile_path()
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"Cannot save the machine profile in '{p.parent}': {e.strerror or e}. Set "
                         f"SPEC_PLANNER_PROFILE_DIR to a writable directory.") from e
    return atomic_write(p, json.dumps(to_json(m, time.time() if now is None else now), indent=1) + "\n")


def steady_free_memory(live: Machine, saved: Any) -> tuple[tuple[Any, ...], str]:
    """The live devices, each with the free memory saved in the profile where the live figure is within
    FREE_MEMORY_STABLE_FRACTION of the device's memory of it, and which devices kept the saved figure.

    Why: free memory is read live and churns by hundreds of MB between runs on a shared host; a byte-exact
    ledger would then print another headroom each run. A larger change (memory really taken) reads live."""
    if not isinstance(saved, list) or len(saved) != len(live.devices):
        return tuple(live.devices), ""
    out, kept = [], []
    for d, f in zip(live.devices, saved, strict=True):
        steady = (isinstance(f, int) and not isinstance(f, bool) and 0 <= f <= d.memory_bytes
                  and d.free_bytes is not None
                  and abs(d.free_bytes - f) <= FREE_MEMORY_STABLE_FRACTION * d.memory_bytes)
        out.append(replace(d, free_bytes=f) if steady else d)
        if steady:
            kept.append(f"device {d.index}")
    return tuple(out), ", ".join(kept)


def age_text(seconds: float) -> str:
    """A coarse age that stays the same over consecutive runs: under an hour, N hours, N days."""
    if seconds < 3600:
        return "under an hour old"
    if seconds < 48 * 3600:
        return f"{int(seconds // 3600)} h old"
    return f"{int(seconds // 86400)} days old"


def _spread(key: str, d: Any) -> Spread:
    if not isinstance(d, dict) or not all(is_finite_number(d.get(f)) for f in ("median", "q1", "q3", "seconds")) \
            or not all(isinstance(d.get(f), int) and d[f] >= 1 for f in ("trials", "kept")) \
            or not d["q1"] <= d["median"] <= d["q3"] or d["q1"] <= 0:
        raise ValueError(f"field 'measured.{key}'")
    return Spread(float(d["median"]), float(d["q1"]), float(d["q3"]), d["trials"], d["kept"],
                  float(d["seconds"]), str(d.get("clock", "?"))[:80])


def _parse(doc: dict[str, Any]) -> tuple[dict[str, Any], float, int, dict[str, Any], dict[str, Spread]]:
    """(fingerprint, saved_unix, bandwidth, peak_flops, measured) of a profile document.

    Raises:
        ValueError: naming the first field that is missing or malformed."""
    if doc.get("schema") != SCHEMA:
        raise ValueError("field 'schema'")
    fp, saved, bw, flops = doc.get("fingerprint"), doc.get("saved_unix"), doc.get("bandwidth_bytes_per_s"), \
        doc.get("peak_flops")
    if not isinstance(fp, dict):
        raise ValueError("field 'fingerprint'")
    if not is_finite_number(saved):
        raise ValueError("field 'saved_unix'")
    if not isinstance(bw, int) or bw <= 0:
        raise ValueError("field 'bandwidth_bytes_per_s'")
    if not isinstance(flops, dict) or not all(v is None or (isinstance(v, int) and v > 0) for v in flops.values()):
        raise ValueError("field 'peak_flops'")
    measured = doc.get("measured") or {}
    if not isinstance(measured, dict):
        raise ValueError("field 'measured'")
    return fp, float(saved), bw, flops, {str(k)[:40]: _spread(k, v) for k, v in measured.items()}


def _read(p: Path) -> dict[str, Any]:
    """The profile's JSON object, read bounded (MACHINE_PROFILE_MAX_BYTES). Not registered as an input of
    this run (core/atomic.py): re-saving the profile after reading it is what `--save` is for.

    Raises:
        ValueError: too large, unreadable or not a JSON object (the message names why)."""
    try:
        with p.open("rb") as fh:
            data = fh.read(MACHINE_PROFILE_MAX_BYTES + 1)
    except OSError as e:
        raise ValueError(e.strerror or "unreadable") from e
    if len(data) > MACHINE_PROFILE_MAX_BYTES:
        raise ValueError(f"over {MACHINE_PROFILE_MAX_BYTES} bytes")
    doc = parse_json(data, str(p))
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    return doc


def apply_saved(live: Machine, path: Path | None = None, now: float | None = None) -> tuple[Machine | None, str]:
    """The live detection with the saved profile's measured figures, or (None, why it was not used).

    Ignored, with the reason: no profile, an unreadable one, another host's (fingerprint), or one older
    than MACHINE_PROFILE_MAX_AGE_S."""
    p = path or profile_path()
    if not p.is_file():
        return None, f"no saved machine profile at {p}"
    try:
        doc = _read(p)
        fp, saved, bw, flops, measured = _parse(doc)
    except (PlannerError, ValueError) as e:
        return None, f"ignored the machine profile {p}: unreadable ({e}); re-save it with 'planner machines " \
                     f"detect --save'"
    now = time.time() if now is None else now
    if fp != fingerprint(live):
        diff = sorted(k for k in set(fp) | set(fingerprint(live)) if fp.get(k) != fingerprint(live).get(k))
        return None, f"ignored the machine profile {p}: measured on other hardware ({', '.join(diff)} differ)"
    age = now - saved
    if age > MACHINE_PROFILE_MAX_AGE_S or age < -60:
        return None, (f"ignored the machine profile {p}: {age_text(max(age, 0.0))} (limit "
                      f"{MACHINE_PROFILE_MAX_AGE_S // 86400} days, or saved in the future); re-measure with "
                      f"'planner machines detect --save'")
    when = str(doc.get("measured_at") or "")[:32]
    sources = doc.get("sources")
    if not isinstance(sources, dict):
        sources = {}
    label = f"saved profile {p}, measured {when} ({age_text(age)})"
    merged = {**live.sources, **{k: f"{str(v)[:300]}; from the {label}" for k, v in sources.items()
                                 if k in ("bandwidth", "flops")}}
    notes = (*(n for n in live.notes if "not in the catalog" not in n), f"machine figures from the {label}")
    busy = doc.get("contention") if isinstance(doc.get("contention"), str) else None
    devices, kept = steady_free_memory(live, doc.get("free_bytes"))
    if kept:
        notes = (*notes, f"free memory of {kept} as saved in the profile (live within "
                         f"{FREE_MEMORY_STABLE_FRACTION:.0%} of its memory: the same answer every run)")
        merged = {**merged, "memory": f"{merged.get('memory', 'detected')}; free memory as saved in the {label}"}
    return replace(live, devices=devices, bandwidth_bytes_per_s=bw, peak_flops={**dict(live.peak_flops), **flops}, sources=merged,
                   notes=notes, measured=measured, measured_at=when or None, contention=busy and busy[:300],
                   profile_path=str(p)), label
