"""The machine profile file: its JSON form, validated reading (bounded, typed) and atomic saving.

Why its own module: a profile is untrusted input (`--profile` names any file), so reading is
bounded (size cap, regular files only), every field is typed and ranged, and each failure is
one ProfileError line naming the field; writing is atomic and never overwrites an input. The
schema is docs/probe.md; the data it holds is speed/profile.py.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, overload

from ..core import constants, jsonio
from ..core.atomic import atomic_write, note_input
from ..core.errors import ProfileError
from .profile import SCHEMA_VERSION, SEVERITIES, Finding, MeasuredAcceptance, ModelCurve, Profile


def curve_json(c: ModelCurve) -> dict[str, Any]:
    return {"id": c.id, "verify_s": list(c.verify_s), "step_s": c.step_s, "ratios": list(c.ratios),
            "method": c.method, "measured_n": list(c.measured_n), "rollback_s": c.rollback_s,
            "layers_timed": c.layers_timed, "layers_total": c.layers_total, "notes": list(c.notes)}


def acceptance_json(a: MeasuredAcceptance) -> dict[str, Any]:
    return {"alpha": a.alpha, "greedy_match": a.greedy_match, "per_position": list(a.per_position),
            "temperature": a.temperature, "prompts": a.prompts, "positions": a.positions,
            "alpha_std": a.alpha_std, "alpha_min": a.alpha_min, "alpha_max": a.alpha_max,
            "by_kind": dict(a.by_kind), "source": a.source}


def profile_json(p: Profile) -> dict[str, Any]:
    """The profile file / `planner probe --json` schema (docs/probe.md)."""
    return {"schema": p.schema, "device": p.device, "device_name": p.device_name, "backend": p.backend,
            "dtype": p.dtype, "context": p.context, "target": curve_json(p.target),
            "draft": curve_json(p.draft) if p.draft else None, "overhead_s": p.overhead_s,
            "overhead_parts": dict(p.overhead_parts),
            "acceptance": acceptance_json(p.acceptance) if p.acceptance else None,
            "diagnosis": [{"code": f.code, "severity": f.severity, "message": f.message, "value": f.value}
                          for f in p.diagnosis],
            "versions": dict(p.versions), "timestamp": p.timestamp, "budget_s": p.budget_s,
            "elapsed_s": p.elapsed_s, "notes": list(p.notes),
            **({"unreliable": p.unreliable} if p.unreliable else {})}  # the key only when set: older files match


class _Reader:
    """Typed field access over untrusted JSON; every failure is one ProfileError line."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, key: str, expected: str, got: Any) -> ProfileError:
        shown = repr(got)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return ProfileError(f"Cannot read profile from '{self.origin}': field '{key}' is invalid (expected "
                            f"{expected}, got {shown}). Re-run 'planner probe --out FILE' to write a fresh one.")

    def get(self, d: Mapping, key: str, path: str, *, optional: bool = False) -> Any:
        if key not in d:
            if optional:
                return None
            raise self.fail(f"{path}{key}", "a value", "nothing")
        return d[key]

    # obj/number/integer: a required field (optional=False, the default) is never None
    @overload
    def obj(self, d: Mapping, key: str, path: str = "", *, optional: Literal[False] = False) -> Mapping: ...
    @overload
    def obj(self, d: Mapping, key: str, path: str = "", *, optional: bool) -> Mapping | None: ...

    def obj(self, d: Mapping, key: str, path: str = "", *, optional: bool = False) -> Mapping | None:
        v = self.get(d, key, path, optional=optional)
        if v is None and optional:
            return None
        if not isinstance(v, dict):
            raise self.fail(f"{path}{key}", "an object", v)
        return v

    def text(self, d: Mapping, key: str, path: str = "", *, default: str | None = None) -> str:
        v = self.get(d, key, path, optional=default is not None)
        if v is None:
            return default or ""
        if not isinstance(v, str) or len(v) > 4096:
            raise self.fail(f"{path}{key}", "a string", v)
        return v

    @overload
    def number(self, d: Mapping, key: str, path: str = "", *, lo: float = 0.0, hi: float = math.inf,
               strict_lo: bool = False, optional: Literal[False] = False) -> float: ...
    @overload
    def number(self, d: Mapping, key: str, path: str = "", *, lo: float = 0.0, hi: float = math.inf,
               strict_lo: bool = False, optional: bool) -> float | None: ...

    def number(self, d: Mapping, key: str, path: str = "", *, lo: float = 0.0, hi: float = math.inf,
               strict_lo: bool = False, optional: bool = False) -> float | None:
        v = self.get(d, key, path, optional=optional)
        if v is None and optional:
            return None
        ok = jsonio.is_finite_number(v)
        ok = ok and (v > lo if strict_lo else v >= lo) and v <= hi
        if not ok:
            rng = f"{'>' if strict_lo else '>='} {lo:g}" + (f" and <= {hi:g}" if hi != math.inf else "")
            raise self.fail(f"{path}{key}", f"a finite number {rng}", v)
        return float(v)

    @overload
    def integer(self, d: Mapping, key: str, path: str = "", *, lo: int = 0,
                optional: Literal[False] = False) -> int: ...
    @overload
    def integer(self, d: Mapping, key: str, path: str = "", *, lo: int = 0, optional: bool) -> int | None: ...

    def integer(self, d: Mapping, key: str, path: str = "", *, lo: int = 0, optional: bool = False) -> int | None:
        v = self.get(d, key, path, optional=optional)
        if v is None and optional:
            return None
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            raise self.fail(f"{path}{key}", f"an integer >= {lo}", v)
        return v

    def numbers(self, d: Mapping, key: str, path: str = "", *, lo: float = 0.0, hi: float = math.inf,
                strict_lo: bool = True, min_len: int = 1, default: Sequence | None = None) -> tuple[float, ...]:
        v = self.get(d, key, path, optional=default is not None)
        if v is None:
            return tuple(default or ())
        if not isinstance(v, list) or not (min_len <= len(v) <= 4096):
            raise self.fail(f"{path}{key}", f"a list of {min_len} or more numbers", v)
        return tuple(self.number({f"{key}[{i}]": x}, f"{key}[{i}]", path, lo=lo, hi=hi, strict_lo=strict_lo)
                     for i, x in enumerate(v))

    def texts(self, d: Mapping, key: str, path: str = "") -> tuple[str, ...]:
        v = d.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise self.fail(f"{path}{key}", "a list of strings", v)
        return tuple(v)


