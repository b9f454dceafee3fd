"""How verification of n tokens costs on a backend's real kernels: t_v(n)/t_v(1) from published curves.

Why: the roofline alone says one forward of K+1 tokens costs what one of 1 token costs while it is
memory-bound. That holds for float weights on tensor-core kernels, not for quantised weights on
the small-batch kernels engines use: llama.cpp's CUDA mul_mat_vec_q and Metal mul_mv redo the
dequantising dot product per token up to a kernel switch (n = 8), MLX's qmv likewise, so
t_v(8)/t_v(1) is about 2 there (catalogs/kernels/verify_curves.json, each curve with its source).
The ratio multiplies the weight-streaming time of the roofline; several published curves for one
(backend, format family) give the interval, which the speed-up interval carries.

  ratio(n) = linear interpolation of the curve's points; past its last point: `hold` (the source
             names a matrix-kernel switch there: the level stays), `extend` (last slope), or
             `switch` (another curve covers those n)
  central  = median over whole-model curves covering n (op-level curves only widen the interval)

Where the backend has a physical model (speed/kernel_model.py: per-token ALU work next to the weight
stream, calibrated on these curves) and the chip catalogues its ALU rate, a published curve is used as it
is only on the chip family and size class it was measured on; elsewhere the model scales it to the chip
and format (basis "model").
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Any

from ..core import jsonio, memo
from ..core.constants import catalog_dir
from ..core.errors import ConfigError
from . import kernel_model
from .kernel_model import Chip, Weights

BEYOND = ("hold", "extend", "switch")
SCOPES = ("model", "op")
# Weight-format families: what selects the kernel (dominant dtype of the resident weights).
FAMILY_OF_DTYPE = {"U32": "int4", "F16": "float", "BF16": "float", "F32": "float",
                   "Q8_0": "q8", "Q8_1": "q8", "Q8_K": "q8",
                   "Q4_0": "legacy", "Q4_1": "legacy", "Q5_0": "legacy", "Q5_1": "legacy", "IQ4_NL": "legacy",
                   "Q2_K": "kquant", "Q3_K": "kquant", "Q4_K": "kquant", "Q5_K": "kquant", "Q6_K": "kquant",
                   "IQ2_XXS": "iquant", "IQ2_XS": "iquant", "IQ2_S": "iquant", "IQ3_XXS": "iquant",
                   "IQ3_S": "iquant", "IQ1_S": "iquant", "IQ1_M": "iquant", "IQ4_XS": "iquant",
                   "F8_E4M3": "fp8", "F8_E5M2": "fp8", "I32": "int4", "I8": "int8"}
# --weights-dtype schemes whose packed dtype does not say which kernel runs them.
FAMILY_OF_SCHEME = {"int4": "int4", "int8": "int8", "nf4": "nf4", "mxfp4": "mxfp4", "fp8": "fp8"}


@dataclass(frozen=True)
class Curve:
    """One published t_v(n)/t_v(1) curve."""

    backend: str
    families: tuple[str, ...]  # measured with weights of these families
    analog: tuple[str, ...]  # families that take the same kernel and borrow this curve
    scope: str
    points: tuple[tuple[int, float], ...]  # (n, ratio), n ascending
    beyond: str
    source: str
    hardware: str
    model: str
    # what a stand-in family does past the last point (its own kernel may differ there): family -> beyond
    analog_beyond: Mapping[str, str] = field(default_factory=dict)
    gpu_class: str = ""  # the chip it was measured on, as gpu_class() spells a machine's ("" : not identified)
    params_b: float | None = None  # the measured model's size, billions of parameters

    def covers(self, n: int, fam: str | None = None) -> bool:
        beyond = self.beyond
        if fam is not None and fam not in self.families:
            beyond = self.analog_beyond.get(fam, "switch")
        return self.points[0][0] <= n <= self.points[-1][0] or (n > self.points[-1][0] and beyond != "switch")

    def measured_at(self, n: int) -> bool:
        """n lies within the measured points (not held or extended past them)."""
        return self.points[0][0] <= n <= self.points[-1][0]

    def ratio(self, n: int) -> float:
        """Linear interpolation; past the last point per `beyond`. Requires covers(n)."""
        pts = self.points
        if n >= pts[-1][0]:
            if self.beyond == "hold" or len(pts) == 1:
                return pts[-1][1]
            (n0, r0), (n1, r1) = pts[-2], pts[-1]
            return r1 + (r1 - r0) / (n1 - n0) * (n - n1)
        for (n0, r0), (n1, r1) in pairwise(pts):
            if n0 <= n <= n1:
                return r0 + (r1 - r0) * (n - n0) / (n1 - n0)
        return pts[0][1]


@dataclass(frozen=True)
class Ratio:
    """t_v(n)/t_v(1) at one n: central, interval, and what it rests on."""

    central: float
    low: float
    high: float
    basis: str  # "measured" (a whole-model curve of this family covers n), "model" (the physical model of
    #             speed/kernel_model.py on this chip and format), "op-level", "analog" (a curve of
    #             another family on the same kernel), "extrapolated" (past every curve's last point: the
    #             interval runs from flat to the held level), "matrix" (past the vector kernels: the weights
    #             stream once and the tiled GEMM's FLOPs are the compute term), or "none" (roofline alone)
    sources: tuple[str, ...]


FLAT = Ratio(1.0, 1.0, 1.0, "none", ())


def family(dominant_dtype: str, scheme_kind: str | None = None) -> str | None:
    """The kernel family of weights stored as `dominant_dtype` (re-sized by a --weights-dtype scheme)."""
    if scheme_kind in FAMILY_OF_SCHEME:
        return FAMILY_OF_SCHEME[scheme_kind]
    return FAMILY_OF_DTYPE.get(dominant_dtype)


def ratio(backend: str | None, fam: str | None, n: int, *, measured_only: bool = False, chip: Chip | None = None,
          weights: Weights | None = None) -> Ratio:
    """t_v(n)/t_v(1) for weights of family `fam` on `backend` (FLAT when nothing is published).

    `measured_only`: past every curve's last point use that point's level (batched forwards: a kernel
    fed hundreds of token columns is a GEMM whose cost the roofline's FLOP term prices).
    `chip`, `weights`: the machine and the target's weights, for the physical model where the backend has one.
    """
    if backend is None or fam is None or n <= 1:
        return FLAT
    # A pure function of its values and the catalog: once per value (core/memo.py). A fleet report asks it
    # for each forward of each plan on each machine, and most of those ask again what an earlier forward
    # on the same machine asked (the prefix and the batch's overheads change, the kernel columns do not).
    chip_key = None if chip is None else (chip.name, chip.bytes_per_s, tuple(sorted(chip.flops.items())),
                                          chip.gpu_class)
    return _ratio(str(catalog_dir()), backend, fam, n, measured_only, chip_key, weights)


@memo.cached(maxsize=1 << 16)
def _ratio(catalog: str, backend: str, fam: str, n: int, measured_only: bool,
           chip_key: tuple[str, float, tuple[tuple[str, float | None], ...], str] | None,
           weights: Weights | None) -> Ratio:
    """`ratio` by value (`catalog` keys the memo only: the curves are read from catalog_dir())."""
    chip = None if chip_key is None else Chip(chip_key[0], chip_key[1], dict(chip_key[2]), chip_key[3])
    if measured_only:
        n = min(n, measured_span(backend, fam))
        if n <= 1:
            return FLAT
    fam = backend_family(backend, fam)
    if chip is not None and weights is not None:
        modelled = physical_ratio(backend, fam, n, chip, weights)
        if modelled is not None:
            return modelled
    curves = [c for c in curves_for(backend, fam) if c.covers(n, fam)]
    own = [c for c in curves if fam in c.families]
    if not curves:
        return FLAT
    if not any(c.measured_at(n) for c in curves):  # past the published points: a guess, say so
        values = [c.ratio(n) for c in (own or curves)]
        return Ratio(statistics.median(values), 1.0, max(values), "extrapolated",
                     tuple(dict.fromkeys(c.source for c in (own or curves))))
    if not own:  # a stand-in: the same kernel measured with another format; anything from flat to it
        values = [c.ratio(n) for c in curves]
        return Ratio(statistics.median(values), 1.0, max(values), "analog",
                     tuple(dict.fromkeys(c.source for c in curves)))
    model = [c.ratio(n) for c in own if c.scope == "model"]
    values = [c.ratio(n) for c in own]
    central = statistics.median(model) if model else statistics.median(values)
    return Ratio(central, min(values), max(values), "measured" if model else "op-level",
                 tuple(dict.fromkeys(c.source for c in own)))


def physical_ratio(backend: str, fam: str, n: int, chip: Chip, w: Weights) -> Ratio | None:
    """The physical model's r(n), or a same-chip-class published curve (None: no model for this case).

    # same chip family and size class, measured at n: the published curve as it is (basis "measured")
    # otherwise r(n) of kernel_model.Physical with the pooled fit; each calibration curve's own fit bounds it
    """
    cat = _catalog(str(catalog_dir()))
    key = cat.aliases.get(backend, backend)
    phys = cat.physical.get(key)
    alu = chip.alu(phys.alu_key) if phys is not None else None
    if phys is None or not alu or fam not in phys.ranges:
        return None
    if (mk := phys.matrix_at(fam, n)) is not None:
        # the weights stream once; the tiles' FLOPs are the roofline's compute term (roofline.forward_cost)
        return Ratio(1.0, 1.0, 1.0, "matrix", (f"{mk.source} (n = {n}: past the vector kernels)",))
    same = [c for c in curves_for(backend, fam) if fam in c.families and c.scope == "model" and c.measured_at(n)
            and kernel_model.same_class(c.gpu_class, c.params_b, chip, w)]
    if same:
        values = [c.ratio(n) for c in same]
        return Ratio(statistics.median(values), min(values), max(values), "measured",
                     tuple(f"{c.source} ({c.hardware}: this chip and size class)" for c in same))
    pooled, own = _fits(str(catalog_dir()), key)
    central = phys.ratio(n, fam, chip, w, pooled)
    if central is None:
        return None
    # the interval: each calibration curve's own fit, at the chip's issue rate and at its nominal rate
    values = [v for f in (pooled, *own) for one in (False, True)
              if (v := phys.ratio(n, fam, chip, w, f, single_issue=one))]
    low, high = min(values), max(values)
    if n > phys.ranges[fam][1] and phys.past.get(fam) == "flat":
        central, low = 1.0, 1.0
    why = (f"{phys.source}; F {pooled.flop_per_weight:.2f} FLOP/weight/token, P {pooled.pass_flop:.2f} FLOP/weight per "
           f"second pass, fitted on {pooled.source}; {chip.name}: {chip.bytes_per_s / 1e9:.4g} GB/s, "
           f"{alu / 1e12:.4g} TFLOP/s ALU x{phys.issue(chip):g} issue, {w.bytes_per_weight:.3f} B/weight")
    return Ratio(central, low, high, "model", (why,))


def matrix_kernel(backend: str | None, fam: str | None, n: int) -> kernel_model.Matrix | None:
    """The tiled matrix kernel a forward of n token rows runs on (None: the vector kernels or no model).

    Why: past its small-batch range llama.cpp Metal multiplies in 64 x 32 tiles (kernel_model.Matrix),
    whose cost is FLOPs at an occupancy-limited share of the ALU, not a multiple of the weight stream.
    """
    if backend is None or fam is None:
        return None
    cat = _catalog(str(catalog_dir()))
    phys = cat.physical.get(cat.aliases.get(backend, backend))
    return phys.matrix_at(backend_family(backend, fam), n) if phys is not None else None


@lru_cache(maxsize=8)
def _fits(directory: str, key: str) -> tuple[kernel_model.Fit, tuple[kernel_model.Fit, ...]]:
    return _catalog(directory).physical[key].fits()


def measured_span(backend: str | None, fam: str | None) -> int:
    """The largest n any published curve of this backend and family reaches (1: none published)."""
    if backend is None or fam is None:
        return 1
    return max((c.points[-1][0] for c in curves_for(backend, backend_family(backend, fam))), default=1)


def curves_for(backend: str, fam: str) -> tuple[Curve, ...]:
    """Every catalogued curve for this backend (or its alias) and family."""
    cat = _catalog(str(catalog_dir()))
    key = cat.aliases.get(backend, backend)
    return tuple(c for c in cat.curves if c.backend == key and (fam in c.families or fam in c.analog))


def gpu_class(machine: object) -> str:
    """A machine's GPU class from its catalogued fields: 'apple-m2/ultra' (gpu_family / gpu_tier), 'apple-m2'
    with no tier, '' when neither is catalogued. Never read off the machine's name."""
    fam, tier = getattr(machine, "gpu_family", None), getattr(machine, "gpu_tier", None)
    return f"{fam}/{tier}" if fam and tier else (fam or "")


def in_class(chip_class: str, key: str) -> bool:
    """Whether a chip of class 'apple-m1/ultra' is in `key`: the class itself or its generation ('apple-m1')."""
    return bool(key) and (chip_class == key or chip_class.startswith(key + "/"))


def backend_for_machine(backend: str | None, chip_class: str) -> str | None:
    """A chip generation's own kernels: e.g. MLX on M1/M2 lacks the g15+ small-batch qmv path.

    The most specific matching class wins, so a chip class ("apple-m1/ultra") can differ from its generation
    ("apple-m1"); `chip_class` is gpu_class(machine).
    """
    if backend is None:
        return None
    table = _catalog(str(catalog_dir())).by_machine.get(backend, {})
    hits = [key for key in table if in_class(chip_class, key)]
    return table[max(hits, key=len)] if hits else backend


def backend_family(backend: str, fam: str) -> str:
    """The backend's own name for a generic family (MLX runs int4/int8 as its affine format)."""
    cat = _catalog(str(catalog_dir()))
    return cat.family_alias.get(cat.aliases.get(backend, backend), {}).get(fam, fam)


@dataclass(frozen=True)
class _Catalog:
    curves: tuple[Curve, ...]
    aliases: Mapping[str, str]
    family_alias: Mapping[str, Mapping[str, str]]
    by_machine: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    physical: Mapping[str, kernel_model.Physical] = field(default_factory=dict)


@lru_cache(maxsize=4)
def _catalog(directory: str) -> _Catalog:
    path = Path(directory) / "kernels" / "verify_curves.json"
    if not path.is_file():
        return _Catalog((), {}, {})
    data = jsonio.read_json_object(path, what="verify-curve catalog")
    items = data.get("curves")
    if not isinstance(items, list):
        raise ConfigError(f"Cannot read '{path}': 'curves' must be a list.", path, key="curves")
    aliases = data.get("backend_alias") or {}
    fam_alias = data.get("family_alias") or {}
    if not isinstance(aliases, dict) or not isinstance(fam_alias, dict):
        raise ConfigError(f"Cannot read '{path}': backend_alias and family_alias must be objects.", path)
    by_machine = data.get("backend_by_gpu_class") or {}
    if not isinstance(by_machine, dict):
        raise ConfigError(f"Cannot read '{path}': backend_by_gpu_class must be an object.", path)
    phys = [kernel_model.physical(x, str(path)) for x in data.get("physical") or ()]
    return _Catalog(tuple(_curve(x, path, i) for i, x in enumerate(items)), dict(aliases), dict(fam_alias),
                    {str(k): dict(v) for k, v in by_machine.items()}, {p.backend: p for p in phys})


def _curve(item: Any, path: Path, i: int) -> Curve:
    where = f"curves[{i}]"
    if not isinstance(item, dict):
        raise ConfigError(f"Cannot read '{path}': {where} must be an object.", path, key=where)
    try:
        pts = sorted((int(n), float(r)) for n, r in dict(item["points"]).items())
        curve = Curve(backend=str(item["backend"]), families=tuple(item["families"]),
                      analog=tuple(item.get("analog", ())), scope=str(item["scope"]),
                      analog_beyond=_analog_beyond(item.get("analog_beyond"), tuple(item.get("analog", ()))),
                      points=tuple(pts), beyond=str(item.get("beyond", "hold")), source=str(item["source"]),
                      hardware=str(item.get("hardware", "")), model=str(item.get("model", "")),
                      gpu_class=str(item.get("gpu_class", "")),
                      params_b=float(item["params_b"]) if item.get("params_b") else None)
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"Cannot read '{path}': {where}: {e!r} (expected backend, families, scope, points, "
                          f"source).", path, key=where) from e
    _check(curve, path, where)
    return curve


