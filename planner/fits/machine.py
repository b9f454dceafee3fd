"""Machines: what memory (and bandwidth, FLOP/s) the model must fit in.

Why one module: every stage that reads a machine (fit, speed, check, recommend) needs only these
frozen dataclasses, the variants the CLI flags make of them (`--gpu-memory`, `--gpus`) and their
JSON form. Where a machine comes from lives beside it, one source per module:
machine_catalog.py (the bundled catalog, and JSON files in its schema), machine_detect.py (this
host), machine_lookup.py (a `--machine` reference plus the override flags -> one Machine).

Units: bytes and bytes/s as integers, FLOP/s as integers; formatting is the CLI's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ..core.constants import (
    APPLE_WORKING_SET_FRACTION_LARGE,
    APPLE_WORKING_SET_FRACTION_SMALL,
    APPLE_WORKING_SET_LARGE_FROM_BYTES,
    ASSUMED_LINK_BYTES_PER_S,
    ASSUMED_LINK_LATENCY_S,
    ASSUMED_LINK_SOURCE,
)
from ..core.errors import MachineError
from .measure_stats import Spread

KINDS = ("gpu", "apple", "cpu")
FLOP_DTYPES = ("bf16", "fp16", "fp8", "int8")
MAX_DEVICES = 1024  # no single host has more; bounds what a machine file or --gpus can ask for


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
    # host RAM bandwidth (what partially offloaded layers are read at); None: not catalogued
    host_bandwidth_bytes_per_s: int | None = None
    device_names: tuple[str, ...] = field(default=())
    interconnect: tuple[int, float] | None = None  # (bytes/s per rank, seconds per small all-reduce)
    gpu_cores: int | None = None  # Apple GPU cores: how many threadgroups a tiled matmul needs to fill it
    # the device memory technology where it changes what kernels reach (HBM: llama.cpp's mat-vec kernels
    # reach a lower share of peak there, plan/roof.share_kinds); None: not catalogued
    memory_type: str | None = None
    # the GPU as a class, for what its kernels reach (plan/roof.share_kinds, speed/kernels.py): its generation
    # ("apple-m2"), its tier within it ("base", "pro", "max", "ultra") and how many dies it joins (an Ultra: 2);
    # read from catalog fields, never from the machine's name; None / 1: not catalogued
    gpu_family: str | None = None
    gpu_tier: str | None = None
    dies: int = 1
    # figures measured on this host with their trials (key as in `sources`: "bandwidth"), when and how busy
    # the host was (fits/machine_detect.py); where they came from a saved profile, its path (machine_profile.py)
    measured: Mapping[str, Spread] = field(default_factory=dict)
    measured_at: str | None = None  # ISO 8601 UTC
    contention: str | None = None
    profile_path: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "peak_flops", MappingProxyType(dict(self.peak_flops)))
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))
        object.__setattr__(self, "measured", MappingProxyType(dict(self.measured)))

    @property
    def memory_bytes(self) -> int:
        """Memory of the first device (catalog machines: every device)."""
        return self.devices[0].memory_bytes

    @property
    def n_devices(self) -> int:
        return len(self.devices)


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
    out = replace(m, devices=tuple(devs), sources=sources, notes=notes)
    return _as_box(out, m) if n_devices is not None and n_devices > 1 and m.n_devices == 1 else out


def _as_box(m: Machine, one: Machine) -> Machine:
    """A one-GPU entry copied to N GPUs is an N-GPU box: named so, and its ranks all-reduce over a link (the
    entry's, else PCIe assumed and said so: plan/roof.py and speed/roofline.allreduce_s price it)."""
    n = m.n_devices
    sources = dict(m.sources)
    link = m.interconnect
    if link is None:
        link = (ASSUMED_LINK_BYTES_PER_S, ASSUMED_LINK_LATENCY_S)
        sources["interconnect"] = ASSUMED_LINK_SOURCE
    return replace(m, name=f"{n}x-{one.name}", display_name=f"{n} x {one.display_name}", interconnect=link,
                   sources=sources, notes=(*m.notes, f"ranks linked by {sources.get('interconnect', 'the entry')}"))


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


def describe(m: Machine) -> dict[str, Any]:
    """JSON-ready description (the catalog schema plus origin, per-device memory and free bytes)."""
    return {"name": m.name, "display_name": m.display_name, "kind": m.kind, "vendor": m.vendor,
            "origin": m.origin, "memory_bytes": m.memory_bytes, "devices": m.n_devices,
            "bandwidth_bytes_per_s": m.bandwidth_bytes_per_s, "memory_type": m.memory_type,
            "gpu_cores": m.gpu_cores, "peak_flops": dict(m.peak_flops),
            "usable_fraction": m.usable_fraction, "sources": dict(m.sources),
            "host_memory_bytes": m.host_memory_bytes, "notes": list(m.notes),
            "device_list": [{"index": d.index, "name": d.name, "kind": d.kind, "memory_bytes": d.memory_bytes,
                             "free_bytes": d.free_bytes, "usable_fraction": d.usable_fraction}
                            for d in m.devices],
            **({"measured": measured_json(m)} if m.measured else {})}


def measured_json(m: Machine) -> dict[str, Any]:
    """The measured figures with their spread, when and how busy the host was, and the profile they came
    from (None: measured in this run)."""
    return {"figures": {k: {"median": s.median, "q1": s.q1, "q3": s.q3, "trials": s.trials, "kept": s.kept,
                            "seconds": round(s.seconds, 3), "clock": s.clock} for k, s in m.measured.items()},
            "measured_at": m.measured_at, "contention": m.contention, "profile": m.profile_path}
