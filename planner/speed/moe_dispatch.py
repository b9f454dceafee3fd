"""How a MoE layer's routed experts are multiplied on a backend whose expert kernel switches with the batch.

Why its own module: llama.cpp's Metal backend does not run the routed experts on the kernels the
dense weights take. `ggml_metal_op_mul_mat_id` (ggml/src/ggml-metal/ggml-metal-ops.cpp @ 6340ab1)
switches on the token count `ne21` against `ne21_mm_id_min = 32`, "the break-even point where the
matrix-matrix kernel becomes more efficient compared to the matrix-vector kernel":

  n < 32   `mul_mv_id`: one matrix-vector product per (token, chosen expert) pair -- the dispatch's
           third grid dimension is ne20 x ne21 -- so each pair streams its expert's weights again:
           the experts cost n x (one token's k experts), the weights are not shared between tokens
  n >= 32  `mul_mm_id`: one dispatch per matmul for all of the layer's experts (grid ceil(n/32) x
           ceil(rows/64) x n_expert, a map kernel first groups the tokens by expert): each touched
           expert's weights stream once and its tokens fill 32-column tiles

Pricing the experts as the dense weights' vector kernels (t_v(n)/t_v(1) on the touched bytes) or as
the dense matrix kernel past 8 tokens (one expert's few 64-row tiles per dispatch, most GPU cores
idle) gave Qwen3-30B-A3B on an M4 Max t_v(9) = 548 ms, 98x t_v(1) (#31 item 8). Here:

  per pair (n < switch):  expert_s = n x k/E x expert_bytes / bw          (central and slow end)
                          fast end: the touched experts once (pairs that share an expert hit the cache)
  grouped (n >= switch):  expert_s = max(touched bytes / bw, tiles' FLOPs at the dispatch's occupancy)
                          tiles: touched x ceil(rows/64) x ceil(tokens per expert / 32) threadgroups

and the backend's switch is where the two kernels cross ("the break-even point"), so the grouped kernel's
level is anchored to the per-pair cost at the switch: the curve runs on through it without a step, the
grouped model's own level kept as the interval's end. (A dense k-quant's t_v(3) > t_v(4) on Metal is not
smoothed away: plain mul_mv at n = 2, 3 and mul_mv_ext from 4 is the engine's real dispatch.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..core import jsonio
from ..core.constants import catalog_dir
from ..core.errors import ConfigError
from ..core.spec import ModelSpec
from .kernel_model import Matrix
from .matmuls import expected_experts_touched

CATALOG = "kernels/moe_dispatch.json"


@dataclass(frozen=True)
class Dispatch:
    """A backend's expert-kernel switch: token count from which all experts go in one matrix dispatch."""

    backend: str
    matrix_from: int
    source: str


@dataclass(frozen=True)
class ExpertCost:
    """The routed experts' share of one forward: seconds (central, fast, slow), the bytes they stream
    (central), the FLOPs they compute, and which kernel ran them."""

    seconds: float
    seconds_low: float
    seconds_high: float
    bytes_streamed: float
    touched_bytes: float  # the touched experts' bytes once: what the stock roofline counted
    flops: float
    kernel: str  # "per-pair" | "grouped"
    source: str


@lru_cache(maxsize=4)
def _catalog(directory: str) -> dict[str, Dispatch]:
    path = f"{directory}/{CATALOG}"
    doc: Any = jsonio.read_json(path)
    try:
        return {str(k): Dispatch(str(k), int(v["matrix_from"]), str(v["source"]))
                for k, v in dict(doc["backends"]).items()}
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"Cannot read '{path}': {e!r} (expected backends: {{name: {{matrix_from, source}}}}).",
                          path) from e


def dispatch(backend: str | None) -> Dispatch | None:
    """The backend's expert-kernel switch (None: the backend multiplies experts like its dense weights)."""
    if backend is None:
        return None
    return _catalog(str(catalog_dir())).get(backend)


def moe_layers(spec: ModelSpec) -> int:
    return sum(1 for layer in spec.layers if layer.ffn == "moe")


def expert_params(spec: ModelSpec) -> int:
    """Parameters of one routed expert across every MoE layer (gate, up, down)."""
    return 3 * spec.hidden * spec.moe.expert_intermediate * moe_layers(spec) if spec.moe else 0


