"""Machine profiles: measured cost curves (and acceptance), their file format and their diagnosis.

Why torch-free: `planner probe` writes a profile once, on the machine that matters; `recommend`,
`check`, `report` and the speed model read it anywhere, without torch. The diagnosis functions
are pure arithmetic over the measured numbers so the speed model can reuse them.

Speed model terms (DESIGN.md "Speed model"): t_v(n) is one target forward of n new tokens of one
sequence over a KV prefix of the deployment context, t_d one draft step, t_o the per-round overhead
(sampling, comparison, cache rollback). One round with K drafted tokens costs
K*t_d + t_v(K+1) + t_o and yields E(K) = (1 - alpha^(K+1)) / (1 - alpha) tokens.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..core import constants, jsonio
from ..core.errors import ProfileError
from . import model as speed

SCHEMA_VERSION = 1
SEVERITIES = ("ok", "info", "warning", "problem")


@dataclass(frozen=True)
class ModelCurve:
    """Measured cost of one model on one machine.

    `verify_s[n-1]` = t_v(n), seconds for one forward of n new tokens of one sequence at the
    profile's context; `step_s` = one decode step (t_v(1) for a target, t_d for a draft).
    `method`: synthetic (all layers instantiated), synthetic-extrapolated (a few layers timed,
    scaled by layer count), real (transformers, real weights) or imported:<tool>.
    `measured_n` lists the n actually measured when the others were interpolated (empty = all).
    """

    id: str
    verify_s: tuple[float, ...]
    step_s: float
    method: str
    measured_n: tuple[int, ...] = ()
    rollback_s: float = 0.0
    layers_timed: int | None = None
    layers_total: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def ratios(self) -> tuple[float, ...]:
        """t_v(n) / t_v(1) for n = 1..len(verify_s)."""
        return verify_ratios(self.verify_s)


@dataclass(frozen=True)
class Acceptance:
    """Measured acceptance of a draft against a target (teacher-forced, DESIGN.md "Probe").

    `alpha` = mean over positions of sum_x min(p(x), q(x)) at `temperature` (Leviathan et al.
    2023, = 1 - total variation); `greedy_match` = P(argmax q = argmax p); `per_position[k-1]`
    = a_k, the chance that drafted token k is accepted given tokens 1..k-1 were. The spread is
    over prompts (per-prompt alpha: std, min, max) and per prompt kind.
    """

    alpha: float
    greedy_match: float
    per_position: tuple[float, ...]
    temperature: float
    prompts: int
    positions: int
    alpha_std: float = 0.0
    alpha_min: float = 0.0
    alpha_max: float = 0.0
    by_kind: Mapping[str, float] = field(default_factory=dict)
    source: str = "measured"

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_kind", MappingProxyType(dict(self.by_kind)))


@dataclass(frozen=True)
class Finding:
    """One diagnosis: a stable `code`, a severity (ok/info/warning/problem), a sentence, the ratio."""

    code: str
    severity: str
    message: str
    value: float | None = None


@dataclass(frozen=True)
class Profile:
    """A machine profile: what `planner probe` measured and what later commands read."""

    device: str
    device_name: str
    backend: str
    dtype: str
    context: int
    target: ModelCurve
    draft: ModelCurve | None
    overhead_s: float
    acceptance: Acceptance | None = None
    diagnosis: tuple[Finding, ...] = ()
    overhead_parts: Mapping[str, float] = field(default_factory=dict)
    versions: Mapping[str, str] = field(default_factory=dict)
    timestamp: str = ""
    budget_s: float | None = None
    elapsed_s: float | None = None
    notes: tuple[str, ...] = ()
    schema: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        object.__setattr__(self, "overhead_parts", MappingProxyType(dict(self.overhead_parts)))
        object.__setattr__(self, "versions", MappingProxyType(dict(self.versions)))

    @property
    def max_k(self) -> int:
        """Largest K the target curve covers (t_v(K+1) measured)."""
        return len(self.target.verify_s) - 1


# --- diagnosis: pure functions over the measured numbers ------------------------------------

def verify_ratios(verify_s: Sequence[float]) -> tuple[float, ...]:
    """t_v(n) / t_v(1) for each n: 1.0 everywhere is perfectly batch-parallel verification."""
    return tuple(t / verify_s[0] for t in verify_s)


def verify_slope(verify_s: Sequence[float], n: int | None = None) -> float:
    """Extra cost per extra token, in target steps (speed.verify_slope); `n` defaults to the longest point.

    0 = flat (n tokens cost one step: memory-bound, batch-parallel), 1 = n tokens cost n steps
    (verification degenerates to sequential decoding).
    """
    n = n or len(verify_s)
    return speed.verify_slope(verify_s, n) if n >= 2 else 0.0


def draft_ratio(step_s: float, target_step_s: float) -> float:
    """c = t_d / t_v(1): the draft's step in units of the target's."""
    return step_s / target_step_s


def expected_tokens(alpha: float, k: int) -> float:
    """E(K), tokens per round incl. the bonus token: speed.expected_accepted (Leviathan 2023)."""
    return speed.expected_accepted(min(alpha, 1.0), k)


def expected_tokens_positional(per_position: Sequence[float], k: int) -> float:
    """E(K) = 1 + sum_{j<=K} prod_{i<=j} a_i from per-position acceptance (positions past the list: 0)."""
    return speed.expected_accepted(list(per_position[:k]), min(k, len(per_position)))


def round_speedup(verify_s: Sequence[float], step_s: float, overhead_s: float, k: int,
                  tokens: float) -> float:
    """speedup(K) = E(K) * t_v(1) / t_round(K), with t_round from speed.round_time_s."""
    return tokens * verify_s[0] / speed.round_time_s(k, verify_s, step_s, overhead_s)


def best_speedup(verify_s: Sequence[float], step_s: float, overhead_s: float, *,
                 alpha: float = 1.0, per_position: Sequence[float] | None = None) -> tuple[int, float]:
    """(K*, speedup(K*)) over K = 1..len(verify_s)-1, on the measured (possibly jagged) curve.

    With `per_position` the tokens per round use a_1..a_K (only K it covers); else alpha.
    alpha = 1 gives the ceiling: what perfect acceptance could reach on these costs.
    """
    best = (0, 0.0)
    k_max = len(verify_s) - 1
    if per_position:
        k_max = min(k_max, len(per_position))
    for k in range(1, k_max + 1):
        e = expected_tokens_positional(per_position, k) if per_position else expected_tokens(alpha, k)
        s = round_speedup(verify_s, step_s, overhead_s, k, e)
        if s > best[1]:
            best = (k, s)
    return best


def _verify_findings(curve: ModelCurve) -> list[Finding]:
    v = curve.verify_s
    n = len(v)
    if n < 2:
        return [Finding("verify_single_point", "info", "only t_v(1) was measured: batch-parallelism unknown")]
    r, s = v[-1] / v[0], verify_slope(v)
    ratio_txt = f"t_v({n})/t_v(1) = {r:.2f} (flat = 1.00, sequential = {n}.00, slope {s:.2f} step/token)"
    out = []
    if s >= constants.VERIFY_SLOPE_BAD:
        out.append(Finding("verify_not_parallel", "problem",
                           f"verification is not batch-parallel: {ratio_txt}; each drafted token costs about "
                           f"a target step, so speculation cannot pay on this backend (the quantised-Metal "
                           f"failure). Try f16/bf16 weights, another backend or kernel.", r))
    elif s >= constants.VERIFY_SLOPE_WARN:
        out.append(Finding("verify_partly_parallel", "warning",
                           f"verification is only partly batch-parallel: {ratio_txt}; large K will not pay.", r))
    else:
        out.append(Finding("verify_parallel", "ok", f"verification is batch-parallel: {ratio_txt}.", r))
    drops = [i + 1 for i in range(1, n) if v[i] < 0.9 * v[i - 1]]
    if drops:
        out.append(Finding("verify_jagged", "info",
                           f"the verify curve is jagged (t_v(n) falls >10% at n = {', '.join(map(str, drops))}): "
                           f"kernel choice changes with n; K is picked on the measured points.", None))
    return out


def _draft_findings(target: ModelCurve, draft: ModelCurve) -> list[Finding]:
    c = draft_ratio(draft.step_s, target.step_s)
    txt = f"t_d/t_v(1) = {c:.3f}"
    if c >= constants.DRAFT_RATIO_BAD:
        return [Finding("draft_too_slow", "problem",
                        f"the draft step is too slow against the target's: {txt} (speed-up is below 1/c = "
                        f"{1 / c:.2f}x even at perfect acceptance); pick a much smaller draft or a larger target.",
                        c)]
    if c >= constants.DRAFT_RATIO_WARN:
        return [Finding("draft_slow", "warning",
                        f"the draft step is slow against the target's: {txt}; speculation needs high acceptance.",
                        c)]
    return [Finding("draft_fast", "ok", f"the draft step is cheap against the target's: {txt}.", c)]


def diagnose(target: ModelCurve, draft: ModelCurve | None, overhead_s: float,
             acceptance: Acceptance | None = None) -> tuple[Finding, ...]:
    """Name the mechanism that makes speculation pay or not, from the measured ratios.

    Args:
        target: the target's curve (t_v(1..K+1)).
        draft: the draft's curve (its step t_d), or None when only the target was probed.
        overhead_s: per-round overhead t_o.
        acceptance: measured acceptance, if any; adds the expected speed-up at it.

    Returns:
        Findings, most fundamental first: verification parallelism, draft cost, the ceiling
        speed-up at perfect acceptance, and (with acceptance) the expected speed-up.
    """
    out = _verify_findings(target)
    if draft is None:
        return tuple(out)
    out += _draft_findings(target, draft)
    v = target.verify_s
    if len(v) >= 2:
        k, ceiling = best_speedup(v, draft.step_s, overhead_s, alpha=1.0)
        if ceiling < 1.0:
            out.append(Finding("slower_at_any_acceptance", "problem",
                               f"slower at any acceptance: even with every drafted token accepted the best is "
                               f"{ceiling:.2f}x (K={k}) on these costs.", ceiling))
        else:
            out.append(Finding("ceiling", "info",
                               f"ceiling at perfect acceptance: {ceiling:.2f}x (K={k}).", ceiling))
    if acceptance is not None and len(v) >= 2:
        pp = acceptance.per_position if acceptance.temperature > 0 else None
        k, s = best_speedup(v, draft.step_s, overhead_s, alpha=min(acceptance.alpha, 1.0), per_position=pp)
        sev = "ok" if s > 1.0 else "problem"
        code = "expected_speedup" if s > 1.0 else "acceptance_too_low"
        out.append(Finding(code, sev, f"at the measured acceptance (alpha {acceptance.alpha:.3f}) the best is "
                                      f"{s:.2f}x at K={k}.", s))
    return tuple(out)


# --- JSON form ------------------------------------------------------------------------------

def curve_json(c: ModelCurve) -> dict[str, Any]:
    return {"id": c.id, "verify_s": list(c.verify_s), "step_s": c.step_s, "ratios": list(c.ratios),
            "method": c.method, "measured_n": list(c.measured_n), "rollback_s": c.rollback_s,
            "layers_timed": c.layers_timed, "layers_total": c.layers_total, "notes": list(c.notes)}


def acceptance_json(a: Acceptance) -> dict[str, Any]:
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
            "elapsed_s": p.elapsed_s, "notes": list(p.notes)}


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


def _acceptance_from(r: _Reader, d: Mapping) -> Acceptance:
    p = "acceptance."
    kinds = d.get("by_kind", {})
    if not isinstance(kinds, dict):
        raise r.fail(f"{p}by_kind", "an object", kinds)
    return Acceptance(alpha=r.number(d, "alpha", p, hi=1.0), greedy_match=r.number(d, "greedy_match", p, hi=1.0),
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
                   notes=r.texts(data, "notes"), schema=schema)


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
    from ..core.atomic import atomic_write

    return atomic_write(path, json.dumps(profile_json(profile), indent=2) + "\n", inputs=inputs)
