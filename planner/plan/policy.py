"""The deployment policy for `planner check` / `planner report --config`: planner.toml or [tool.planner].

Why strict: a CI gate that silently ignores a misspelt key (`min_speedup` as
`min_speed_up`) passes deployments it should fail. Every key is known, typed and
checked; an error names the file, the deployment and the key, in one line.

Schema (docs/check.md):
    [defaults]                    # optional, applies to every deployment
    engine = "vllm"; context = 8192; machines = ["h100-sxm", "rtx-4090"]
    [[deployment]]
    name = "chat-14b"; target = "Qwen/Qwen2.5-14B-Instruct"; draft = "Qwen/Qwen2.5-1.5B-Instruct"
    engine = "vllm"; context = 8192; batch = 1; kv_dtype = "fp8"; weights_dtype = "int4"
    machine = "h100-sxm"          # or machines = [...], or gpu_memory = "80GiB" with gpus = 1
    tp = 1; k = 4; max_k = 8; acceptance = 0.7  # or "0.6-0.8", "greedy_match=0.8", "tau=2.8@4"
    profile = "probe.json"        # or profile = { "h100-sxm" = "h100.json" } (one per machine)
    [deployment.require]
    fits = true; min_headroom = "1GiB"; compatible = true; min_speedup = 1.1  # or "no_slowdown"
    max_crossover_below = 64  # speculation must still pay at 64 concurrent sequences
    max_total_memory = "60GiB"; speedup_estimate = "expected"  # or "pessimistic" (low end of the interval)
    # compatible = "allow_fallback": a heterogeneous-vocabulary fallback (vLLM TLI, transformers UAG) passes

Paths (profile) are relative to the policy file. Engine, KV dtype, weights dtype and acceptance
are validated here, so a typo fails at load with the key named, not halfway through a check.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import engines
from ..core import paths
from ..core.atomic import note_input
from ..core.constants import DEFAULT_CONTEXT, DEFAULT_MAX_K, JSON_MAX_BYTES
from ..core.errors import ConfigError, PlannerError, UsageError
from ..core.quant import parse_scheme
from ..core.units import parse_bytes, parse_tokens
from ..drafting import METHODS
from ..drafting.priors import WORKLOADS
from ..fits.memory import kv_format
from .acceptance_source import parse_acceptance

# A deployment without an engine runs what `--engine auto` picks on each of its machines (engines.default_engine:
# llama.cpp for a GGUF target, vLLM on GPUs, llama.cpp on Apple silicon and CPUs), as fit and recommend do.
AUTO_ENGINE = "auto"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEPLOYMENT_KEYS = {"name": str, "target": str, "draft": str, "engine": str, "context": (int, str), "batch": int,
                   "kv_dtype": str, "weights_dtype": str, "machine": str, "machines": list, "gpu_memory": (str, int),
                   "gpus": int, "tp": int, "pp": int, "utilization": float, "k": int, "acceptance": (float, str),
                   "profile": (str, dict), "temperature": float, "max_k": int, "require": dict,
                   "allow_estimates": bool, "method": str, "workload": str}
DEFAULT_KEYS = {k: v for k, v in DEPLOYMENT_KEYS.items() if k not in ("name", "target", "draft", "require")}
REQUIRE_KEYS = {"fits": bool, "min_headroom": (str, int), "compatible": (bool, str),
                "min_speedup": (float, int, str), "max_total_memory": (str, int), "speedup_estimate": str,
                "max_crossover_below": int}
ALLOW_FALLBACK = "allow_fallback"
SPEEDUP_ESTIMATES = ("expected", "pessimistic")


@dataclass(frozen=True)
class Requirements:
    fits: bool = True
    min_headroom_bytes: int = 0
    compatible: bool = True
    min_speedup: float | None = None  # None: not required; 1.0 for "no_slowdown"
    max_total_bytes: int | None = None
    allow_fallback: bool = False  # compatible = "allow_fallback": a vocabulary fallback passes
    speedup_estimate: str = "expected"  # "pessimistic": the low end of the acceptance interval
    # the deployment's peak concurrency: fail when speculation stops paying at or below it
    max_crossover_below: int | None = None


@dataclass(frozen=True)
class Deployment:
    name: str
    target: str
    draft: str | None = None
    engine: str = AUTO_ENGINE  # resolved per machine (plan/scenario.py)
    context: int = DEFAULT_CONTEXT
    batch: int = 1
    kv_dtype: str | None = None
    weights_dtype: str | None = None
    machines: tuple[str, ...] = ()
    gpu_memory_bytes: int | None = None
    gpus: int | None = None  # None: the machine's own device count (1 for gpu_memory alone)
    tp: int | None = None  # None: the engine's default layout over the machine's devices
    pp: int | None = None
    utilization: float | None = None
    k: int | None = None
    acceptance: float | str | None = None  # alpha, or the --acceptance text forms
    temperature: float = 0.0
    profile: str | None = None  # one profile for every machine (path resolved against the policy file)
    profiles: tuple[tuple[str, str], ...] = ()  # (machine, path) when profile is a table
    max_k: int = DEFAULT_MAX_K
    require: Requirements = field(default_factory=Requirements)
    # a memory requirement resting on a low-confidence figure (an unknown layout) passes only when set
    allow_estimates: bool = False
    method: str | None = None  # drafting method (drafting.METHODS); None: a draft model when `draft` is set
    workload: str | None = None  # chat | code | reasoning: the acceptance priors of n-gram lookup

    def profile_for(self, machine: str) -> str | None:
        """The profile measured on `machine` (a table entry), else the deployment-wide one."""
        return dict(self.profiles).get(machine, self.profile)


@dataclass(frozen=True)
class Policy:
    path: str
    deployments: tuple[Deployment, ...]
    found_above: bool = False  # found in a parent folder, not named: the CLI's first line says which file gates


def load_policy(path: str | Path | None = None) -> Policy:
    """Read planner.toml (or pyproject.toml's [tool.planner]); default: ./planner.toml, then ./pyproject.toml,
    then the same in each parent folder up to the repository root (the first folder with a .git), never
    the user's home or above it (a stray ~/planner.toml must not gate every job below it).

    Raises:
        ConfigError: missing file, invalid TOML, unknown key, wrong type or value; names file and key.
    """
    p = _find(path)
    try:
        size = p.stat().st_size
        if size > JSON_MAX_BYTES:  # refused before reading, not read whole and then measured
            raise ConfigError(f"Cannot read policy '{p}': {size} bytes is over the {JSON_MAX_BYTES}-byte limit.", p)
        note_input(p)  # no output of this run may replace it (core/atomic.py)
        with p.open("rb") as fh:
            raw = fh.read(size + 1)
    except OSError as e:
        raise ConfigError(f"Cannot read policy '{p}': {e.strerror or e}.", p) from e
    if len(raw) > JSON_MAX_BYTES:
        raise ConfigError(f"Cannot read policy '{p}': it grew past the {JSON_MAX_BYTES}-byte limit.", p)
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as e:  # TOMLDecodeError, UTF-8, 5000-digit ints, [[[[... nesting
        raise ConfigError(f"Cannot parse policy '{p}': invalid TOML ({e}).", p) from e
    if p.name == "pyproject.toml":
        tool = doc.get("tool")
        table = tool.get("planner") if isinstance(tool, dict) else None
        if not isinstance(table, dict):
            raise ConfigError(f"Cannot use '{p}': it has no [tool.planner] table. Add [[tool.planner.deployment]] "
                              f"entries or write a planner.toml.", p, key="tool.planner")
        doc = table
    policy = parse_policy(doc, str(p))
    return replace(policy, found_above=path is None and p.parent != Path("."))


def _find(path: str | Path | None) -> Path:
    if path is not None:
        p = Path(path)
        if not paths.is_file(p):  # a 300-byte name is "not found", not an OSError
            raise ConfigError(f"Cannot read policy '{p}': file not found.", p)
        return p
    here = Path.cwd()
    home = _home()
    for d in (here, *here.parents):  # like ruff and pytest: this folder, then its parents
        if d != here and home is not None and (d == home or home.is_relative_to(d)):
            break  # the user's home and what is above it hold no repository's policy
        if (d / "planner.toml").is_file():
            return _shown(d / "planner.toml", here)
        pyproject = d / "pyproject.toml"
        if pyproject.is_file() and _has_planner_table(pyproject):
            return _shown(pyproject, here)
        if (d / ".git").exists():
            break  # the repository's root: a policy above it belongs to something else
    if (here / "pyproject.toml").is_file():
        return Path("pyproject.toml")  # read, so the error names its missing [tool.planner] table
    raise ConfigError("Cannot find a policy: no planner.toml or pyproject.toml here or in a parent folder (up to "
                      "the repository root). Pass --config FILE.")


def _shown(p: Path, here: Path) -> Path:
    """The policy path as messages show it: relative to the working folder when below it."""
    return p.relative_to(here) if p.parent == here else p


def _home() -> Path | None:
    """The user's home as a real path, None when there is none (HOME unset, no passwd entry)."""
    try:
        return Path(os.path.realpath(Path.home()))
    except (RuntimeError, KeyError, OSError):
        return None


def _has_planner_table(p: Path) -> bool:
    """Whether a parent folder's pyproject.toml parses as TOML with a [tool.planner] table (bounded read).

    Why parse: a text match took a `# [tool.planner]` comment, or the words in a string, as a policy.
    """
    try:
        if p.stat().st_size > JSON_MAX_BYTES:
            return False
        with p.open("rb") as fh:
            doc = tomllib.loads(fh.read(JSON_MAX_BYTES + 1).decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # unreadable, not UTF-8, not TOML: not this folder's policy
        return False
    tool = doc.get("tool")
    return isinstance(tool, dict) and isinstance(tool.get("planner"), dict)


def parse_policy(doc: dict[str, Any], origin: str) -> Policy:
    """Validate a parsed TOML document into a Policy."""
    _keys(doc, {"deployment": list, "defaults": dict}, origin, "")
    defaults = doc.get("defaults", {})
    _keys(defaults, DEFAULT_KEYS, origin, "defaults.")
    items = doc.get("deployment")
    if not isinstance(items, list) or not items:
        raise ConfigError(f"Cannot use policy '{origin}': no [[deployment]] entries (expected at least one).",
                          origin, key="deployment")
    deployments, names = [], set()
    for i, item in enumerate(items):
        where = f"deployment[{i}]" if not isinstance(item, dict) or "name" not in item else \
            f"deployment '{item['name']}'"
        if not isinstance(item, dict):
            raise ConfigError(f"Cannot use policy '{origin}': {where} is not a table.", origin, key="deployment")
        d = _deployment(_merge(defaults, item), origin, where)
        if d.name in names:
            raise ConfigError(f"Cannot use policy '{origin}': two deployments are named '{d.name}'.", origin,
                              key="name")
        names.add(d.name)
        deployments.append(d)
    return Policy(path=origin, deployments=tuple(deployments))


def _merge(defaults: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """Defaults under the deployment's own keys; a deployment naming `machine` or `machines` replaces
    both of the defaults' (one machine list, never a union of the two)."""
    base = dict(defaults)
    if "machine" in item or "machines" in item:
        base.pop("machine", None)
        base.pop("machines", None)
    return {**base, **item}


def _keys(table: dict[str, Any], allowed: dict[str, Any], origin: str, prefix: str) -> None:
    for key, value in table.items():
        if key not in allowed:
            close = difflib.get_close_matches(key, list(allowed), n=1)
            hint = f" Did you mean '{prefix}{close[0]}'?" if close else f" Known keys: {', '.join(allowed)}."
            raise ConfigError(f"Cannot use policy '{origin}': unknown key '{prefix}{key}'.{hint}", origin,
                              key=prefix + key)
        want = allowed[key]
        ok = isinstance(value, want) and not (isinstance(value, bool) and bool not in _tuple(want))
        if float in _tuple(want) and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            names = " or ".join(t.__name__ for t in _tuple(want))
            raise ConfigError(f"Cannot use policy '{origin}': key '{prefix}{key}' must be {names} "
                              f"(got {value!r:.40}).", origin, key=prefix + key)


def _tuple(t: Any) -> tuple[type, ...]:
    return t if isinstance(t, tuple) else (t,)


def _deployment(d: dict[str, Any], origin: str, where: str) -> Deployment:
    _keys(d, DEPLOYMENT_KEYS, origin, "")
    for key in ("name", "target"):
        if not d.get(key):
            raise ConfigError(f"Cannot use policy '{origin}': {where} needs '{key}'.", origin, key=key)
    req = d.get("require", {})
    _keys(req, REQUIRE_KEYS, origin, "require.")

    def size(key: str, value: Any) -> int:
        try:
            return parse_bytes(value, what=key)
        except UsageError as e:
            raise ConfigError(f"Cannot use policy '{origin}': {where} {key}: {e}", origin, key=key) from e

    ms = req.get("min_speedup")
    if isinstance(ms, str):
        if ms != "no_slowdown":
            raise ConfigError(f"Cannot use policy '{origin}': {where} require.min_speedup must be a number or "
                              f"\"no_slowdown\" (got {ms!r}).", origin, key="require.min_speedup")
        ms = 1.0
    if ms is not None and not 0 < ms < float("inf"):  # TOML has nan and inf; neither is a speed-up
        raise ConfigError(f"Cannot use policy '{origin}': {where} require.min_speedup must be a positive finite "
                          f"number or \"no_slowdown\" (got {ms!r}).", origin, key="require.min_speedup")
    for key, lo, hi in (("batch", 1, 1 << 20), ("gpus", 1, 4096), ("tp", 1, 4096), ("pp", 1, 4096),
                        ("k", 1, 64), ("max_k", 1, 64)):
        if key in d and not lo <= d[key] <= hi:
            raise ConfigError(f"Cannot use policy '{origin}': {where} {key} must be between {lo} and {hi} "
                              f"(got {d[key]}).", origin, key=key)
    for key, low, high in (("acceptance", 0.0, 1.0), ("utilization", 0.01, 1.0), ("temperature", 0.0, 10.0)):
        if key in d and not isinstance(d[key], str) and not low <= float(d[key]) <= high:
            raise ConfigError(f"Cannot use policy '{origin}': {where} {key} must be between {low} and {high} "
                              f"(got {d[key]}).", origin, key=key)
    if "machine" in d and "machines" in d:
        raise ConfigError(f"Cannot use policy '{origin}': {where} sets both machine and machines (expected one; "
                          f"machines = [\"{d['machine']}\", ...] lists several).", origin, key="machines")
    machines = tuple(d.get("machines") or ([d["machine"]] if d.get("machine") else []))
    if not all(isinstance(m, str) and m for m in machines):
        raise ConfigError(f"Cannot use policy '{origin}': {where} machines must be a list of names.", origin,
                          key="machines")
    if not machines and "gpu_memory" not in d:
        raise ConfigError(f"Cannot use policy '{origin}': {where} names no machine (set machine, machines, or "
                          f"gpu_memory with gpus).", origin, key="machine")
    try:
        context = parse_tokens(d.get("context", DEFAULT_CONTEXT))
    except UsageError as e:
        raise ConfigError(f"Cannot use policy '{origin}': {where} context: {e}", origin, key="context") from e
    compatible = req.get("compatible", True)
    if isinstance(compatible, str) and compatible != ALLOW_FALLBACK:
        raise ConfigError(f"Cannot use policy '{origin}': {where} require.compatible must be true, false or "
                          f"\"{ALLOW_FALLBACK}\" (got {compatible!r}).", origin, key="require.compatible")
    estimate = req.get("speedup_estimate", SPEEDUP_ESTIMATES[0])
    if estimate not in SPEEDUP_ESTIMATES:
        raise ConfigError(f"Cannot use policy '{origin}': {where} require.speedup_estimate must be one of "
                          f"{', '.join(SPEEDUP_ESTIMATES)} (got {estimate!r}).", origin,
                          key="require.speedup_estimate")
    peak = req.get("max_crossover_below")
    if peak is not None and not 1 <= peak <= 1 << 20:
        raise ConfigError(f"Cannot use policy '{origin}': {where} require.max_crossover_below must be a "
                          f"concurrency between 1 and {1 << 20} (got {peak}).", origin,
                          key="require.max_crossover_below")
    if "k" in d and "max_k" in d and d["k"] > d["max_k"]:
        raise ConfigError(f"Cannot use policy '{origin}': {where} k = {d['k']} is above max_k = {d['max_k']} "
                          f"(expected k <= max_k).", origin, key="k")
    engine = _checked(origin, where, "engine", lambda: _engine(d.get("engine", AUTO_ENGINE)))
    for key, check in (("kv_dtype", lambda v: _kv(v, engine)), ("weights_dtype", _weights),
                       ("acceptance", _acceptance), ("method", lambda v: _one_of(v, METHODS, "method")),
                       ("workload", lambda v: _one_of(v, WORKLOADS, "workload"))):
        if key in d:
            _checked(origin, where, key, lambda check=check, key=key: check(d[key]))
    profile, profiles = _profiles(d.get("profile"), origin, where)
    requirements = Requirements(
        fits=req.get("fits", True), min_headroom_bytes=size("require.min_headroom", req.get("min_headroom", 0)),
        compatible=bool(compatible), min_speedup=float(ms) if ms is not None else None,
        max_total_bytes=size("require.max_total_memory", req["max_total_memory"]) if "max_total_memory" in req
        else None, allow_fallback=compatible == ALLOW_FALLBACK, speedup_estimate=estimate,
        max_crossover_below=peak)
    return Deployment(
        name=str(d["name"]), target=str(d["target"]), draft=d.get("draft"), engine=engine,
        context=context, batch=d.get("batch", 1), kv_dtype=d.get("kv_dtype"), weights_dtype=d.get("weights_dtype"),
        machines=machines, gpu_memory_bytes=size("gpu_memory", d["gpu_memory"]) if "gpu_memory" in d else None,
        gpus=d.get("gpus"), tp=d.get("tp"), pp=d.get("pp"), utilization=d.get("utilization"),
        k=d.get("k"), acceptance=d.get("acceptance"), temperature=float(d.get("temperature", 0.0)),
        profile=profile, profiles=profiles, max_k=d.get("max_k", DEFAULT_MAX_K), require=requirements,
        allow_estimates=d.get("allow_estimates", False), method=d.get("method"), workload=d.get("workload"))


def _checked(origin: str, where: str, key: str, fn: Any) -> Any:
    """Run a validator; its PlannerError becomes one ConfigError line naming the deployment and key."""
    try:
        return fn()
    except PlannerError as e:
        raise ConfigError(f"Cannot use policy '{origin}': {where} {key}: {e}", origin, key=key) from e


def _one_of(value: str, allowed: Collection[str], what: str) -> None:
    if value not in allowed:
        raise UsageError(f"Cannot use {what} '{value}': expected one of {', '.join(allowed)}.")


def _engine(name: str) -> str:
    return AUTO_ENGINE if name.strip().lower() == AUTO_ENGINE else engines.canonical(name)


def _kv(value: str, engine: str) -> None:
    """A KV type the engine (any engine `auto` may pick) can hold: an explicit type is checked against
    fits/memory.KV_DTYPES, the same list for every engine (kv_format reads engine facts only for 'auto')."""
    if value.strip().lower() != "auto":
        kv_format(value, "BF16")


def _weights(value: str) -> None:
    parse_scheme(value)


def _acceptance(value: Any) -> None:
    if isinstance(value, str):
        parse_acceptance(value)


def _profiles(value: Any, origin: str, where: str) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """`profile = "p.json"` or `profile = {machine = "p.json"}`, paths made relative to the policy file."""
    base = Path(origin).parent

    def resolve(p: Any, key: str) -> str:
        if not isinstance(p, str) or not p:
            raise ConfigError(f"Cannot use policy '{origin}': {where} {key} must be a file path (got {p!r:.40}).",
                              origin, key=key)
        path = paths.expand(p)
        return str(path if path.is_absolute() else base / path)

    if value is None:
        return None, ()
    if isinstance(value, str):
        return resolve(value, "profile"), ()
    return None, tuple((str(m), resolve(p, f"profile.{m}")) for m, p in value.items())
