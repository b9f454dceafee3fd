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
    tp = 1; k = 4; acceptance = 0.7; profile = "probe.json"
    [deployment.require]
    fits = true; min_headroom = "1GiB"; compatible = true; min_speedup = 1.1  # or "no_slowdown"
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .constants import JSON_MAX_BYTES
from .errors import ConfigError
from .units import parse_bytes, parse_tokens

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEPLOYMENT_KEYS = {"name": str, "target": str, "draft": str, "engine": str, "context": (int, str), "batch": int,
                   "kv_dtype": str, "weights_dtype": str, "machine": str, "machines": list, "gpu_memory": (str, int),
                   "gpus": int, "tp": int, "pp": int, "utilization": float, "k": int, "acceptance": float,
                   "profile": str, "temperature": float, "require": dict}
DEFAULT_KEYS = {k: v for k, v in DEPLOYMENT_KEYS.items() if k not in ("name", "target", "draft", "require")}
REQUIRE_KEYS = {"fits": bool, "min_headroom": (str, int), "compatible": bool, "min_speedup": (float, int, str),
                "max_total_memory": (str, int)}


@dataclass(frozen=True)
class Requirements:
    fits: bool = True
    min_headroom_bytes: int = 0
    compatible: bool = True
    min_speedup: float | None = None  # None: not required; 1.0 for "no_slowdown"
    max_total_bytes: int | None = None


@dataclass(frozen=True)
class Deployment:
    name: str
    target: str
    draft: str | None = None
    engine: str = "vllm"
    context: int = 4096
    batch: int = 1
    kv_dtype: str | None = None
    weights_dtype: str | None = None
    machines: tuple[str, ...] = ()
    gpu_memory_bytes: int | None = None
    gpus: int = 1
    tp: int = 1
    pp: int = 1
    utilization: float | None = None
    k: int | None = None
    acceptance: float | None = None
    temperature: float = 0.0
    profile: str | None = None
    require: Requirements = field(default_factory=Requirements)


@dataclass(frozen=True)
class Policy:
    path: str
    deployments: tuple[Deployment, ...]


def load_policy(path: str | Path | None = None) -> Policy:
    """Read planner.toml (or pyproject.toml's [tool.planner]); default: ./planner.toml, then ./pyproject.toml.

    Raises:
        ConfigError: missing file, invalid TOML, unknown key, wrong type or value; names file and key.
    """
    p = _find(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise ConfigError(f"Cannot read policy '{p}': {e.strerror or e}.", p) from e
    if len(raw) > JSON_MAX_BYTES:
        raise ConfigError(f"Cannot read policy '{p}': {len(raw)} bytes is over the {JSON_MAX_BYTES}-byte limit.", p)
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"Cannot parse policy '{p}': invalid TOML ({e}).", p) from e
    if p.name == "pyproject.toml":
        doc = doc.get("tool", {}).get("planner")
        if not isinstance(doc, dict):
            raise ConfigError(f"Cannot use '{p}': it has no [tool.planner] table. Add [[tool.planner.deployment]] "
                              f"entries or write a planner.toml.", p, key="tool.planner")
    return parse_policy(doc, str(p))


def _find(path: str | Path | None) -> Path:
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"Cannot read policy '{p}': file not found.", p)
        return p
    for name in ("planner.toml", "pyproject.toml"):
        if Path(name).is_file():
            return Path(name)
    raise ConfigError("Cannot find a policy: no planner.toml or pyproject.toml here. Pass --config FILE.")


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
        d = _deployment({**defaults, **item}, origin, where)
        if d.name in names:
            raise ConfigError(f"Cannot use policy '{origin}': two deployments are named '{d.name}'.", origin,
                              key="name")
        names.add(d.name)
        deployments.append(d)
    return Policy(path=origin, deployments=tuple(deployments))


def _keys(table: dict[str, Any], allowed: dict[str, Any], origin: str, prefix: str) -> None:
    for key, value in table.items():
        if key not in allowed:
            close = difflib.get_close_matches(key, list(allowed), n=1)
            hint = f" Did you mean '{prefix}{close[0]}'?" if close else f" Known keys: {', '.join(allowed)}."
            raise ConfigError(f"Cannot use policy '{origin}': unknown key '{prefix}{key}'.{hint}", origin,
                              key=prefix + key)
        want = allowed[key]
        ok = isinstance(value, want) and not (isinstance(value, bool) and bool not in _tuple(want))
        if want is float and isinstance(value, int) and not isinstance(value, bool):
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
        except Exception as e:
            raise ConfigError(f"Cannot use policy '{origin}': {where} {key}: {e}", origin, key=key) from e

    ms = req.get("min_speedup")
    if isinstance(ms, str):
        if ms != "no_slowdown":
            raise ConfigError(f"Cannot use policy '{origin}': {where} require.min_speedup must be a number or "
                              f"\"no_slowdown\" (got {ms!r}).", origin, key="require.min_speedup")
        ms = 1.0
    for key, lo, hi in (("batch", 1, 1 << 20), ("gpus", 1, 4096), ("tp", 1, 4096), ("pp", 1, 4096),
                        ("k", 1, 64)):
        if key in d and not lo <= d[key] <= hi:
            raise ConfigError(f"Cannot use policy '{origin}': {where} {key} must be between {lo} and {hi} "
                              f"(got {d[key]}).", origin, key=key)
    for key, lo, hi in (("acceptance", 0.0, 1.0), ("utilization", 0.01, 1.0), ("temperature", 0.0, 10.0)):
        if key in d and not lo <= float(d[key]) <= hi:
            raise ConfigError(f"Cannot use policy '{origin}': {where} {key} must be between {lo} and {hi} "
                              f"(got {d[key]}).", origin, key=key)
    machines = tuple(d.get("machines") or ([d["machine"]] if d.get("machine") else []))
    if not all(isinstance(m, str) and m for m in machines):
        raise ConfigError(f"Cannot use policy '{origin}': {where} machines must be a list of names.", origin,
                          key="machines")
    if not machines and "gpu_memory" not in d:
        raise ConfigError(f"Cannot use policy '{origin}': {where} names no machine (set machine, machines, or "
                          f"gpu_memory with gpus).", origin, key="machine")
    try:
        context = parse_tokens(d.get("context", 4096))
    except Exception as e:
        raise ConfigError(f"Cannot use policy '{origin}': {where} context: {e}", origin, key="context") from e
    requirements = Requirements(
        fits=req.get("fits", True), min_headroom_bytes=size("require.min_headroom", req.get("min_headroom", 0)),
        compatible=req.get("compatible", True), min_speedup=float(ms) if ms is not None else None,
        max_total_bytes=size("require.max_total_memory", req["max_total_memory"]) if "max_total_memory" in req
        else None)
    return Deployment(
        name=str(d["name"]), target=str(d["target"]), draft=d.get("draft"), engine=d.get("engine", "vllm"),
        context=context, batch=d.get("batch", 1), kv_dtype=d.get("kv_dtype"), weights_dtype=d.get("weights_dtype"),
        machines=machines, gpu_memory_bytes=size("gpu_memory", d["gpu_memory"]) if "gpu_memory" in d else None,
        gpus=d.get("gpus", 1), tp=d.get("tp", 1), pp=d.get("pp", 1), utilization=d.get("utilization"),
        k=d.get("k"), acceptance=d.get("acceptance"), temperature=float(d.get("temperature", 0.0)),
        profile=d.get("profile"), require=requirements)