def _curve_from(r: _Reader, d: Mapping, path: str, *, need_verify: bool) -> ModelCurve:
    # times within [PROBE_MIN_STEP_S, PROBE_MAX_STEP_S]: 1e-300 or 1e300 would overflow every ratio to inf
    lo, hi = constants.PROBE_MIN_STEP_S, constants.PROBE_MAX_STEP_S
    verify = r.numbers(d, "verify_s", path, lo=lo, hi=hi, strict_lo=False, default=None if need_verify else ())
    step = r.number(d, "step_s", path, lo=lo, hi=hi, optional=bool(verify))
    if step is None:
        step = verify[0]
    if not verify:
        verify = (step,)
    measured = tuple(int(x) for x in r.numbers(d, "measured_n", path, lo=1, strict_lo=False, min_len=0,
                                               default=()))
    return ModelCurve(id=r.text(d, "id", path), verify_s=verify, step_s=step,
                      method=r.text(d, "method", path, default="unknown"), measured_n=measured,
                      rollback_s=r.number(d, "rollback_s", path, hi=hi, optional=True) or 0.0,
                      layers_timed=r.integer(d, "layers_timed", path, optional=True),
                      layers_total=r.integer(d, "layers_total", path, optional=True),
                      notes=r.texts(d, "notes", path))


def _acceptance_from(r: _Reader, d: Mapping) -> MeasuredAcceptance:
    p = "acceptance."
    kinds = d.get("by_kind", {})
    if not isinstance(kinds, dict):
        raise r.fail(f"{p}by_kind", "an object", kinds)
    return MeasuredAcceptance(alpha=r.number(d, "alpha", p, hi=1.0), greedy_match=r.number(d, "greedy_match", p, hi=1.0),
                      per_position=r.numbers(d, "per_position", p, hi=1.0, strict_lo=False, min_len=0, default=()),
                      temperature=r.number(d, "temperature", p),
                      prompts=r.integer(d, "prompts", p, lo=1), positions=r.integer(d, "positions", p, lo=1),
                      alpha_std=r.number(d, "alpha_std", p, optional=True) or 0.0,
                      alpha_min=r.number(d, "alpha_min", p, hi=1.0, optional=True) or 0.0,
                      alpha_max=r.number(d, "alpha_max", p, hi=1.0, optional=True) or 0.0,
                      by_kind={str(k): r.number(kinds, k, f"{p}by_kind.", hi=1.0) for k in kinds},
                      source=r.text(d, "source", p, default="measured"))


