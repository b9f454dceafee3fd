"""The machine as the roofline sees it for one engine and layout: aggregate bandwidth and FLOP/s of the
tensor-parallel ranks, the shares of peak the engine reaches, and the link the ranks all-reduce over.

Why its own module: recommend, assess, check and the report price plans on the same machine figures;
each share is an engine fact with its source (engines/*.py), applied here once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import cast

from ..core.constants import CPU_MATMUL_EFFICIENCY
from ..core.errors import MachineError
from ..engines.base import Engine, ShareKey
from ..engines.base import share_key as as_share_key
from ..fits import fit
from ..fits.machine import Machine
from ..speed import roofline


def roofline_machine(machine: Machine, layout: fit.Layout, engine: Engine | None = None) -> roofline.Roof:
    """Tensor parallelism reads each shard in parallel: aggregate bandwidth and FLOP/s of the tp ranks.
    CPU peaks are derated by CPU_MATMUL_EFFICIENCY (measured llama.cpp throughput, constants.py); with an
    engine, the bandwidth is what that engine's batch-1 decode reaches on this kind of machine
    (Engine.bandwidth_efficiency, each figure with its source).

    Raises:
        MachineError: the machine has no bandwidth figure (a --gpu-memory-only description).
    """
    if not machine.bandwidth_bytes_per_s:
        raise MachineError(f"Cannot predict speed on '{machine.display_name}': it has no memory-bandwidth figure. "
                           f"Use --machine with a catalog name (planner machines list), --profile FILE from "
                           f"'planner probe', or --probe on this machine.")
    tp = layout.tp
    # CPUs: LLM matmul kernels reach a fraction of the vector-FMA peak the catalog and detection give;
    # GPUs: the share of peak tensor FLOP/s the engine's GEMMs reach (Engine.compute_efficiency)
    eff = CPU_MATMUL_EFFICIENCY if machine.kind == "cpu" else compute_share(engine, machine.kind)[0]
    flops = {k: (v * tp * eff if v else v) for k, v in machine.peak_flops.items()}
    key = share_key(engine, machine, tp)
    share, _ = bandwidth_share(engine, key)
    link, latency = machine.interconnect or (None, 0.0)
    return roofline.Roof(bandwidth_bytes_per_s=machine.bandwidth_bytes_per_s * tp * share, peak_flops=flops,
                         name=machine.name, kind=machine.kind, tp=tp, link_bytes_per_s=link, link_latency_s=latency,
                         gpu_cores=machine.gpu_cores, share_kind=key, gpu_family=machine.gpu_family,
                         gpu_tier=machine.gpu_tier)


def compute_share(engine: Engine | None, kind: str) -> tuple[float, str]:
    """(share of peak tensor FLOP/s the engine's GEMMs reach, its source) on this machine kind."""
    if engine is None:
        return 1.0, "peak FLOP/s"
    key = as_share_key(kind)  # text from the machine: a kind outside the closed set has no share
    found = engine.compute_efficiency.get(key) if key is not None else None
    return found if found is not None else (1.0, "peak FLOP/s (no measured share)")


def share_kinds(machine: Machine, tp: int = 1) -> tuple[ShareKey, ...]:
    """The keys a machine's achieved bandwidth share may be catalogued under, most specific first:
    "gpu-tp" for GPUs in a tensor-parallel group (each rank's shard is small and every layer
    synchronises the group twice), "gpu-hbm" for GPUs on HBM (mat-vec kernels tuned on GDDR cards keep
    too few bytes in flight there), "gpu-amd" for AMD GPUs (llama.cpp's HIP build of its CUDA kernels streams
    below them on NVIDIA cards), "apple-ultra" for the two-die Apple Ultra chips (UltraFusion: decode
    reaches a lower share of the nominal figure), then the machine's kind. Each class is a catalogued
    machine field (memory_type, vendor, dies), never a substring of the machine's name."""
    keys: list[ShareKey] = []
    if machine.kind == "gpu" and tp > 1:
        keys.append("gpu-tp")
    if machine.kind == "gpu" and machine.memory_type == "hbm":
        keys.append("gpu-hbm")
    if machine.kind == "gpu" and machine.vendor == "amd":
        keys.append("gpu-amd")
    if machine.kind == "apple" and machine.dies > 1:
        keys.append("apple-ultra")
    return (*keys, cast("ShareKey", machine.kind))


def share_key(engine: Engine | None, machine: Machine, tp: int = 1) -> ShareKey:
    """The most specific key this engine catalogues a share under (its kind where it catalogues none)."""
    keys = share_kinds(machine, tp)
    table = engine.bandwidth_efficiency if engine else {}
    return next((k for k in keys if k in table), keys[-1])


def bandwidth_share(engine: Engine | None, kind: str) -> tuple[float, str]:
    """(share of peak bandwidth a batch-1 decode reaches, its source) for this engine on this machine kind."""
    if engine is None:
        return 1.0, "peak bandwidth"
    key = as_share_key(kind)  # text from the machine: a kind outside the closed set has no share
    found = engine.bandwidth_efficiency.get(key) if key is not None else None
    return found if found is not None else (1.0, "peak bandwidth (no measured share)")


def measured_ends(machine: Machine, layout: fit.Layout, engine: Engine | None = None
                  ) -> tuple[tuple[roofline.Roof, roofline.Roof], str] | None:
    """Roofs at the low and high quartile of the machine's measured bandwidth (fits/machine_detect.py), and
    a line naming them; None when the bandwidth was not measured or its trials did not spread."""
    s = machine.measured.get("bandwidth")
    if s is None or not s.q1 < s.q3 or not machine.bandwidth_bytes_per_s:
        return None
    ends = tuple(roofline_machine(replace(machine, bandwidth_bytes_per_s=int(b)), layout, engine) for b in (s.q1, s.q3))
    why = (f"the measured bandwidth's spread {s.q1 / 1e9:.1f}-{s.q3 / 1e9:.1f} GB/s (IQR of {s.kept} trials, "
           f"{machine.measured_at or 'this run'})")
    return (ends[0], ends[1]), why
