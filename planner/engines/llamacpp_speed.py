"""llama.cpp's measured speed facts: achieved bandwidth shares, fixed costs per forward and weight-format factors.

Why its own module: each figure is a fit on published decodes; the values, their fits and the rows they
were fitted on live in catalogs/calibration/llamacpp.json (read through core/calibration.py), and this
module lays them out the way the `Engine` holds them, so the engine's home (engines/llamacpp.py) reads
them as it reads every other fact.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.calibration import ANY, sourced
from .base import ShareKey

NAME = "llama.cpp"


def _kinds(*kinds: ShareKey) -> tuple[ShareKey, ...]:
    """The machine classes a table below holds (typed: a misspelt class fails mypy, not a plan)."""
    return kinds


# Every figure is an entry of catalogs/calibration/llamacpp.json (value, unit, fit, the rows it was fitted
# on, the rows held out, source); the comments below say what each one is.

# datacenter GPUs on HBM: batch-1 decode of 8B and 70B Q4_K_M on one GPU (llama-bench tg512, May 2024) lies
# on t = bytes / (share x peak) + a fixed cost per forward (two-point fits per GPU, the median taken): host
# work per llama_decode (graph build, scheduling, sampling), so every draft step pays it as well. The
# two-die Ultras: the same fit on geerlingguy's 3B and 70B Q4_K_M decodes (the mean of M1 and M3 Ultra).
FORWARD_OVERHEAD_BY_KIND: Mapping[ShareKey, tuple[tuple[float, float], str]] = {
    kind: ((f[0], 0.0), f[1]) for kind in _kinds("gpu-hbm", "apple-ultra")
    for f in (sourced(NAME, kind, "forward_fixed_s"),)
}

# the k-quants' mat-vec kernels (multi-level scales unpacked per block) stream below the others: on GDDR
# GPUs ten published Q4_K_M decodes imply 0.56-0.71 of peak, median 0.611 = 0.777 x the 0.786 share; on
# AMD one ROCm Q4_K_M decode against the Q4_0 share; on Metal draftbench's M4 Max Q4_K_M baselines
FORMAT_SHARE: Mapping[ShareKey, Mapping[str, tuple[float, str]]] = {
    kind: {"kquant": sourced(NAME, kind, "format_share.kquant")} for kind in _kinds("gpu", "gpu-amd", "apple", "apple-ultra")}

# achieved / peak bytes per second of batch-1 decode per machine class: GDDR GPUs the median of six
# F16/Q8_0/Q4_0 decodes; HBM and Ultra the two-point fits above; AMD (HIP) one Q4_0 decode on a 7900 XTX
# (older builds stream lower, the Vulkan backend higher); Metal draftbench's M4 Max Q8_0/F16 decodes
BANDWIDTH_EFFICIENCY: Mapping[ShareKey, tuple[float, str]] = {
    **{kind: sourced(NAME, kind, "bandwidth_share") for kind in _kinds("gpu", "gpu-hbm", "gpu-amd", "apple", "apple-ultra")},
    # definitional, not fitted: CPU bandwidth is the measured copy bandwidth or the catalogued figure
    "cpu": (1.0, "CPU bandwidth is the measured copy bandwidth or the catalogued figure; matmul compute is "
                 "derated separately (CPU_MATMUL_EFFICIENCY)"),
}

# per-op kernel launches: CUDA graphs removed this much per layer (llama.cpp PR #6766); an upper bound on
# CUDA builds with graphs, the cost on Metal/CPU backends, which launch per op
LAUNCH_PER_LAYER = sourced(NAME, ANY, "forward_per_layer_s")
