"""Acceptance priors of the drafting methods other than a draft model, from published measurements.

Why apart from speed/acceptance.py's pair priors: a pair prior is keyed by two tokenizer families;
an EAGLE-3 head, MTP layers or n-gram lookup have no draft family, and n-gram acceptance depends on
the workload far more than on the model (a code edit copies its prompt, open chat does not). So
the key here is (method, workload), preferring measurements of this very target.

catalogs/methods/*.json stores each published number raw, in its convention (docs/methods.md);
`speed.acceptance.acceptance` converts it to alpha by code. Where nothing is published for a
(method, workload), the prior is an assumed constant with a wide interval, and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core import calibration
from ..core.constants import PRIOR_MIN_HALF_WIDTH, catalog_dir
from ..core.errors import ConfigError, UsageError
from ..core.jsonio import read_json_object
from ..speed import acceptance as acc
from ..speed import position_decay

WORKLOADS = ("chat", "code", "reasoning")
DEFAULT_WORKLOAD = "chat"

def assumed(method: str, key: str | None) -> tuple[float, float, float, str] | None:
    """(alpha, low, high, why) assumed for (method, workload or variant) where catalogs/methods has no
    measurement; None when nothing is assumed for it.

    Why in catalogs/calibration/acceptance.json (terms prior.<method>.<key or 'default'>.alpha/low/high, fit
    method 'assumed' with the reason): an assumed number is a calibration entry like a fitted one, so the
    literal scan of tests/test_calibration.py keeps fitted-looking numbers out of this file.
    """
    term = f"prior.{method}.{key or 'default'}"
    if (calibration.ANY, calibration.ANY, f"{term}.alpha") not in calibration.entries():
        return None
    a, lo, hi = (calibration.value(calibration.ANY, calibration.ANY, f"{term}.{k}") for k in ("alpha", "low", "high"))
    return a, lo, hi, calibration.get(calibration.ANY, calibration.ANY, f"{term}.alpha").source


@dataclass(frozen=True)
class Measurement:
    """One published measurement of a method (catalogs/methods/*.json)."""

    id: str
    method: str
    target: str
    draft: str | None
    engine: str
    workload: str | None
    k: int | None
    temperature: float | None
    value: float | None
    low: float | None
    high: float | None
    convention: str | None
    speedup: float | None
    source: str
    notes: str = ""
    mtp_layers: int | None = None  # the measured target's trained MTP layers, where its config states them

    def acceptance(self) -> acc.Acceptance | None:
        """The measurement as alpha (None when it published only a speed-up). An MTP run at K past its
        stated depth is converted under the reused layer's decay, so alpha is the trained layer's rate.

        Raises:
            ConfigError: the number cannot be converted (names the entry).
        """
        if self.value is None or self.convention is None:
            return None
        try:
            if self.mtp_layers and self.k and self.k > self.mtp_layers and self.convention in _PER_ROUND:
                return self._past_depth(self.value, self.convention, self.k,
                                        position_decay.reused_layer(self.mtp_layers))
            return acc.acceptance(self.value, self.convention, k=self.k, low=self.low, high=self.high,
                                  source=self.source)
        except UsageError as e:
            raise ConfigError(f"Cannot convert acceptance of measurement '{self.id}': {e}", None,
                              key="acceptance") from e


    def _past_depth(self, value: float, conv: str, k: int, decay: position_decay.PositionDecay) -> acc.Acceptance:
        """alpha of the trained layer from a per-round figure at K past the depth, end by end.

        # tau = E(K); accepted_per_drafted r = (E(K) - 1) / K; E(K) under the decay inverted for alpha
        """

        def first(v: float) -> float:
            return position_decay.alpha_at(v if conv == acc.TAU else 1.0 + v * k, k, decay)
        lo, hi = (value if x is None else x for x in (self.low, self.high))
        a = acc.acceptance(value, conv, k=k, low=lo, high=hi, source=self.source)  # validates the range
        return replace(a, alpha=first(value), low=first(lo), high=first(hi),
                       given=f"{a.given}, under {decay.describe()}")


_PER_ROUND = frozenset({acc.TAU, acc.ACCEPTED_PER_DRAFTED})


def measurements(directory: str | Path | None = None) -> tuple[Measurement, ...]:
    """Every entry of catalogs/methods/*.json, validated.

    Raises:
        ConfigError: a malformed file or entry (names the file and the key), or a repeated id.
    """
    return _load(str(Path(directory) if directory is not None else catalog_dir() / "methods"))


def prior(method: str, *, workload: str | None = None, target: str | None = None,
          variant: str | None = None, entries: Sequence[Measurement] | None = None) -> acc.Acceptance:
    """The acceptance prior of `method` for this workload (and target, when measured for it).

    Order: measurements of this target for this workload; of this workload; of this target; every
    measurement of the method (for methods whose acceptance does not hinge on the workload: not
    n-gram lookup); else the assumed constant for (method, workload or variant). Intervals span
    the converted values, widened to at least +/- PRIOR_MIN_HALF_WIDTH (x3 for one measurement).

    Raises:
        UsageError: no measurement and nothing assumed for this method.
    """
    mine = [m for m in (measurements() if entries is None else entries) if m.method == method]
    pool = [(conv, m) for m in mine if (conv := m.acceptance()) is not None]
    t = (target or "").lower()
    tiers = [[p for p in pool if p[1].target.lower() == t and p[1].workload == workload],
             [p for p in pool if p[1].workload == workload and workload is not None],
             [p for p in pool if p[1].target.lower() == t]]
    if method != "ngram":
        tiers.append(pool)
    for tier in tiers:
        if tier:
            return _summarise(tier, method, workload)
    key = (method, variant if variant is not None else workload)
    found = assumed(*key)
    if found is None:
        raise UsageError(f"Cannot give an acceptance prior for method '{method}' (workload {workload}): no "
                         f"published measurement in catalogs/methods and no assumed value.")
    a, lo, hi, why = found
    return acc.Acceptance(a, lo, hi, given=f"assumed {method} prior ({key[1] or 'default'})", source=why)


def _summarise(values: list[tuple[acc.Acceptance, Measurement]], method: str, workload: str | None) -> acc.Acceptance:
    alphas = sorted(a.alpha for a, _ in values)
    mid = len(alphas) // 2
    median = alphas[mid] if len(alphas) % 2 else (alphas[mid - 1] + alphas[mid]) / 2.0
    half = PRIOR_MIN_HALF_WIDTH * (3 if len(alphas) == 1 else 2 if len(alphas) <= 3 else 1)
    lo = max(0.0, min(min(a.low for a, _ in values), median - half))
    hi = min(1.0, max(max(a.high for a, _ in values), median + half))
    given = "; ".join(f"{m.id}: {m.convention} = {m.value:g}" + (f" at K={m.k}" if m.convention in ("tau",
                      "accepted_per_drafted") else "") for _, m in values)
    what = f"{method}" + (f", {workload} workload" if workload else "")
    return acc.Acceptance(alpha=median, low=lo, high=hi, given=given,
                          source=f"catalogs/methods: {len(values)} published {what} measurement(s): "
                                 + "; ".join(sorted({m.source for _, m in values})))


@lru_cache(maxsize=4)
def _load(directory: str) -> tuple[Measurement, ...]:
    out: list[Measurement] = []
    seen: set[str] = set()
    for f in sorted(Path(directory).glob("*.json")):
        obj = read_json_object(f, what="method measurements")
        items = obj.get("measurements")
        if not isinstance(items, list):
            raise ConfigError(f"Cannot read method measurements '{f}': expected a 'measurements' list.", f,
                              key="measurements")
        for i, it in enumerate(items):
            m = _entry(it, f, i)
            if m.id in seen:
                raise ConfigError(f"Cannot read method measurements '{f}': id '{m.id}' repeats.", f, key="id")
            seen.add(m.id)
            out.append(m)
    return tuple(out)


def _entry(it: Any, f: Path, i: int) -> Measurement:
    if not isinstance(it, dict):
        raise ConfigError(f"Cannot read method measurements '{f}': entry {i} is not an object.", f, key="measurements")
    a = it.get("acceptance") or {}
    try:
        m = Measurement(id=str(it["id"]), method=str(it["method"]), target=str(it["target"]),
                        draft=it.get("draft"), engine=str(it["engine"]), workload=it.get("workload"),
                        k=it.get("k"), temperature=it.get("temperature"), value=a.get("value"), low=a.get("low"),
                        high=a.get("high"), convention=a.get("convention"), speedup=it.get("speedup"),
                        source=str(it["source"]), notes=str(it.get("notes", "")), mtp_layers=it.get("mtp_layers"))
    except (KeyError, AttributeError) as e:
        raise ConfigError(f"Cannot read method measurements '{f}': entry {i} lacks {e} (expected id, method, "
                          f"target, engine, source).", f, key=str(e)) from e
    if m.workload is not None and m.workload not in WORKLOADS:
        raise ConfigError(f"Cannot read method measurements '{f}': entry '{m.id}' has workload '{m.workload}' "
                          f"(expected one of {', '.join(WORKLOADS)} or null).", f, key="workload")
    if m.mtp_layers is not None and (not isinstance(m.mtp_layers, int) or isinstance(m.mtp_layers, bool)
                                     or m.mtp_layers < 1):
        raise ConfigError(f"Cannot read method measurements '{f}': entry '{m.id}' has mtp_layers "
                          f"{m.mtp_layers!r} (expected a positive integer or null).", f, key="mtp_layers")
    m.acceptance()  # a number that cannot be converted fails here, naming the entry
    return m