def profile_from_json(data: Any, origin: str = "<profile>") -> Profile:
    """Validate a parsed profile JSON document and build the Profile.

    Raises:
        ProfileError: a field is missing, of the wrong type, or out of range (named in the message).
    """
    r = _Reader(origin)
    if not isinstance(data, dict):
        raise r.fail("(top level)", "a JSON object", type(data).__name__)
    schema = r.integer(data, "schema", optional=True) or SCHEMA_VERSION
    if schema > SCHEMA_VERSION:
        raise r.fail("schema", f"version <= {SCHEMA_VERSION} (upgrade spec-planner to read newer profiles)",
                     schema)
    target = _curve_from(r, r.obj(data, "target"), "target.", need_verify=True)
    dd = r.obj(data, "draft", optional=True)
    draft = _curve_from(r, dd, "draft.", need_verify=False) if dd is not None else None
    acc = r.obj(data, "acceptance", optional=True)
    diag = data.get("diagnosis", [])
    if not isinstance(diag, list):
        raise r.fail("diagnosis", "a list", diag)
    findings = []
    for i, f in enumerate(diag):
        if not isinstance(f, dict) or f.get("severity") not in SEVERITIES:
            raise r.fail(f"diagnosis[{i}]", f"an object with severity in {SEVERITIES}", f)
        findings.append(Finding(r.text(f, "code", f"diagnosis[{i}]."), f["severity"],
                                r.text(f, "message", f"diagnosis[{i}]."),
                                r.number(f, "value", f"diagnosis[{i}].", lo=-math.inf, optional=True)))
    parts = data.get("overhead_parts", {}) or {}
    versions = data.get("versions", {}) or {}
    if not isinstance(parts, dict):
        raise r.fail("overhead_parts", "an object", parts)
    if not isinstance(versions, dict) or not all(isinstance(v, str) for v in versions.values()):
        raise r.fail("versions", "an object of strings", versions)
    return Profile(device=r.text(data, "device"), device_name=r.text(data, "device_name", default="unknown"),
                   backend=r.text(data, "backend"), dtype=r.text(data, "dtype"),
                   context=r.integer(data, "context", lo=0), target=target, draft=draft,
                   overhead_s=r.number(data, "overhead_s", hi=constants.PROBE_MAX_STEP_S),
                   acceptance=_acceptance_from(r, acc) if acc is not None else None,
                   diagnosis=tuple(findings),
                   overhead_parts={str(k): r.number(parts, k, "overhead_parts.", hi=constants.PROBE_MAX_STEP_S)
                                   for k in parts},
                   versions={str(k): v for k, v in versions.items()},
                   timestamp=r.text(data, "timestamp", default="unknown"),
                   budget_s=r.number(data, "budget_s", optional=True),
                   elapsed_s=r.number(data, "elapsed_s", optional=True),
                   notes=r.texts(data, "notes"), schema=schema,
                   unreliable=r.text(data, "unreliable") if data.get("unreliable") is not None else None)


def read_bounded(path: Path, limit: int, what: str) -> bytes:
    """Read at most `limit` bytes of `path`, failing (not truncating) when the file is larger.

    Raises:
        ProfileError: missing, unreadable, or larger than `limit`.
    """
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read; a device never ends
            raise ProfileError(f"Cannot read {what} from '{path}': it is not a regular file (expected a file "
                               f"written by llama-bench or 'planner probe --out'). Check the path.")
        note_input(path)  # no output of this run may replace it (core/atomic.py)
        with open(path, "rb") as fh:
            data = fh.read(min(st.st_size, limit) + 1)  # read(n) allocates n bytes: ask for the size
    except OSError as e:
        raise ProfileError(f"Cannot read {what} from '{path}': {e.strerror or e} (expected a readable file). "
                           f"Check the path.") from e
    if len(data) > limit:
        raise ProfileError(f"Cannot read {what} from '{path}': the file is too large (expected at most "
                           f"{limit} bytes, got more). Pass the right file.")
    return data


def load_profile(path: str | Path) -> Profile:
    """Read and validate a machine profile written by `planner probe --out`.

    Args:
        path: the profile JSON file.

    Returns:
        The Profile.

    Raises:
        ProfileError: unreadable, too large, not JSON, or a field invalid (named in the message).

    Example:
        >>> load_profile("tests/fixtures/probe/profile-cpu.json").target.verify_s[:2]
        (0.0123, 0.0131)
    """
    p = Path(path)
    raw = read_bounded(p, constants.PROFILE_MAX_BYTES, "profile")
    try:
        data = jsonio.loads(raw.decode("utf-8"), allow_nonfinite=True)  # fields are checked by name below
    except (UnicodeDecodeError, ValueError, RecursionError) as e:  # 5000-digit ints, [[[[... nesting
        raise ProfileError(f"Cannot read profile from '{p}': it is not JSON ({e}) (expected the file written by "
                           f"'planner probe --out'). Re-run the probe.") from e
    return profile_from_json(data, str(p))


def save_profile(profile: Profile, path: str | Path, *, inputs: Sequence[str | Path] = ()) -> Path:
    """Write the profile atomically (temp file in the same folder + os.replace; planner.core.atomic).

    Args:
        profile: what to write.
        path: destination.
        inputs: files this run read (imported benchmarks, prompts): never overwritten.

    Returns:
        The path written.

    Raises:
        UsageError: the destination is one of the inputs, a directory, or cannot be written.
    """
    return atomic_write(path, json.dumps(profile_json(profile), indent=2) + "\n", inputs=inputs)