def _analog_beyond(value: Any, analog: tuple[str, ...]) -> dict[str, str]:
    """`analog_beyond`: one rule for every stand-in family, or a family -> rule object."""
    if value is None:
        return {}
    if isinstance(value, str):
        return dict.fromkeys(analog, value)
    return {str(k): str(v) for k, v in dict(value).items()}


def _check(c: Curve, path: Path, where: str) -> None:
    bad = (not c.points or c.scope not in SCOPES or c.beyond not in BEYOND
           or any(v not in BEYOND for v in c.analog_beyond.values())
           or any(n < 1 or not 0.5 <= r <= 64 for n, r in c.points))
    if bad:
        raise ConfigError(f"Cannot read '{path}': {where}: expected scope in {SCOPES}, beyond in {BEYOND} and "
                          f"points n >= 1 with ratios in [0.5, 64].", path, key=where)


def describe(r: Ratio, n: int) -> str:
    """One phrase for reports: what t_v(n)/t_v(1) rests on."""
    if r.basis == "none":
        return f"t_v({n})/t_v(1) from the roofline alone (no published kernel curve for this backend and format)"
    return (f"t_v({n})/t_v(1) x{r.central:.2f} [{r.low:.2f}, {r.high:.2f}] on the weight read ({r.basis}: "
            f"{'; '.join(r.sources)})")
