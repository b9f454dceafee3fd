"""The device a probe runs on, and what a profile records about it.

Why one module: every probe backend (synthetic, real weights, llama.cpp) asks the same questions
of the machine it runs on: which torch device (`resolve_device`), how many bytes it may allocate
(`available_bytes`), how long it may take (`budget_for`), what to call the device and which
library versions and time to stamp on the profile, how many CPU threads to time with, and how
to give memory back after a model is dropped or an allocation failed.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.metadata
import platform
import sys
from collections.abc import Iterator
from datetime import datetime, timezone

from ..core import constants
from ..core.errors import UsageError
from . import require_torch


@contextlib.contextmanager
def cpu_threads(n: int | None) -> Iterator[None]:
    """Run with torch's intra-op CPU threads set to n (None: leave torch's default), then restore.

    Why: on a busy machine, OpenMP threads that wait on a descheduled sibling make single calls
    tens of times slower; fewer threads than free cores gives stable numbers.
    """
    torch = require_torch()
    old = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def resolve_device(name: str) -> str:
    """'auto' -> cuda, else mps, else cpu; an explicit device must be available.

    Raises:
        UsageError: the device is unknown or not available here.
    """
    torch = require_torch()
    name = (name or "auto").strip().lower()
    cuda, mps = torch.cuda.is_available(), bool(getattr(torch.backends, "mps", None)) and \
        torch.backends.mps.is_available()
    if name == "auto":
        return "cuda" if cuda else "mps" if mps else "cpu"
    kind = name.split(":")[0]
    if kind not in ("cpu", "cuda", "mps"):
        raise UsageError(f"Cannot probe on device '{name}' (expected cpu, cuda, cuda:N, mps or auto).")
    if (kind == "cuda" and not cuda) or (kind == "mps" and not mps):
        raise UsageError(f"Cannot probe on device '{name}': torch sees no such device here "
                         f"(expected one of: cpu{', cuda' if cuda else ''}{', mps' if mps else ''}). "
                         f"Use --device auto.")
    return name


def available_bytes(device: str) -> int:
    """Memory the probe may allocate: free device (CUDA) or host (CPU, MPS) memory, less a margin."""
    if device.startswith("cuda"):
        torch = require_torch()
        free, _total = torch.cuda.mem_get_info(torch.device(device))
    else:
        import psutil

        free = psutil.virtual_memory().available
    return max(0, int(free * constants.PROBE_MEMORY_FRACTION) - constants.PROBE_MEMORY_RESERVE_BYTES)


def device_name(device: str) -> str:
    """Human name of the device: GPU name from torch, CPU model from /proc/cpuinfo or platform."""
    if device.startswith("cuda"):
        torch = require_torch()
        return torch.cuda.get_device_name(torch.device(device))
    if device.startswith("mps"):
        return f"Apple GPU (MPS, {platform.machine()})"
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
        for line in fh.read(1 << 20).splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def library_versions() -> dict[str, str]:
    """Versions that change the numbers: python, torch, transformers (if installed), spec-planner."""
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for dist in ("torch", "transformers", "spec-planner"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def budget_for(device: str, budget_s: float | None) -> float:
    """Seconds the probe may take: --budget-s, else the device kind's default (constants.PROBE_BUDGET_S)."""
    return budget_s if budget_s is not None else constants.PROBE_BUDGET_S.get(device.split(":")[0], 60.0)


def free_memory(device: str) -> None:
    """Collect garbage and return CUDA's cached blocks once a model's tensors are dropped."""
    gc.collect()
    if device.startswith("cuda"):
        require_torch().cuda.empty_cache()


def is_out_of_memory(e: BaseException) -> bool:
    """torch.OutOfMemoryError (CUDA/MPS allocators), MemoryError, or a RuntimeError saying so (CPU allocator)."""
    torch = sys.modules.get("torch")
    oom = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    if (oom is not None and isinstance(e, oom)) or isinstance(e, MemoryError):
        return True
    text = str(e).lower()
    return isinstance(e, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def release_memory() -> None:
    """Return cached device memory after a failed allocation (tensors are gone with the failed frames)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is None:
        return
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    mps = getattr(torch, "mps", None)
    if mps is not None and hasattr(mps, "empty_cache") and torch.backends.mps.is_available():
        mps.empty_cache()


def now() -> str:
    """UTC timestamp, ISO 8601, seconds."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()
