"""Budget: how many bytes one device may hold, and the runtime overhead charged on it.

Its own module because both the per-device evaluation (fit.py) and the one-device ledger
(verdict.py) charge the same overhead, and the budget rules are engine facts, not layout:

  budget   = floor(memory x utilisation), capped by what is free, minus the engine's margin
  overhead = the engine's GPU context, none on Metal/CPU, or --overhead
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.constants import CPU_USABLE_FRACTION, HOST_OVERHEAD_BYTES
from ..core.errors import UsageError
from ..core.fmt import fmt_bytes
from ..engines import Engine
from .machine import Device, apple_working_set_fraction
from .memory import Settings


@dataclass(frozen=True)
class Budget:
    """What one device may hold: floor(memory x fraction), capped by free memory, minus the margin."""

    index: int
    name: str
    kind: str
    memory_bytes: int
    fraction: float
    free_bytes: int | None
    margin_bytes: int
    budget_bytes: int
    source: str


def device_budget(dev: Device, engine: Engine, utilization: float | None = None, *, margin: int = 0) -> Budget:
    """Bytes an engine may fill on `dev`.

    GPU: memory x (--utilization or the engine's share: vLLM 0.92, SGLang 0.9, others 1.0); Apple: memory x the
    Metal working-set share; CPU: RAM x the share left after OS headroom. Capped by the free
    memory detection saw, minus the engine's margin (llama.cpp 1 GiB on GPU/Metal devices) and
    `margin`: a safety margin the caller leaves past it (planner fit's --margin: what the ledger's
    estimates may be off by, so a plan cut to the byte still starts).

    Raises:
        UsageError: a utilisation outside (0, 1].
    """
    if utilization is not None and not 0 < utilization <= 1:
        raise UsageError(f"Cannot use --utilization {utilization}: expected a fraction in (0, 1].")
    if dev.kind == "gpu":
        frac = utilization if utilization is not None else engine.gpu_utilization
        why = "--utilization" if utilization is not None else f"{engine.name} default"
    elif dev.kind == "apple":
        frac = utilization or dev.usable_fraction or apple_working_set_fraction(dev.memory_bytes)
        why = "--utilization" if utilization is not None else "Metal GPU working set of unified memory"
    else:
        frac = utilization or dev.usable_fraction or CPU_USABLE_FRACTION
        why = "--utilization" if utilization is not None else "RAM left after OS headroom"
    cap = math.floor(dev.memory_bytes * frac)
    src = f"{frac:.4g} x memory ({why})"
    if dev.free_bytes is not None and dev.free_bytes < cap:
        cap, src = dev.free_bytes, f"free memory seen at detection (< {frac:.4g} x memory)"
    own = engine.device_margin_bytes if dev.kind != "cpu" else 0
    if own:
        src += f" - {fmt_bytes(own)} {engine.name} margin"  # units at the edge: "1.00 GiB", not 1073741824 B
    if margin:
        src += f" - {fmt_bytes(margin)} safety margin (--margin)"
    return Budget(dev.index, dev.name, dev.kind, dev.memory_bytes, frac, dev.free_bytes, own + margin,
                  cap - own - margin, src)


def overhead_for(kind: str, s: Settings) -> tuple[int, str]:
    """Runtime overhead per device: the engine's GPU context, none on Metal/CPU, or --overhead."""
    if s.overhead_bytes is not None:
        return s.overhead_bytes, "given (--overhead)"
    if kind == "gpu":
        e = s.resolved_engine
        return e.overhead_bytes, e.overhead_source
    return HOST_OVERHEAD_BYTES, "no CUDA context on Metal/CPU runs (constants.HOST_OVERHEAD_BYTES)"
