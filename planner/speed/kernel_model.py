"""A physical model of small-batch verification on one chip: t_v(n)/t_v(1) from bandwidth, ALU rate and format.

Why: a published curve is one chip and one weight format. llama.cpp's Metal mul_mv_ext
(ggml-metal.metal kernel_mul_mv_ext_q4_f32_impl) dequantises each weight chunk once per pass and
dots it with r1ptg token columns, so each extra token costs one FMA and one activation load per
weight on the ALUs while the weights stream once. That extra is a chip property (ALU FLOP/s next to
bandwidth) times a format property (weights per byte), which is why Q8_0 grows faster on an M1 Pro
than on an M2 Ultra, and a 4-bit format about twice as fast as Q8_0 on the same chip:

  t(1)        = N x bpw / bw                                        (the weight stream)
  t(n) - t(1) = ((n - 1) x F + (passes(n) - 1) x P) x N / ALU   (per-token FMA + activation load; each
                                                                 further pass redoes the dequantisation)
  r(n)        = 1 + ((n - 1) x F + (passes(n) - 1) x P) x bw / (ALU x bpw)      for n in the kernel's range
              = r(last) past the range (the matrix kernel the backend switches to costs at least what the
                vector kernel costs at the switch: the engine switches where they cross), or 1 for a family
                marked `flat` there (a float GEMM the roofline's compute term prices; r(last) the high end)
  N weights, bpw bytes per weight (resident weight bytes / parameters), bw the bandwidth the roofline
  streams at, ALU the chip's vector FLOP/s (catalogued) x its issue rate (M3 and later dual-issue),
  passes(n) = ceil(n / r1ptg(n)) from the dispatch.

F (FLOP-equivalents per weight per extra token) and P (per weight per extra pass) are fitted
by least squares on the published whole-model curves the entry lists under `calibration` (each chip's
figures from its catalogue entry); each curve's own fit, and the nominal issue rate, bound the interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

from .. import engines
from ..core.errors import ConfigError, UsageError
from ..engines.base import ShareKey
from ..fits import machine_lookup

SIZE_CLASS = 2.0  # a published curve stands for models within this factor of its own size


@dataclass(frozen=True)
class Chip:
    """What the model reads about a machine: its catalogue name, streaming bandwidth and vector ALU rate."""

    name: str
    bytes_per_s: float  # the bandwidth the roofline streams weights at (peak x the engine's share)
    flops: Mapping[str, float | None]  # peak FLOP/s by key; a backend's alu_key names its vector ALU rate
    gpu_class: str = ""  # the machine's catalogued GPU class, 'apple-m2/ultra' (speed/kernels.gpu_class)

    def alu(self, key: str) -> float | None:
        v = self.flops.get(key)
        return float(v) if v else None


@dataclass(frozen=True)
class Weights:
    """The target's resident weights: bytes per weight (the format property) and size class."""

    bytes_per_weight: float
    params: int


@dataclass(frozen=True)
class Fit:
    """The fitted constants: F FLOP per weight per extra token, P FLOP per weight per extra pass."""

    flop_per_weight: float
    pass_flop: float
    source: str


