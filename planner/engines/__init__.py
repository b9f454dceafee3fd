"""The engine registry: one `Engine` per file in this folder, one canonical name each, aliases beside it.

Why one registry: every layer (ledger, fit, pairing, speed, plan, launch) reads the engine's facts from
its `Engine` instead of testing its name, so adding an engine is its file plus one line in `_BUILTIN`
below (or `register()` at run time, which tests use for a toy engine). A name is resolved once, where a
plan starts (the CLI's entry points: `get`, `resolve` for `--engine auto`), and the resolved Engine travels
down, in `fits.memory.Settings` among others (tests/test_engine_resolution.py).
"""

from __future__ import annotations

import difflib

from ..core import memo
from ..core.errors import UsageError
from . import llamacpp, mlx, sglang, transformers, vllm
from .base import Engine, LaunchInput, Verdict

__all__ = ["Engine", "LaunchInput", "Verdict", "all_engines", "canonical", "default_engine", "get", "launch",
           "measured_by", "names", "register", "resolve", "running", "unregister"]

# Order is the order engines are listed in reports and help text.
_BUILTIN = (llamacpp.ENGINE, vllm.ENGINE, sglang.ENGINE, transformers.ENGINE, mlx.ENGINE)
_REGISTRY: dict[str, Engine] = {e.name: e for e in _BUILTIN}

# --engine auto: GGUF files run in llama.cpp (their own format); serving GPUs in vLLM; Apple silicon and
# CPU hosts in llama.cpp (Metal/CPU backends); `planner memory` with no machine uses transformers.
DEFAULT_FOR_KIND = {"gpu": vllm.NAME, "apple": llamacpp.NAME, "cpu": llamacpp.NAME, None: transformers.NAME}
GGUF_ENGINE = llamacpp.NAME


def register(engine: Engine) -> None:
    """Add (or replace) an engine; its name and aliases become valid everywhere (memoised values keyed by
    an engine's name are forgotten: core/memo.py)."""
    _REGISTRY[engine.name] = engine
    memo.clear()


def unregister(name: str) -> None:
    """Remove a registered engine (tests remove the toy engine they added)."""
    _REGISTRY.pop(name, None)
    memo.clear()


def all_engines() -> tuple[Engine, ...]:
    return tuple(_REGISTRY.values())


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def canonical(name: str) -> str:
    """The one spelling of an engine ('llama.cpp', 'vllm', 'sglang', 'transformers', 'mlx').

    Raises:
        UsageError: no engine has that name or alias.
    """
    key = name.strip().lower()
    for e in _REGISTRY.values():
        if key == e.name or key in e.aliases:
            return e.name
    spellings = {alias: e.name for e in _REGISTRY.values() for alias in (e.name, *e.aliases)}
    close = difflib.get_close_matches(key, list(spellings), n=1, cutoff=0.6)  # 'vlm' -> vllm (issue #31)
    hint = f" (did you mean '{spellings[close[0]]}'?)" if close else ""
    raise UsageError(f"Cannot use engine '{name}'{hint}: expected one of {', '.join(_REGISTRY)}.")


def get(name: str) -> Engine:
    """The engine called `name` (canonical or alias).

    Raises:
        UsageError: unknown engine.
    """
    e = _REGISTRY.get(name)  # the canonical spelling: a dict look-up (the ledger asks once per layer)
    return e if e is not None else _REGISTRY[canonical(name)]


def default_engine(machine_kind: str | None, *, gguf: bool = False) -> str:
    """The engine `--engine auto` picks: llama.cpp for a GGUF, else by machine kind (None: no machine)."""
    if gguf:
        return GGUF_ENGINE
    return DEFAULT_FOR_KIND.get(machine_kind, llamacpp.NAME)


def resolve(name: str | None, machine_kind: str | None, *, gguf: bool = False) -> Engine:
    """The engine a plan runs, resolved once where the plan starts: the one named (canonical or alias), else
    the pick of `--engine auto` for this machine kind (`default_engine`). Below this point the resolved
    Engine travels, not its name (tests/test_architecture.py: no `engines.get(` outside the registry and the
    CLI's entry points).

    Raises:
        UsageError: unknown engine.
    """
    return get(name or default_engine(machine_kind, gguf=gguf))


def running(backend: str, machine_kind: str) -> Engine:
    """The engine whose kernels `backend` is on `machine_kind` machines (its `Engine.verify_backend` names it):
    the engine a kernel catalogue's calibration chips stream at, resolved once when the catalogue loads.

    Raises:
        UsageError: no registered engine runs that backend on that kind of machine.
    """
    owner = next((e for e in _REGISTRY.values() if e.verify_backend.get(machine_kind) == backend), None)
    if owner is None:
        raise UsageError(f"Cannot find the engine of kernel backend '{backend}' on {machine_kind} machines: no "
                         f"registered engine lists it in its verify_backend (expected one of "
                         f"{', '.join(sorted({b for e in _REGISTRY.values() for b in e.verify_backend.values()}))}).")
    return owner


def measured_by(backend: str) -> str | None:
    """The engine whose kernels a probe profile's backend ran ('llama.cpp (cuda)', 'transformers (cpu)'), or
    None for the synthetic torch stack, which is no engine's."""
    key = backend.strip().lower()
    return next((e.name for e in _REGISTRY.values() if key.startswith(e.name)), None)


def launch(engine: str, x: LaunchInput) -> dict[str, str]:
    """Launch command(s) for `engine`: the engine file's renderer."""
    return get(engine).launch(x)
