"""Heterogeneous: what a pair with different vocabularies can still use, and at what cost.

Its own module because the answer comes from published measurements, not from the two models:
catalogs/heterogeneous_vocab.json lists the fallback algorithms (TLI / SLEM / UAG) and measured
(overlap, acceptance) points, and the TLI acceptance at a pair's overlap is interpolated there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from types import MappingProxyType
from typing import Any

from ..core.constants import catalog_dir
from ..core.errors import ConfigError
from ..core.jsonio import read_json_object
from .vocab import Overlap


@dataclass(frozen=True)
class TliEstimate:
    """Expected TLI acceptance from published (overlap, acceptance) points; one pair per point."""

    value: float | None
    upper: float | None
    detail: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class Heterogeneous:
    """What a pair with different vocabularies (or vocab sizes) can still use, and at what cost."""

    overlap: Overlap | None
    algorithms: tuple[Mapping[str, Any], ...]
    tli_acceptance: TliEstimate | None
    homogeneous_reference: Mapping[str, Any] | None


@lru_cache(maxsize=2)
def _catalog(directory: str) -> dict[str, Any]:
    return read_json_object(f"{directory}/heterogeneous_vocab.json", what="heterogeneous vocabulary catalog")


def heterogeneous_catalog() -> dict[str, Any]:
    """catalogs/heterogeneous_vocab.json (published TLI acceptance, algorithms, sources).

    Raises:
        ConfigError: the catalog is missing or malformed.
    """
    data = _catalog(str(catalog_dir()))
    if not isinstance(data.get("tli_acceptance"), list) or not isinstance(data.get("algorithms"), list):
        raise ConfigError(f"Cannot read '{catalog_dir()}/heterogeneous_vocab.json': expected lists "
                          f"'tli_acceptance' and 'algorithms'. Restore the bundled catalog.")
    return data


def tli_acceptance(overlap: float, points: Sequence[Mapping[str, Any]]) -> TliEstimate:
    """Expected TLI acceptance at `overlap`, by linear interpolation between published TLI points.

    Each point is one model pair on one workload (vLLM PR #38174), so the estimate is an order of
    magnitude: acceptance also depends on how well the draft predicts the target.
    Above the highest TLI overlap the nearest point is used; below the lowest only an upper bound.
    """
    pts = sorted((float(p["overlap"]), float(p["acceptance"]), str(p["source"])) for p in points
                 if str(p.get("path", "")).startswith("TLI"))
    if not pts:
        return TliEstimate(None, None, "no published TLI measurement in the catalog", ())
    srcs = tuple(sorted({s for *_, s in pts}))
    lo, hi = pts[0], pts[-1]
    if overlap >= hi[0]:
        return TliEstimate(hi[1], None, f"overlap {overlap:.3f} >= the highest measured TLI overlap "
                                  f"{hi[0]}: nearest point, {hi[1]:.2f}", srcs)
    if overlap < lo[0]:
        return TliEstimate(None, lo[1], f"overlap {overlap:.3f} is below the measured range "
                                  f"({lo[0]}..{hi[0]}): expect acceptance under {lo[1]:.2f}", srcs)
    for (x0, y0, _), (x1, y1, _) in pairwise(pts):
        if x0 <= overlap <= x1:
            # linear: a = a0 + (overlap - o0) / (o1 - o0) * (a1 - a0)
            a = y0 + (overlap - x0) / (x1 - x0) * (y1 - y0)
            return TliEstimate(a, None, f"interpolated between published TLI points ({x0}, {y0}) and "
                                      f"({x1}, {y1}): {a:.2f}", srcs)
    raise AssertionError("unreachable: overlap inside the measured range")


def heterogeneous_for(ov: Overlap | None) -> Heterogeneous:
    """The catalog's fallback algorithms, the TLI estimate at `ov` and the same-vocabulary reference.

    Raises:
        ConfigError: the catalog is missing or malformed.
    """
    cat = heterogeneous_catalog()
    homog = next((p for p in cat["tli_acceptance"] if not str(p.get("path", "")).startswith("TLI")), None)
    est = tli_acceptance(ov.of_draft, cat["tli_acceptance"]) if ov is not None else None
    return Heterogeneous(ov, tuple(MappingProxyType(a) for a in cat["algorithms"]), est,
                         MappingProxyType(homog) if homog else None)