@dataclass(frozen=True)
class Physical:
    """One backend's physical small-batch model (catalogs/kernels/verify_curves.json `physical`)."""

    backend: str
    alu_key: str  # the peak_flops key holding the chip's vector ALU rate
    ranges: Mapping[str, tuple[int, int]]  # family -> (first n, last n) the vector kernel runs
    past: Mapping[str, str]  # family -> "hold" (the matrix kernel past the range costs the level at the
    #                          switch) or "flat" (a float GEMM the roofline's compute term prices; high end held)
    r1ptg: Mapping[int, int]  # token columns per pass at each n (the dispatch switch)
    dual_issue: Mapping[str, float]  # GPU generation (gpu_family) -> instructions issued per cycle (M3 and later: 2)
    engine: engines.Engine  # whose bandwidth share the calibration chips stream at (resolved when the catalogue loads)
    kind: str
    calibration: tuple[tuple[str, str, tuple[tuple[int, float], ...], str], ...]  # (machine, family, points, source)
    source: str
    matrix: Matrix | None = None  # the tiled matrix kernel families marked past = "matrix" switch to

    def matrix_at(self, fam: str, n: int) -> Matrix | None:
        """The matrix kernel n token rows of family `fam` run on (None: inside the vector range, or held/flat)."""
        span = self.ranges.get(fam)
        return self.matrix if span is not None and n > span[1] and self.past.get(fam) == "matrix" else None

    def passes(self, n: int) -> int:
        return math.ceil(n / self.r1ptg.get(n, n))

    def issue(self, chip: Chip) -> float:
        """Instructions the chip's schedulers issue per cycle where the nominal FLOP/s counts one (dual issue)."""
        return next((f for fam, f in self.dual_issue.items()
                     if chip.gpu_class == fam or chip.gpu_class.startswith(fam + "/")), 1.0)

    def ratio(self, n: int, fam: str, chip: Chip, w: Weights, fit: Fit, *, single_issue: bool = False) -> float | None:
        """r(n) on this chip for these weights (None: the family or n is outside the model).

        The work is per weight, whatever the format: the kernel's dot product runs per dequantised element
        (so 4-bit weights, 0.5625 B each, pay about twice Q8_0's extra per byte streamed).
        `single_issue`: the chip's nominal ALU rate even where its schedulers dual-issue (the high end).
        """
        span, alu = self.ranges.get(fam), chip.alu(self.alu_key)
        if span is None or not alu or w.bytes_per_weight <= 0 or n < span[0]:
            return None
        alu *= 1.0 if single_issue else self.issue(chip)
        m = min(n, span[1])
        bpw = w.bytes_per_weight
        # r(m) = 1 + ((m - 1) F + (passes(m) - 1) P) bw / (ALU bpw)
        flop = (m - 1) * fit.flop_per_weight + (self.passes(m) - 1) * fit.pass_flop
        return 1.0 + flop * chip.bytes_per_s / (alu * bpw)


    def fits(self) -> tuple[Fit, tuple[Fit, ...]]:
        """(the pooled fit, each calibration curve's own fit)."""
        rows = [self._rows(c) for c in self.calibration]
        own = tuple(_least_squares(r, src) for r, (_, _, _, src) in zip(rows, self.calibration, strict=True))
        pooled = _least_squares([x for r in rows for x in r], "; ".join(c[3] for c in self.calibration))
        return pooled, own

    def _rows(self, cal: tuple[str, str, tuple[tuple[int, float], ...], str]) -> list[tuple[float, float, float]]:
        """(x1, x2, y) per calibration point: y = r - 1 = F x1 + P x2, x1 = (n-1) g, x2 = (passes-1) g, g = bw / (ALU bpw)."""
        name, fam, points, _ = cal
        chip = calibration_chip(name, self.engine, self.kind, self.alu_key)
        bpw = FAMILY_BPW[fam]
        lo, hi = self.ranges[fam]
        alu = (chip.alu(self.alu_key) or 0.0) * self.issue(chip)
        g = chip.bytes_per_s / (alu * bpw)
        return [((n - 1) * g, (self.passes(n) - 1.0) * g, r - 1.0)
                for n, r in points if lo <= n <= hi]


# The calibration curves' formats: bytes per weight of one GGUF block (ggml-common.h block_q8_0: 2 + 32 B / 32).
FAMILY_BPW = {"q8": 34 / 32, "float": 2.0}


def calibration_chip(name: str, e: engines.Engine, kind: str, alu_key: str) -> Chip:
    """A calibration machine as the roofline sees it (plan/recommend.roofline_machine): catalogue bandwidth x
    the engine's bandwidth share, FLOP/s x its compute share."""
    m = machine_lookup.get_machine(name)
    share = e.bandwidth_efficiency.get(cast("ShareKey", kind), (1.0, ""))[0]
    compute = e.compute_efficiency.get(cast("ShareKey", kind), (1.0, ""))[0]
    alu = m.peak_flops.get(alu_key)
    if not m.bandwidth_bytes_per_s or not alu:
        raise ConfigError(f"Cannot calibrate the kernel model on '{name}': it catalogues no bandwidth or "
                          f"{alu_key} FLOP/s.")
    cls = f"{m.gpu_family}/{m.gpu_tier}" if m.gpu_family and m.gpu_tier else (m.gpu_family or "")
    return Chip(name, float(m.bandwidth_bytes_per_s) * share, {alu_key: float(alu) * compute}, gpu_class=cls)


def _least_squares(rows: Sequence[tuple[float, float, float]], source: str) -> Fit:
    """y = F x1 + P x2 by least squares (normal equations); P = 0 when no point has a second pass."""
    s11 = sum(a * a for a, _, _ in rows)
    s12 = sum(a * b for a, b, _ in rows)
    s22 = sum(b * b for _, b, _ in rows)
    s1y = sum(a * y for a, _, y in rows)
    s2y = sum(b * y for _, b, y in rows)
    det = s11 * s22 - s12 * s12
    if s11 <= 0:
        raise ConfigError(f"Cannot calibrate the kernel model: no calibration point in the kernel's range ({source}).")
    if s22 <= 0 or abs(det) < 1e-18 * max(s11 * s22, 1e-300):
        return Fit(s1y / s11, 0.0, source)
    return Fit((s1y * s22 - s2y * s12) / det, max((s11 * s2y - s12 * s1y) / det, 0.0), source)


