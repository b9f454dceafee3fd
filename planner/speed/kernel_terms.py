"""The roofline's kernel terms: which published kernel curves price a forward, and what they add to it.

Why apart from roofline.py (the bytes, FLOPs and overheads of one forward, and their composition): each term
here reads the engine's kernel catalog for this machine class and these weights (speed/kernels.py, the
physical model of speed/kernel_model.py, the MoE dispatch of speed/moe_dispatch.py): the small-batch
kernels' t_v(n)/t_v(1), the bandwidth share a weight format streams at, the tiled matrix kernel past the
vector kernels, the routed experts' own kernels, and the matmul rows past a published curve.
roofline.forward_cost computes `kernel_key` once per forward and hands it to each (`kk`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from ..core import quant
from ..core.spec import ModelSpec
from ..engines.base import share_key
from ..fits import memory
from ..fits.memory import Settings
from . import kernels, moe_dispatch
from .matmuls import forward_matmuls

# (backend, kernel family) of kernel_key: which published kernel curves price a forward
KernelKey = tuple[str | None, str | None]


class MachineLike(Protocol):
    """What the roofline needs from a machine (catalogs/machines/<slug>.json figures)."""

    # read-only members (properties), so frozen dataclasses (Machine, Roof) satisfy the protocol
    @property
    def bandwidth_bytes_per_s(self) -> float: ...

    @property
    def peak_flops(self) -> Mapping[str, float | None]: ...  # keys: "bf16", "fp16", "fp8", "int8"




def matmul_params(spec: ModelSpec) -> float:
    """Parameters one token multiplies by (2 x this x n = the matmul FLOPs of forward_flops)."""
    return float(max(spec.params_active - (0 if spec.tied_embeddings else spec.vocab * spec.hidden), 0))


def matrix_seconds(spec: ModelSpec, s: Settings, machine: MachineLike, rows: int, peak: float, *,
                   experts: bool = True, kk: KernelKey | None = None
                   ) -> tuple[float, float, float, tuple[str, ...]] | None:
    """(central, fast, slow) seconds of the weight matmuls on the backend's tiled matrix kernel, and why.

    None where the forward runs the vector kernels, the backend has no matrix model, or the machine
    catalogues no GPU core count (the roofline's plain compute term then stands). `experts`: False where
    the routed experts have their own kernels (routed_experts). `kk`: kernel_key's answer when the caller has it.
    """
    cores = getattr(machine, "gpu_cores", None)
    if not cores or peak <= 0:
        return None
    mk = kernels.matrix_kernel(*(kk or _machine_kernel_key(spec, s, machine)), rows)
    if mk is None:
        return None
    t = mk.seconds(forward_matmuls(spec, rows, experts=experts), rows, peak, int(cores))
    lo, hi = mk.residuals()
    why = (f"tiled matmul: {mk.tile_rows} x {mk.tile_tokens} tiles, {mk.peak_share:g} of {peak / 1e12:.4g} TFLOP/s once "
           f"{mk.saturation:g} threadgroups per core fill {cores} cores ({mk.source}); calibration residuals "
           f"{lo:.2f}-{hi:.2f}x",)
    return t, t * min(lo, 1.0), t * max(hi, 1.0), why


def routed_experts(spec: ModelSpec, s: Settings, machine: MachineLike, rows: int, bw: float,
                   peak: float, *, kk: KernelKey | None = None) -> moe_dispatch.ExpertCost | None:
    """The routed experts' own cost where the backend switches their kernel with the token count
    (speed/moe_dispatch.py: llama.cpp Metal's mul_mv_id / mul_mm_id); None elsewhere or for a dense model."""
    backend, fam = kk or _machine_kernel_key(spec, s, machine)
    d = moe_dispatch.dispatch(backend)
    experts_bytes = memory.bytes_by_group(spec, s).get("experts", 0) if d is not None and spec.moe else 0
    if d is None or not experts_bytes:
        return None
    mk = kernels.matrix_kernel(backend, fam, max(rows, d.matrix_from))
    return moe_dispatch.expert_cost(spec, d, float(experts_bytes), rows, bw, mk, peak,
                                    int(getattr(machine, "gpu_cores", 0) or 0))


def beyond_curve_s(spec: ModelSpec, s: Settings, machine: MachineLike, rows: int, comp_s: float, *,
                   kk: KernelKey | None = None) -> float:
    """Matmul time of the token rows a batched forward has past the backend's published kernel curve.

    # published curves (speed/kernels.py) measure t(n)/t(1) up to n_c token rows; past n_c the level is held,
    # and each further row adds its own FLOPs on top of the weight stream instead of hiding under it:
    #   beyond = compute_s * (rows - n_c) / rows        (0 when rows <= n_c)
    Why: decode TPOT grows with concurrency long before the FLOP roof binds (the kernels past their
    small-batch plateau are neither flat nor perfectly overlapped); the low end of the interval keeps the
    overlapped roofline, so the gap between the two is stated, not hidden.
    """
    span = kernels.measured_span(*(kk or _machine_kernel_key(spec, s, machine)))
    return comp_s * (rows - span) / rows if rows > span else 0.0


def kernel_key(spec: ModelSpec, s: Settings, kind: str, chip_class: str) -> KernelKey:
    """(backend, kernel family): which published curves apply to these weights on this engine and machine
    (`chip_class`: kernels.gpu_class(machine), the catalogued GPU class)."""
    backend = kernels.backend_for_machine(s.resolved_engine.verify_backend.get(kind), chip_class)
    scheme = quant.parse_scheme(s.weights_dtype, group_size=s.group_size).kind if s.weights_dtype else None
    return backend, kernels.family(memory.weights(spec, s)[1], scheme)


def _machine_kernel_key(spec: ModelSpec, s: Settings, machine: MachineLike) -> KernelKey:
    """kernel_key for this machine's kind and catalogued GPU class."""
    return kernel_key(spec, s, getattr(machine, "kind", "gpu"), kernels.gpu_class(machine))


def format_factor(spec: ModelSpec, s: Settings, machine: MachineLike, *, kk: KernelKey | None = None
                  ) -> tuple[float, str]:
    """The factor on the bandwidth share the weights' decode kernel streams at on this machine class
    (Engine.format_share: llama.cpp's k-quants on GDDR GPUs and Metal), with its source; 1.0 elsewhere."""
    kind = str(getattr(machine, "kind", "gpu"))
    key = share_key(getattr(machine, "share_kind", None) or kind)
    table = (s.resolved_engine.format_share.get(key) if key else None) or {}
    if not table:
        return 1.0, ""
    fam = (kk or kernel_key(spec, s, kind, kernels.gpu_class(machine)))[1]
    return table.get(fam or "", (1.0, ""))


def kernel_ratio(spec: ModelSpec, s: Settings, kind: str, n: int, *, measured_only: bool = False,
                 chip_class: str = "", machine: MachineLike | None = None, kk: KernelKey | None = None
                 ) -> kernels.Ratio:
    """t_v(n)/t_v(1) of the engine's small-batch kernels on this machine kind for these weights.

    With the machine, a backend's physical model (speed/kernel_model.py) scales the published curves to
    its bandwidth and ALU rate and to these weights' bytes per weight (resident weight bytes / parameters).
    The model sees the chip at the engine's share for the machine kind, as it saw its calibration chips
    (kernel_model.calibration_chip): a class's own derate (an Ultra's lower streaming share) slows the weight
    stream the roofline prices, not the balance of per-token ALU work to stream the curves were fitted on.
    """
    backend, fam = kk or kernel_key(spec, s, kind, chip_class)
    total = memory.weights(spec, s)[0]
    chip = weights = None
    if machine is not None and spec.params_total > 0:
        bw = float(machine.bandwidth_bytes_per_s or 0)
        key, own = share_key(getattr(machine, "share_kind", None)), share_key(kind)
        table = s.resolved_engine.bandwidth_efficiency if s.engine else {}
        if key and own and key in table and own in table and key != own:
            bw *= table[own][0] / table[key][0]
        chip = kernels.Chip(str(getattr(machine, "name", "")), bw, dict(machine.peak_flops or {}), gpu_class=chip_class)
        weights = kernels.Weights(total / spec.params_total, spec.params_total)
    return kernels.ratio(backend, fam, n, measured_only=measured_only, chip=chip, weights=weights)
