"""Machine detection: describe this host's GPUs, Apple unified memory or CPU RAM as a Machine.

Why one module: detection is the only part of the machine model that runs programs or imports
torch, so it is kept lazy and cheap in one place: psutil for RAM, `nvidia-smi --query-gpu` for
NVIDIA GPUs, torch only when nvidia-smi gave no answer and torch is installed (CUDA, ROCm, Apple
MPS), `sysctl` on Apple silicon. A detected device that the catalog knows gets its bandwidth and
FLOP/s figures from there (machine_catalog.match_catalog); a CPU the catalog does not know gets a
measured copy bandwidth and an estimated FLOP/s. Each probe of the host goes through one small
function of this module, so tests fake the host by patching them.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.constants import (
    BANDWIDTH_BUDGET_S,
    BANDWIDTH_BUFFER_BYTES,
    BANDWIDTH_MAX_TRIALS,
    BANDWIDTH_MIN_TRIALS,
    BANDWIDTH_WALL_CAP_S,
    DETECT_OUTPUT_MAX_BYTES,
    DETECT_TIMEOUT_S,
    MiB,
    host_kind_override,
)
from ..core.errors import MachineError
from . import host_load
from .machine import FLOP_DTYPES, Device, Machine, apple_working_set_fraction
from .machine_catalog import match_catalog
from .measure_stats import Spread, run_trials, summarise

NVIDIA_SMI_QUERY = ("nvidia-smi", "--query-gpu=index,name,memory.total,memory.free", "--format=csv,noheader,nounits")
_UINT = re.compile(r"^[0-9]{1,12}$")  # an nvidia-smi index or MiB figure
CPU_DEFAULT_GHZ = 3.0  # assumed clock when psutil cannot read one (containers often hide it)


# Seams for tests: each probe of the host goes through one of these small functions.

def _run(cmd: Sequence[str]) -> str | None:
    """stdout of `cmd` (bounded), or None when it is missing or fails.

    A tool that does not finish within DETECT_TIMEOUT_S is killed with everything it started (its own
    process group: a wrapper script's children too) and the detection fails with one line: a stuck
    nvidia-smi must not turn a GPU host into "CPU only" without a word.
    """
    if shutil.which(cmd[0]) is None:
        return None
    try:
        proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    except (OSError, subprocess.SubprocessError):
        return None
    try:
        # Read at most the cap: capture_output would hold all of a runaway tool's output (3 GB -> 6 GB RSS).
        out = _read_capped(proc.stdout, DETECT_OUTPUT_MAX_BYTES + 1, time.monotonic() + DETECT_TIMEOUT_S)
        if len(out) > DETECT_OUTPUT_MAX_BYTES:
            raise MachineError(f"Cannot read {cmd[0]} output: more than {DETECT_OUTPUT_MAX_BYTES} bytes (expected "
                               f"one short line per device). Run {cmd[0]} by hand to check the driver.")
        rc = proc.wait(timeout=max(0.1, DETECT_TIMEOUT_S))
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):  # the group outlives a leader whose children hold the pipe: no pid reuse
            os.killpg(proc.pid, signal.SIGKILL)
        raise MachineError(f"Cannot detect this machine: {cmd[0]} did not finish within {DETECT_TIMEOUT_S:g} s "
                           f"(killed). Run {cmd[0]} by hand to check the driver, or name the machine with "
                           f"--machine.") from None
    finally:
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)  # the tool and what it started
            proc.wait()
        if proc.stdout is not None:  # always a pipe here (stdout=PIPE); Popen types it optional
            proc.stdout.close()
    return out.decode("utf-8", "replace") if rc == 0 else None


def _read_capped(pipe: Any, limit: int, deadline: float) -> bytes:
    """Up to `limit` bytes of `pipe`, stopping at end of file or at `deadline` (time.monotonic)."""
    import selectors  # here: only machine detection reads a pipe

    buf = bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(pipe, selectors.EVENT_READ)
        while len(buf) < limit:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise subprocess.TimeoutExpired("detect", DETECT_TIMEOUT_S)
            chunk = os.read(pipe.fileno(), min(65536, limit - len(buf)))
            if not chunk:
                break
            buf += chunk
    return bytes(buf)


def _virtual_memory() -> tuple[int, int]:
    import psutil

    vm = psutil.virtual_memory()
    return int(vm.total), int(vm.available)


def _torch_installed() -> bool:
    """Whether torch can be imported, without importing it (importlib.util.find_spec)."""
    if "torch" in sys.modules:
        return True
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def _import_torch() -> Any:
    # Only reached when nvidia-smi gave no answer and torch is installed (module docstring).
    return importlib.import_module("torch")


def _gpu_device_nodes() -> bool:
    """Linux: an NVIDIA (/dev/nvidia0..) or AMD ROCm (/dev/kfd) device node exists. Elsewhere: True
    (macOS needs torch for the exact MPS working set; Windows has no cheap check)."""
    system, _ = _platform()
    if system != "Linux":
        return True
    dev = Path("/dev")
    return (dev / "kfd").exists() or any(dev.glob("nvidia[0-9]*"))


def _platform() -> tuple[str, str]:
    return platform.system(), platform.machine()


def _cpu_name() -> str:
    """CPU model from /proc/cpuinfo (Linux, first 64 KiB), else platform.processor()."""
    try:
        with open("/proc/cpuinfo", "rb") as fh:
            text = fh.read(64 * 1024).decode("utf-8", "replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            return value.strip()
    return platform.processor() or platform.machine() or "CPU"


def parse_nvidia_smi(text: str) -> list[Device]:
    """Devices from `nvidia-smi --query-gpu=index,name,memory.total,memory.free --format=csv,noheader,nounits`.

    Memory is in MiB; `[N/A]` free memory (e.g. MIG parents) becomes None.

    Raises:
        MachineError: a line that is not four comma-separated fields with integer totals.
    """
    devices = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.rsplit(",", 2)]
        head = parts[0].split(",", 1) if parts else []
        if len(parts) != 3 or len(head) != 2:
            raise MachineError(f"Cannot read nvidia-smi output line '{line}': expected 'index, name, "
                               f"memory.total, memory.free'. Run nvidia-smi by hand to check the driver.")
        index, name = head[0].strip(), head[1].strip()
        total, free = parts[1], parts[2]
        if not _UINT.match(index) or not _UINT.match(total):  # ASCII: '²' or '٣' is isdigit() but not a count
            raise MachineError(f"Cannot read nvidia-smi output line '{line}': index and memory.total must be "
                               f"integers (got '{index}', '{total}').")
        devices.append(Device(int(index), name, "gpu", int(total) * MiB,
                              int(free) * MiB if _UINT.match(free) else None))
    return devices


def nvidia_smi_devices() -> list[Device] | None:
    """NVIDIA GPUs as nvidia-smi reports them, or None when it is absent or says nothing."""
    out = _run(NVIDIA_SMI_QUERY)
    if not out or not out.strip():
        return None
    return parse_nvidia_smi(out)


def torch_devices() -> tuple[str, list[Device]] | None:
    """(vendor, devices) from torch: CUDA (nvidia), ROCm (amd, torch.version.hip), or MPS (apple)."""
    torch = _import_torch()
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available():
        vendor = "amd" if getattr(getattr(torch, "version", None), "hip", None) else "nvidia"
        devs = []
        for i in range(cuda.device_count()):
            free, total = cuda.mem_get_info(i)
            devs.append(Device(i, str(cuda.get_device_name(i)), "gpu", int(total), int(free)))
        return (vendor, devs) if devs else None
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    if mps is not None and mps.is_available():
        total, _ = _virtual_memory()
        limit = getattr(getattr(torch, "mps", None), "recommended_max_memory", None)
        working = int(limit()) if callable(limit) else 0
        frac = working / total if 0 < working <= total else apple_working_set_fraction(total)
        return "apple", [Device(0, _apple_chip() or "Apple GPU (MPS)", "apple", total, None, frac)]
    return None


def _apple_chip() -> str | None:
    out = _run(("sysctl", "-n", "machdep.cpu.brand_string"))
    return out.strip() if out and out.strip() else None


def _apple_wired_limit_bytes() -> int | None:
    """`sysctl iogpu.wired_limit_mb` when the user raised it (0 = macOS default)."""
    out = _run(("sysctl", "-n", "iogpu.wired_limit_mb"))
    value = out.strip() if out else ""
    return int(value) * MiB if value.isdigit() and int(value) > 0 else None


def _detected(kind: str, vendor: str, devices: Sequence[Device], how: str, host_total: int) -> Machine:
    """A detected machine, with bandwidth/FLOP figures from the catalog when the device is known."""
    first = devices[0]
    same = all(d.name == first.name for d in devices)
    entry = match_catalog(first.name, first.memory_bytes) if same else None
    label = first.name if len(devices) == 1 else f"{len(devices)} x {first.name}"
    sources = {"memory": how}
    notes: tuple[str, ...] = ()
    carried: dict[str, Any] = {}  # the chip facts the speed model reads (Apple GPU cores, HBM), with their source
    if entry:
        sources.update({k: f"catalog {entry['name']}: {entry['sources'][k]}" for k in ("bandwidth", "flops")})
        notes = (f"matched catalog entry {entry['name']}",)
        carried = {k: entry[k] for k in ("gpu_cores", "memory_type", "gpu_family", "gpu_tier", "dies")
                   if entry.get(k) is not None}
        sources.update({k: f"catalog {entry['name']}: {entry['sources'][k]}" for k in carried})
    else:
        notes = (f"'{first.name}' is not in the catalog: no bandwidth or FLOP/s figures",)
    frac = first.usable_fraction
    if frac is not None:
        sources["usable_fraction"] = how
    return Machine(name="detected", display_name=label, kind=kind, vendor=vendor, devices=tuple(devices),
                   bandwidth_bytes_per_s=entry["bandwidth_bytes_per_s"] if entry else None,
                   peak_flops=dict(entry["peak_flops"]) if entry else dict.fromkeys(FLOP_DTYPES),
                   usable_fraction=frac, sources=sources, origin="detected", host_memory_bytes=host_total,
                   notes=notes, device_names=(first.name,), **carried)


# Device nodes a GPU driver creates: NVIDIA (/dev/nvidia0, nvidiactl), AMD ROCm (/dev/kfd), WSL (/dev/dxg).
GPU_DEVICE_NODES = ("/dev/nvidia0", "/dev/nvidiactl", "/dev/kfd", "/dev/dxg")


def host_kind() -> str | None:
    """This host's kind from a glance (no subprocess, a few stat calls): 'gpu' when a GPU driver's device
    node or nvidia-smi is there, 'apple' on Apple silicon, else 'cpu'; SPEC_PLANNER_HOST_KIND overrides
    ('none': no particular host, None returned). `planner memory` uses it to pick the engine default and
    to leave the CUDA context out on Metal/CPU hosts; full detection (detect()) runs nvidia-smi."""
    forced = host_kind_override()
    if forced is not None:
        return None if forced == "none" else forced
    if any(Path(n).exists() for n in GPU_DEVICE_NODES) or shutil.which("nvidia-smi"):
        return "gpu"
    if sys.platform == "darwin" and platform.machine() == "arm64":
        return "apple"
    return "cpu"


def detect(*, use_torch: bool | None = None, measure: bool = True) -> Machine:
    """Describe this host: GPUs (nvidia-smi, else torch), else Apple unified memory, else CPU RAM.

    torch is imported only when nvidia-smi gave no answer and torch is installed
    (`use_torch=False` forbids it). `measure=False` skips timing the host (a saved profile gives the figures).

    Raises:
        MachineError: nvidia-smi printed something unreadable.
    """
    total, available = _virtual_memory()
    gpus = nvidia_smi_devices()
    if gpus:
        return _detected("gpu", "nvidia", gpus, "nvidia-smi --query-gpu memory.total/memory.free", total)
    allow_torch = _torch_installed() if use_torch is None else (use_torch and _torch_installed())
    # importing torch costs ~2 s: only when a GPU device node says there is something to find
    allow_torch = allow_torch and (use_torch is True or _gpu_device_nodes())
    if allow_torch:
        found = torch_devices()
        if found:
            vendor, devs = found
            kind = "apple" if vendor == "apple" else "gpu"
            how = ("torch.mps.recommended_max_memory() and psutil" if kind == "apple"
                   else "torch.cuda.mem_get_info" + (" (ROCm)" if vendor == "amd" else ""))
            devs = [replace(d, free_bytes=available) if kind == "apple" else d for d in devs]
            return _detected(kind, vendor, devs, how, total)
    system, arch = _platform()
    if system == "Darwin" and arch == "arm64":
        wired = _apple_wired_limit_bytes()
        frac = min(wired / total, 1.0) if wired else apple_working_set_fraction(total)
        how = ("psutil total; GPU share from sysctl iogpu.wired_limit_mb" if wired
               else "psutil total; GPU share = default Metal working set (constants.py)")
        dev = Device(0, _apple_chip() or "Apple silicon", "apple", total, available, frac)
        return _detected("apple", "apple", [dev], how, total)
    name = _cpu_name()
    dev = Device(0, name, "cpu", total, available, None)
    m = _detected("cpu", "unknown", [dev], "psutil.virtual_memory() total/available", total)
    m = replace(m, display_name=f"{name} (CPU only)")
    return m if m.bandwidth_bytes_per_s or not measure else with_host_measurements(m)


def _copy_trial(src: bytearray, dst: bytearray, clock: Any) -> float:
    """One timed memcpy of `src` into `dst`: read + write bytes per second (STREAM 'copy' convention)."""
    t0 = clock()
    dst[:] = src  # slice assignment between equal-length bytearrays is one memcpy
    return 2 * len(src) / max(clock() - t0, 1e-9)


def _clock() -> tuple[Any, str]:
    """This thread's CPU time where the OS counts it finely (Linux, macOS: CLOCK_THREAD_CPUTIME_ID), else
    wall time. CPU time leaves out the time the scheduler gave our core to another process, which on a
    busy host is most of a wall-clock trial (2 cores, load 7: 2-3 GB/s wall against 7-8 GB/s CPU time);
    a time-shared core is contention, not the memory system."""
    try:
        fine = time.get_clock_info("thread_time").resolution <= 1e-6
    except (AttributeError, ValueError):
        fine = False
    return (time.thread_time, "thread CPU time") if fine else (time.perf_counter, "wall time")


def measure_bandwidth(n_bytes: int = BANDWIDTH_BUFFER_BYTES, budget_s: float = BANDWIDTH_BUDGET_S) -> Spread:
    """Host memory bandwidth (bytes/s) from repeated memcpy between two pre-touched buffers: one warm-up
    copy, then trials until `budget_s` of the timing clock (thread CPU time where the OS has it) is spent
    or BANDWIDTH_WALL_CAP_S of wall time has gone by (BANDWIDTH_MIN_TRIALS..BANDWIDTH_MAX_TRIALS), on one
    pinned core, outliers rejected; the median and quartiles of the rest (measure_stats.summarise)."""
    src = bytearray(b"\x01") * n_bytes
    dst = bytearray(n_bytes)
    dst[:] = src  # touch every page of dst so page faults are not timed
    clock, name = _clock()
    with host_load.pinned() as core:
        values, seconds = run_trials(lambda: _copy_trial(src, dst, clock), budget_s=budget_s,
                                     min_trials=BANDWIDTH_MIN_TRIALS, max_trials=BANDWIDTH_MAX_TRIALS,
                                     wall=time.perf_counter, spent=clock, wall_cap_s=BANDWIDTH_WALL_CAP_S)
    where = f", pinned to core {core}" if core is not None else ""
    return summarise(values, seconds, f"{name}{where}")


def estimate_cpu_flops() -> tuple[int, str]:
    """Peak FLOP/s estimate: physical cores x max clock x 32 FLOP/cycle (2 AVX2 FMA units x 8 fp32 lanes
    x 2): a generous x86 figure; decode on CPU is memory-bound, so this only caps long verify batches."""
    import psutil

    cores = psutil.cpu_count(logical=False) or psutil.cpu_count() or 1
    freq = psutil.cpu_freq()
    mhz = (freq.max or freq.current) if freq else 0
    ghz = mhz / 1000 if mhz else CPU_DEFAULT_GHZ
    return int(cores * ghz * 1e9 * 32), (f"estimate: {cores} cores x {ghz:.2f} GHz x 32 FLOP/cycle "
                                         f"(AVX2 FMA, fp32){'' if mhz else ' (clock unknown: assumed)'}")


def with_host_measurements(m: Machine) -> Machine:
    """A detected CPU machine with a measured copy bandwidth (median of repeated trials, with its spread,
    time and how busy the host was) and an estimated FLOP/s, both labelled."""
    bw = measure_bandwidth()
    flops, why = estimate_cpu_flops()
    busy = host_load.observe(bw)
    sources = {**m.sources, "bandwidth": (f"measured on this host: memcpy copy bandwidth (read + write), median of "
                                          f"{bw.kept} of {bw.trials} trials ({bw.clock})"),
               "flops": why}
    notes = (*(n for n in m.notes if "not in the catalog" not in n),
             f"'{m.devices[0].name}' is not in the catalog: bandwidth measured on this host, FLOP/s estimated",
             *((busy,) if busy else ()))
    return replace(m, bandwidth_bytes_per_s=int(bw.median), peak_flops={**dict.fromkeys(FLOP_DTYPES), "bf16": flops,
                                                                       "fp16": flops},
                   sources=sources, notes=notes, measured={"bandwidth": bw}, contention=busy,
                   measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