def physical(item: Mapping[str, Any], path: str) -> Physical:
    """One `physical` entry of the catalogue, checked."""
    try:
        ranges = {str(k): (int(v[0]), int(v[1])) for k, v in dict(item["ranges"]).items()}
        r1 = {int(k): int(v) for k, v in dict(item["r1ptg"]).items()}
        past = {str(k): str(v) for k, v in dict(item.get("past") or {}).items()}
        issue = {str(k): float(v) for k, v in dict(item.get("dual_issue") or {}).items()}
        cal = tuple((str(c["machine"]), str(c["family"]),
                     tuple(sorted((int(n), float(r)) for n, r in dict(c["points"]).items())), str(c["source"]))
                    for c in item["calibration"])
        mat = matrix(item["matrix"], path) if item.get("matrix") is not None else None
        backend, kind = str(item["backend"]), str(item["kind"])
        p = Physical(backend=backend, alu_key=str(item["alu_key"]), ranges=ranges, past=past, r1ptg=r1, dual_issue=issue,
                     engine=_owner(backend, kind, str(item["engine"]), path), kind=kind, calibration=cal,
                     source=str(item["source"]), matrix=mat)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise ConfigError(f"Cannot read '{path}': physical: {e!r} (expected backend, alu_key, ranges, r1ptg, "
                          f"engine, kind, calibration, source).", path, key="physical") from e
    if (not cal or any(f not in FAMILY_BPW for _, f, _, _ in cal) or any(lo < 2 or hi < lo for lo, hi in ranges.values())
            or any(v not in ("hold", "flat", "matrix") for v in past.values())
            or ("matrix" in past.values() and p.matrix is None) or any(not 1 <= v <= 4 for v in issue.values())):
        raise ConfigError(f"Cannot read '{path}': physical {p.backend}: expected calibration curves of "
                          f"{sorted(FAMILY_BPW)}, ranges 2 <= first <= last and past in (hold, flat, matrix; matrix needs a "
                          f"'matrix' entry).", path,
                          key="physical")
    return p


def _owner(backend: str, kind: str, named: str, path: str) -> engines.Engine:
    """The engine the entry's calibration chips stream at: the one running `backend` on `kind` machines
    (the registry's `verify_backend`), which must be the engine the entry names (a catalogue that drifts
    from the engines is an error here, not a silently different share)."""
    try:
        owner = engines.running(backend, kind)
        same = engines.canonical(named) == owner.name
    except UsageError as e:
        raise ConfigError(f"Cannot read '{path}': physical {backend}: {e}", path, key="physical") from e
    if not same:
        raise ConfigError(f"Cannot read '{path}': physical {backend} names engine '{named}', but {owner.name} runs "
                          f"{backend} on {kind} machines (Engine.verify_backend). Name {owner.name}.", path,
                          key="physical")
    return owner


def same_class(curve_class: str, params_b: float | None, chip: Chip, w: Weights) -> bool:
    """A published curve stands for this chip and model: the same GPU class (catalogued fields, not the
    name), size within SIZE_CLASS."""
    if not curve_class or not params_b or chip.gpu_class != curve_class:
        return False
    ratio = w.params / (params_b * 1e9)
    return 1 / SIZE_CLASS <= ratio <= SIZE_CLASS


# --- the tiled matrix kernel past the vector range ---------------------------------------------

@dataclass(frozen=True)
class Matmul:
    """One weight matrix a forward multiplies: output rows (the weight's rows), depth, and how many."""

    rows: int
    depth: int
    count: float  # per forward: layers, or the experts the tokens touch


@dataclass(frozen=True)
class MatrixPoint:
    """A published time of the matrix kernel: a whole-model forward of `n` tokens on one catalogued chip."""

    machine: str
    shape: tuple[int, int, int, int, int, int]  # (hidden, q width, kv width, ffn width, layers, vocab)
    n: int
    seconds: float
    source: str


