"""Machines: what memory (and bandwidth, FLOP/s) the model must fit in.

Why one module: a machine comes from the bundled catalog (`catalogs/machines/*.json`,
one file per machine, each figure with its public source), from a JSON file the user
wrote in the same schema, or from detection on this host. Detection is lazy and cheap:
psutil for RAM, `nvidia-smi --query-gpu` for NVIDIA GPUs, torch only when nvidia-smi
gave no answer and torch is installed (CUDA, ROCm, Apple MPS), `sysctl` on Apple
silicon. Catalog machines never touch torch or subprocesses.

Units: bytes and bytes/s as integers, FLOP/s as integers; formatting is the CLI's job.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import platform
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..core.constants import (
    APPLE_WORKING_SET_FRACTION_LARGE,
    APPLE_WORKING_SET_FRACTION_SMALL,
    APPLE_WORKING_SET_LARGE_FROM_BYTES,
    DETECT_OUTPUT_MAX_BYTES,
    DETECT_TIMEOUT_S,
    MACHINE_JSON_MAX_BYTES,
    MiB,
    catalog_dir,
)
from ..core.errors import ConfigError, MachineError

KINDS = ("gpu", "apple", "cpu")
FLOP_DTYPES = ("bf16", "fp16", "fp8", "int8")
SOURCE_KEYS = ("memory", "bandwidth", "flops")
REQUIRED_KEYS = ("name", "display_name", "kind", "vendor", "memory_bytes", "devices", "bandwidth_bytes_per_s",
                 "peak_flops", "usable_fraction", "sources")
OPTIONAL_KEYS = ("device_names", "notes")
MAX_DEVICES = 1024  # no single host has more; bounds what a machine file or --gpus can ask for
NVIDIA_SMI_QUERY = ("nvidia-smi", "--query-gpu=index,name,memory.total,memory.free", "--format=csv,noheader,nounits")


@dataclass(frozen=True)
class Device:
    """One memory pool a model can be placed in: a GPU, Apple's unified memory, or CPU RAM.

    `free_bytes` is what detection saw free (None: a catalog machine, taken as all free).
    `usable_fraction` is the share an engine may use before its own limits (Apple GPU working
    set, CPU RAM after OS headroom; None for discrete GPUs, whose share is the engine's).
    """

    index: int
    name: str
    kind: str
    memory_bytes: int
    free_bytes: int | None = None
    usable_fraction: float | None = None


@dataclass(frozen=True)
class Machine:
    """A machine: its devices (all of one kind), and the figures the speed model reads."""

    name: str
    display_name: str
    kind: str
    vendor: str
    devices: tuple[Device, ...]
    bandwidth_bytes_per_s: int | None
    peak_flops: Mapping[str, int | None]
    usable_fraction: float | None
    sources: Mapping[str, str]
    origin: str  # catalog | file | detected | custom
    host_memory_bytes: int | None = None
    notes: tuple[str, ...] = ()
    device_names: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "peak_flops", MappingProxyType(dict(self.peak_flops)))
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))

    @property
    def memory_bytes(self) -> int:
        """Memory of the first device (catalog machines: every device)."""
        return self.devices[0].memory_bytes

    @property
    def n_devices(self) -> int:
        return len(self.devices)


# --- catalog and files -----------------------------------------------------------

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
    names = entry.get("device_names", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _bad(origin, "'device_names' must be a list of strings", "a list", names)
    notes = entry.get("notes") or []
    if not (isinstance(notes, str) or (isinstance(notes, list) and all(isinstance(n, str) for n in notes))):
        raise _bad(origin, "'notes' must be a string or a list of strings", "text", notes)
    return entry


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
                   device_names=tuple(e.get("device_names", [])))


def read_entry(path: str | Path) -> dict[str, Any]:
    """Read and validate one machine JSON file (bounded read).

    Raises:
        MachineError: unreadable, too large, not JSON, or not the schema.
    """
    from ..core.jsonio import read_json

    try:
        data = read_json(path, max_bytes=MACHINE_JSON_MAX_BYTES, what="machine file")
    except ConfigError as e:
        raise MachineError(str(e)) from e
    return validate_entry(data, str(path))


@lru_cache(maxsize=4)
def _catalog(directory: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    d = Path(directory)
    if not d.is_dir():
        return ()
    return tuple((p.stem, read_entry(p)) for p in sorted(d.glob("*.json")))


def catalog_entries() -> dict[str, dict[str, Any]]:
    """Every bundled machine entry by slug (file name = entry name, checked)."""
    out: dict[str, dict[str, Any]] = {}
    for stem, entry in _catalog(str(machines_dir())):
        if entry["name"] != stem:
            raise MachineError(f"Cannot use catalog file '{stem}.json': its name is '{entry['name']}' "
                               f"(expected '{stem}'). Rename the file or the entry.")
        out[stem] = entry
    return out


def catalog_names() -> list[str]:
    return sorted(catalog_entries())


def get_machine(ref: str) -> Machine:
    """`auto` (detect this host), a catalog slug (`rtx-4090`), or a JSON file in the catalog schema.

    Raises:
        MachineError: unknown name (with the closest catalog names) or a bad file.
    """
    key = ref.strip()
    if key.lower() == "auto":
        return detect()
    p = Path(key).expanduser()
    if key.endswith(".json") or p.is_file():
        if not p.is_file():
            raise MachineError(f"Cannot read machine from '{key}': file not found. Give a catalog name "
                               f"(planner machines list) or an existing JSON file.")
        return machine_from_entry(read_entry(p), str(p), "file")
    entries = catalog_entries()
    slug = key.lower()
    if slug in entries:
        return machine_from_entry(entries[slug], f"catalogs/machines/{slug}.json")
    close = difflib.get_close_matches(slug, list(entries), n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise MachineError(f"Cannot find machine '{ref}' in the catalog ({len(entries)} machines).{hint} "
                       f"See 'planner machines list', or pass a JSON file or 'auto'.")


def with_overrides(m: Machine, *, memory_bytes: int | None = None, n_devices: int | None = None) -> Machine:
    """`--gpu-memory` / `--gpus`: same machine with each device's memory and/or the device count replaced.

    More devices than the machine has are copies of its first device; fewer keep the first n.

    Raises:
        MachineError: a count or size below 1.
    """
    devs = list(m.devices)
    if n_devices is not None:
        if not 1 <= n_devices <= MAX_DEVICES:
            raise MachineError(f"Cannot use --gpus {n_devices}: expected 1..{MAX_DEVICES}.")
        devs = [replace(devs[min(i, len(devs) - 1)], index=i) for i in range(n_devices)]
    if memory_bytes is not None:
        if memory_bytes < 1:
            raise MachineError(f"Cannot use --gpu-memory {memory_bytes}: it must be positive.")
        devs = [replace(d, memory_bytes=memory_bytes, free_bytes=None) for d in devs]
    sources = dict(m.sources)
    if memory_bytes is not None:
        sources["memory"] = f"given (--gpu-memory {memory_bytes} B per device)"
    notes = m.notes + ((f"device count set to {n_devices} (--gpus)",) if n_devices is not None else ())
    return replace(m, devices=tuple(devs), sources=sources, notes=notes)


def custom_gpu(memory_bytes: int, n_devices: int = 1) -> Machine:
    """A GPU box described only by `--gpu-memory` (and `--gpus`): no bandwidth or FLOP figures."""
    if memory_bytes < 1 or not 1 <= n_devices <= MAX_DEVICES:
        raise MachineError(f"Cannot describe a GPU of {memory_bytes} B x {n_devices}: expected a positive size "
                           f"and 1..{MAX_DEVICES} devices.")
    devs = tuple(Device(i, "GPU", "gpu", memory_bytes) for i in range(n_devices))
    return Machine(name="custom", display_name=f"{n_devices} x GPU", kind="gpu", vendor="unknown", devices=devs,
                   bandwidth_bytes_per_s=None, peak_flops=dict.fromkeys(FLOP_DTYPES), usable_fraction=None,
                   sources={"memory": "given (--gpu-memory)"}, origin="custom")


def apple_working_set_fraction(total_bytes: int) -> float:
    """Default GPU share of Apple unified memory (Metal recommendedMaxWorkingSetSize), constants.py."""
    if total_bytes >= APPLE_WORKING_SET_LARGE_FROM_BYTES:
        return APPLE_WORKING_SET_FRACTION_LARGE
    return APPLE_WORKING_SET_FRACTION_SMALL


# --- detection -----------------------------------------------------------------------
# Seams for tests: each probe of the host goes through one of these small functions.

def _run(cmd: Sequence[str]) -> str | None:
    """stdout of `cmd` (bounded), or None when it is missing, fails or times out."""
    if shutil.which(cmd[0]) is None:
        return None
    try:
        proc = subprocess.run(list(cmd), capture_output=True, timeout=DETECT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout[:DETECT_OUTPUT_MAX_BYTES].decode("utf-8", "replace")


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
        if not index.isdigit() or not total.isdigit():
            raise MachineError(f"Cannot read nvidia-smi output line '{line}': index and memory.total must be "
                               f"integers (got '{index}', '{total}').")
        devices.append(Device(int(index), name, "gpu", int(total) * MiB,
                              int(free) * MiB if free.isdigit() else None))
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


def _detected(kind: str, vendor: str, devices: Sequence[Device], how: str, host_total: int) -> Machine:
    """A detected machine, with bandwidth/FLOP figures from the catalog when the device is known."""
    first = devices[0]
    same = all(d.name == first.name for d in devices)
    entry = match_catalog(first.name, first.memory_bytes) if same else None
    label = first.name if len(devices) == 1 else f"{len(devices)} x {first.name}"
    sources = {"memory": how}
    notes: tuple[str, ...] = ()
    if entry:
        sources.update({k: f"catalog {entry['name']}: {entry['sources'][k]}" for k in ("bandwidth", "flops")})
        notes = (f"matched catalog entry {entry['name']}",)
    else:
        notes = (f"'{first.name}' is not in the catalog: no bandwidth or FLOP/s figures",)
    frac = first.usable_fraction
    if frac is not None:
        sources["usable_fraction"] = how
    return Machine(name="detected", display_name=label, kind=kind, vendor=vendor, devices=tuple(devices),
                   bandwidth_bytes_per_s=entry["bandwidth_bytes_per_s"] if entry else None,
                   peak_flops=dict(entry["peak_flops"]) if entry else dict.fromkeys(FLOP_DTYPES),
                   usable_fraction=frac, sources=sources, origin="detected", host_memory_bytes=host_total,
                   notes=notes, device_names=(first.name,))


def detect(*, use_torch: bool | None = None) -> Machine:
    """Describe this host: GPUs (nvidia-smi, else torch), else Apple unified memory, else CPU RAM.

    torch is imported only when nvidia-smi gave no answer and torch is installed
    (`use_torch=False` forbids it).

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
    return m if m.bandwidth_bytes_per_s else with_host_measurements(m)


def measure_copy_bandwidth(n_bytes: int = 128 * MiB, repeats: int = 5) -> float:
    """Host memory bandwidth from timed memcpy between two pre-touched buffers (slice assignment
    copies with memcpy): read + write bytes per second, best of `repeats` (STREAM 'copy'
    convention). Buffers are touched first so page faults are not timed. About 0.2 s."""
    import time

    src = bytearray(b"\x01") * n_bytes
    dst = bytearray(n_bytes)
    dst[:] = src  # touch every page of dst before timing
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        dst[:] = src
        best = min(best, time.perf_counter() - t0)
    return 2 * n_bytes / best


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
    """A detected CPU machine with a measured copy bandwidth and an estimated FLOP/s, both labelled."""
    bw = measure_copy_bandwidth()
    flops, why = estimate_cpu_flops()
    sources = {**m.sources, "bandwidth": "measured on this host: memcpy copy bandwidth (read + write), best of 5",
               "flops": why}
    return replace(m, bandwidth_bytes_per_s=int(bw), peak_flops={**dict.fromkeys(FLOP_DTYPES), "bf16": flops,
                                                                 "fp16": flops},
                   sources=sources, notes=(*m.notes, "bandwidth measured, FLOP/s estimated (CPU not in catalog)"))


def describe(m: Machine) -> dict[str, Any]:
    """JSON-ready description (the catalog schema plus origin, per-device memory and free bytes)."""
    return {"name": m.name, "display_name": m.display_name, "kind": m.kind, "vendor": m.vendor,
            "origin": m.origin, "memory_bytes": m.memory_bytes, "devices": m.n_devices,
            "bandwidth_bytes_per_s": m.bandwidth_bytes_per_s, "peak_flops": dict(m.peak_flops),
            "usable_fraction": m.usable_fraction, "sources": dict(m.sources),
            "host_memory_bytes": m.host_memory_bytes, "notes": list(m.notes),
            "device_list": [{"index": d.index, "name": d.name, "kind": d.kind, "memory_bytes": d.memory_bytes,
                             "free_bytes": d.free_bytes, "usable_fraction": d.usable_fraction}
                            for d in m.devices]}



CPU_DEFAULT_GHZ = 3.0  # assumed clock when psutil cannot read one (containers often hide it)


def resolve_machine(ref: str | None, gpu_memory_bytes: int | None = None, gpus: int | None = None) -> Machine:
    """The machine the CLI flags describe: `--machine` (default auto), with `--gpu-memory`/`--gpus`
    overrides; `--gpu-memory` alone describes a custom GPU box.

    Raises:
        MachineError: unknown name, bad file, or bad override.
    """
    if ref is None and gpu_memory_bytes is not None:
        return custom_gpu(gpu_memory_bytes, gpus or 1)
    m = get_machine(ref or "auto")
    if gpu_memory_bytes is not None or gpus is not None:
        m = with_overrides(m, memory_bytes=gpu_memory_bytes, n_devices=gpus)
    return m