def expert_cost(spec: ModelSpec, d: Dispatch, experts_bytes: float, rows: int, bw: float,
                matrix: Matrix | None, alu: float, cores: int) -> ExpertCost:
    """The routed experts of one forward of `rows` tokens on dispatch `d` (see the module docstring).

    `experts_bytes`: all routed experts' resident bytes; `bw`: the streaming rate (B/s, the format's
    share applied); `matrix`: the backend's tiled kernel (its tiles and occupancy), None: bytes only.
    """
    m = spec.moe
    assert m is not None
    per_token = experts_bytes * m.experts_per_token / m.experts  # one token's k experts, every layer
    touched_n = expected_experts_touched(m.experts, m.experts_per_token, rows)
    touched = experts_bytes * touched_n / m.experts
    flops = 2.0 * rows * m.experts_per_token * expert_params(spec)
    if rows < d.matrix_from:
        pairs = rows * per_token  # mul_mv_id: one matvec per (token, expert) pair
        return ExpertCost(pairs / bw, min(touched, pairs) / bw, pairs / bw, pairs, touched, flops, "per-pair",
                          f"routed experts on {d.backend} mul_mv_id below {d.matrix_from} tokens: {rows} x "
                          f"{m.experts_per_token} (token, expert) matvecs, each expert's weights streamed per pair "
                          f"(fast end: pairs sharing an expert hit the cache) ({d.source})")
    grouped, g_lo, g_hi = _grouped(spec, experts_bytes, rows, bw, matrix, alu, cores)
    # continuous at the switch: the engine switches where the kernels cross, so the grouped kernel's level at
    # the switch is the per-pair cost there; the grouped model's own level and its residuals bound it
    anchor = d.matrix_from * per_token / bw / _grouped(spec, experts_bytes, d.matrix_from, bw, matrix, alu, cores)[0]
    central = grouped * anchor
    return ExpertCost(central, min(central, g_lo), max(central, g_hi), touched, touched, flops, "grouped",
                      f"routed experts on {d.backend} mul_mm_id from {d.matrix_from} tokens: {touched_n:.1f} of "
                      f"{m.experts} experts touched, streamed once, their 32-token tiles in one dispatch per matmul; "
                      f"level continuous with the per-pair kernel at the switch (the grouped model alone: "
                      f"{grouped * 1e3:.3g} ms) ({d.source})")


def _grouped(spec: ModelSpec, experts_bytes: float, rows: int, bw: float, matrix: Matrix | None, alu: float,
             cores: int) -> tuple[float, float, float]:
    """The grouped kernel's (central, fast, slow) seconds: the touched experts' stream, or their tiles' FLOPs."""
    m = spec.moe
    assert m is not None
    touched_n = expected_experts_touched(m.experts, m.experts_per_token, rows)
    stream = experts_bytes * touched_n / m.experts / bw
    tiled = grouped_seconds(spec, matrix, rows, touched_n, alu, cores) if matrix is not None else 0.0
    lo, hi = matrix.residuals() if matrix is not None else (1.0, 1.0)  # the tiled kernel's calibration residuals
    return max(stream, tiled), max(stream, tiled * min(lo, 1.0)), max(stream, tiled * max(hi, 1.0))


def grouped_seconds(spec: ModelSpec, mk: Matrix, rows: int, touched: float, alu: float, cores: int) -> float:
    """FLOP time of the routed experts on the grouped matrix kernel (mul_mm_id), one dispatch per matmul.

    # tokens per touched expert t_e = rows x k / touched ; tiles per expert = ceil(t_e / tile_tokens)
    # threadgroups per matmul = touched x ceil(weight rows / tile_rows) x tiles   (all experts at once)
    # seconds = layers x sum over gate/up/down of touched x 2 x rows_w x depth x tile_tokens x tiles
    #           / (ALU x peak_share x min(1, threadgroups / (cores x saturation)))
    """
    m = spec.moe
    if m is None or touched <= 0 or alu <= 0 or cores <= 0:
        return 0.0
    tiles = math.ceil(rows * m.experts_per_token / touched / mk.tile_tokens)
    total = 0.0
    for w_rows, depth, count in ((m.expert_intermediate, spec.hidden, 2), (spec.hidden, m.expert_intermediate, 1)):
        groups = touched * math.ceil(w_rows / mk.tile_rows) * tiles
        share = mk.peak_share * min(1.0, groups / (cores * mk.saturation))
        total += count * touched * 2.0 * w_rows * depth * mk.tile_tokens * tiles / (alu * share)
    return moe_layers(spec) * total