@dataclass(frozen=True)
class Matrix:
    """The tiled matrix kernel a backend runs past its small-batch vector kernels (llama.cpp Metal mul_mm).

    Why: mul_mm computes 64 weight rows x 32 token columns per threadgroup whatever the batch, so 9..32
    tokens cost the FLOPs of 32, and a matrix with few 64-row tiles leaves GPU cores idle. Per matmul:

      threadgroups = ceil(rows / tile_rows) x ceil(n / tile_tokens)
      share        = peak_share x min(1, threadgroups / (cores x saturation))
      seconds      = count x 2 x rows x depth x tile_tokens x ceil(n / tile_tokens) / (ALU x share)

    summed over the forward's matmuls. `peak_share` (the GEMM's share of the ALU peak once every core
    holds `saturation` threadgroups) and `saturation` are least squares in log time over `calibration`
    (published llama-bench pp2..pp8 times of forwards the engine ran on mul_mm); the calibration's
    residuals bound the interval.
    """

    tile_rows: int
    tile_tokens: int
    peak_share: float
    saturation: float  # threadgroups per core at which the GEMM reaches peak_share
    calibration: tuple[MatrixPoint, ...]
    source: str

    def seconds(self, matmuls: Sequence[Matmul], n: int, alu: float, cores: int) -> float:
        tiles = math.ceil(n / self.tile_tokens)
        total = 0.0
        for m in matmuls:
            groups = math.ceil(m.rows / self.tile_rows) * tiles
            share = self.peak_share * min(1.0, groups / (cores * self.saturation))
            total += m.count * 2.0 * m.rows * m.depth * self.tile_tokens * tiles / (alu * share)
        return total

    def residuals(self) -> tuple[float, float]:
        """(lowest, highest) measured / modelled time over the calibration points."""
        return self._residuals

    @cached_property
    def _residuals(self) -> tuple[float, float]:
        # a pure function of this frozen kernel and the machine catalog it was read with: once per object
        # (a fleet report asks on every tiled forward of every machine)
        ratios = [p.seconds / self._modelled(p) for p in self.calibration]
        return min(ratios), max(ratios)

    def _modelled(self, p: MatrixPoint) -> float:
        m = machine_lookup.get_machine(p.machine)
        alu, cores = m.peak_flops.get("fp16"), m.gpu_cores
        if not alu or not cores:
            raise ConfigError(f"Cannot calibrate the matrix kernel on '{p.machine}': it catalogues no fp16 FLOP/s "
                              f"or GPU core count.")
        return self.seconds(shape_matmuls(*p.shape), p.n, float(alu), cores)


def shape_matmuls(hidden: int, q_width: int, kv_width: int, ffn: int, layers: int, vocab: int) -> tuple[Matmul, ...]:
    """A dense decoder's matmuls from its widths (q/k/v/o, gate/up/down per layer, the lm_head once)."""
    per_layer = ((q_width, hidden), (kv_width, hidden), (kv_width, hidden), (hidden, q_width),
                 (ffn, hidden), (ffn, hidden), (hidden, ffn))
    return (*(Matmul(r, d, layers) for r, d in per_layer), Matmul(vocab, hidden, 1))


def _shape(v: Any) -> tuple[int, int, int, int, int, int]:
    """A calibration shape's six integers (a wrong count is a ValueError, reported as the entry's error)."""
    a, b, c, d, e, f = (int(x) for x in v)
    return a, b, c, d, e, f


def matrix(item: Mapping[str, Any], path: str) -> Matrix:
    """The `matrix` entry of a physical model, checked."""
    try:
        m = Matrix(tile_rows=int(item["tile_rows"]), tile_tokens=int(item["tile_tokens"]),
                   peak_share=float(item["peak_share"]), saturation=float(item["saturation"]),
                   calibration=tuple(MatrixPoint(str(c["machine"]), _shape(c["shape"]),
                                                 int(c["n"]), float(c["seconds"]), str(c["source"]))
                                     for c in item["calibration"]),
                   source=str(item["source"]))
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"Cannot read '{path}': physical matrix: {e!r} (expected tile_rows, tile_tokens, peak_share, "
                          f"saturation, calibration, source).", path, key="physical") from e
    if (m.tile_rows < 1 or m.tile_tokens < 1 or not 0 < m.peak_share <= 1 or m.saturation <= 0 or not m.calibration
            or any(len(p.shape) != 6 or p.n < 1 or p.seconds <= 0 for p in m.calibration)):
        raise ConfigError(f"Cannot read '{path}': physical matrix: tiles >= 1, 0 < peak_share <= 1, saturation > 0 and "
                          f"calibration points with six widths, n >= 1 and seconds > 0.", path, key="physical")
    return m
