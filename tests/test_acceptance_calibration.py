"""The acceptance side's numbers re-derived from their source data (or entered as stated assumptions).

Why: a golden file catches a change, not an error. catalogs/acceptance.json (read by
speed/acceptance_prior.py) holds the adjustments of a draft model's acceptance prior; each data-backed
number is re-derived here from what it was set on: the catalogued draftbench pairs (catalogs/pairs,
converted to alpha by code), the one published base-draft pair, the quoted per-format medians of the
draftbench sweep, the quoted kappa grid and the leave-one-out benchmark. Every other number of the file
is a catalogs/calibration/acceptance.json entry with fit method 'assumed' and its reason
(tests/test_calibration.py checks each equals the number it stands for). A value whose re-derivation
disagrees is marked stale in the catalog and here, not changed: predictions must not move without a
refit of their own.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

import pytest

from planner.core import calibration
from planner.speed import acceptance as acc
from planner.speed import acceptance_prior as ap

REPO = Path(__file__).resolve().parents[1]
TABLE = json.loads((REPO / "catalogs" / "acceptance.json").read_text())


def _round(x: float, step: float) -> float:
    return round(x / step) * step


def draftbench_medians() -> dict[int, float]:
    """Median alpha by draft size over the catalogued draftbench M4 Max pairs (all drafts FP16, greedy)."""
    by: dict[int, list[float]] = {}
    for p in acc.load_pairs():
        if p.id.startswith("draftbench-"):
            a = acc.entry_acceptance(p)
            size = ap.params_from_name(p.draft)
            assert a is not None and size is not None
            by.setdefault(size, []).append(a.alpha)
    return {size: statistics.median(v) for size, v in sorted(by.items())}


def test_the_draft_size_terms_follow_from_the_draftbench_medians():
    m = draftbench_medians()
    # the brief's and the catalog's quoted medians: 0.5B 0.817, 1.5B 0.891, 3B 0.885, 7B 0.884
    assert [round(m[s], 4) for s in (500_000_000, 1_500_000_000, 3_000_000_000)] == [0.8173, 0.8906, 0.8851]
    # saturation: the smallest draft size whose median no larger draft exceeds (alpha stops rising)
    sizes = sorted(m)
    saturation = next(s for i, s in enumerate(sizes) if all(m[s] >= m[t] for t in sizes[i + 1:]))
    assert TABLE["draft_size"]["saturation_params"] == saturation == 1_500_000_000
    # per decade below it: (a(1.5B) - a(0.5B)) / log10(1.5 / 0.5) = 0.0733 / 0.477 = 0.1536, to 0.005
    slope = (m[saturation] - m[500_000_000]) / math.log10(saturation / 500_000_000)
    assert slope == pytest.approx(0.1536, abs=1e-4)
    assert TABLE["draft_size"]["per_decade"] == pytest.approx(_round(slope, 0.005))


def test_the_style_penalty_follows_from_the_one_base_draft_pair():
    # Qwen2.5-Coder-3B base drafting for Coder-32B-Instruct (llama.cpp #10455) vs the instruct 3B drafts of
    # draftbench: -0.028, rounded down (away from zero) to a 0.05 step, as the catalog says
    base = next(p for p in acc.load_pairs() if p.id == "llamacpp-10455-qwen2.5-coder-32b-q4kl-coder-3b-q4_0")
    a = acc.entry_acceptance(base)
    assert a is not None and ap.conditions_of(base).draft_instruct is False
    gap = a.alpha - draftbench_medians()[3_000_000_000]
    assert gap == pytest.approx(-0.028, abs=1e-3)
    assert TABLE["style_mismatch"]["delta"] == pytest.approx(math.floor(gap / 0.05) * 0.05)


# draftbench M4 Max, the same target and draft size with the draft in FP16 vs each GGUF type: the median (and the
# worst) change of alpha over 14-20 target/size cells, as catalogs/acceptance.json draft_quant quotes them (the
# per-cell rows of the quantised drafts are not catalogued: the published aggregate is the source data)
QUANT_MEDIAN_WORST = {"q8_0": (0.000, -0.013), "q6_k": (0.001, -0.013), "q5_k": (-0.003, -0.013),
                      "q5_0": (-0.005, -0.018), "q4_k": (-0.006, -0.030), "q4_0": (-0.019, -0.060),
                      "q3_k": (-0.009, -0.069), "q2_k": (-0.033, -0.136)}
NOISE = 0.006  # a median change within this (inside one run's noise) is kept at 0
WIDENED = ("q4_k", "q4_0", "q3_k", "q2_k")  # from Q4_K_M down the low side widens towards the worst cell
STALE = {("draft_quant", "widen_low", "q2_k")}  # re-derives 0.105 (0.103 to 0.005): 0.1 kept, marked stale


def quant_delta(q: str) -> float:
    median = QUANT_MEDIAN_WORST[q][0]
    return 0.0 if abs(median) <= NOISE else _round(median, 0.005)


def quant_widen(q: str) -> float:
    median, worst = QUANT_MEDIAN_WORST[q]
    return _round(median - worst, 0.005)


def test_the_draft_format_terms_follow_from_the_quoted_draftbench_medians():
    t = TABLE["draft_quant"]
    for q in QUANT_MEDIAN_WORST:
        assert t["delta"][q] == pytest.approx(quant_delta(q), abs=1e-12), q
        if q in WIDENED and ("draft_quant", "widen_low", q) not in STALE:
            assert t["widen_low"][q] == pytest.approx(quant_widen(q), abs=1e-12), q
        elif q not in WIDENED:
            assert q not in t["widen_low"], q
    assert quant_widen("q2_k") == pytest.approx(0.105) and t["widen_low"]["q2_k"] == 0.1
    assert "widen_low.q2_k" in t["stale"]
    # every format the catalog adjusts is either re-derived here or an assumed entry
    for part in ("delta", "widen_low"):
        for q in t[part]:
            assert q in QUANT_MEDIAN_WORST or _assumed(f"acceptance.draft_quant.{part}.{q}"), (part, q)


# the draftbench llama-server sweep (150 configurations at --draft-max 16 --draft-p-min 0.75): median
# |predicted/measured - 1| of the speed-up by kappa, as catalogs/acceptance.json confidence quotes it
KAPPA_ERROR = {1.0: 0.094, 1.5: 0.080, 2.0: 0.084, 3.0: 0.085, 5.0: 0.111}


def test_kappa_is_the_best_of_the_quoted_sweep():
    assert TABLE["confidence"]["kappa"] == min(KAPPA_ERROR, key=KAPPA_ERROR.__getitem__)


def test_the_interval_half_width_is_stale_and_states_what_the_leave_one_out_gives_now():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import bench_acceptance as ba
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    t = TABLE["interval"]
    # what an 80% coverage needs today, leaving out one entry and leaving out its whole publication
    assert ba.half_width_for_coverage(ba.rows(), float(t["half_width"])) == pytest.approx(0.077, abs=0.002)
    assert ba.half_width_for_coverage(ba.rows(True), float(t["half_width"])) == pytest.approx(0.070, abs=0.002)
    assert t["half_width"] == 0.14 and "0.077" in t["stale"] and "0.070" in t["stale"]  # kept, stated stale


def _assumed(term: str) -> bool:
    e = calibration.entries().get((calibration.ANY, calibration.ANY, term))
    return e is not None and e.method == "assumed"


DERIVED = {"draft_size.saturation_params", "draft_size.per_decade", "style_mismatch.delta", "confidence.kappa",
           "interval.half_width", *(f"draft_quant.delta.{q}" for q in QUANT_MEDIAN_WORST),
           *(f"draft_quant.widen_low.{q}" for q in WIDENED)}


def _numbers(x: object, path: str = "") -> list[str]:
    if isinstance(x, bool):
        return []
    if isinstance(x, (int, float)):
        return [path]
    if isinstance(x, dict):
        return [p for k, v in x.items() for p in _numbers(v, f"{path}.{k}" if path else k)]
    return []


def test_every_number_of_the_acceptance_catalog_is_re_derived_or_an_assumed_entry():
    for path in _numbers(TABLE):
        assert path in DERIVED or _assumed(f"acceptance.{path}"), f"catalogs/acceptance.json {path}: no source"
    for term, e in ((k[2], v) for k, v in calibration.entries().items() if k[2].startswith("acceptance.")):
        assert e.fit["at"] == f"catalogs/acceptance.json:{term.removeprefix('acceptance.')}", term


def test_the_code_priors_are_assumed_entries_that_equal_the_code():
    from planner.core.constants import PRIOR_CROSS_FAMILY, PRIOR_MIN_HALF_WIDTH
    from planner.speed.kernel_model import SIZE_CLASS

    v = calibration.value
    assert tuple(v("any", "any", f"prior.cross_family.{k}") for k in ("alpha", "low", "high")) == PRIOR_CROSS_FAMILY
    assert v("any", "any", "prior.min_half_width") == PRIOR_MIN_HALF_WIDTH
    assert v("any", "any", "kernels.size_class") == SIZE_CLASS
    for term in ("prior.cross_family.alpha", "prior.min_half_width", "kernels.size_class"):
        assert _assumed(term)


def test_the_method_priors_are_read_from_their_assumed_entries():
    from planner.drafting import priors

    a = priors.prior("ngram", workload="chat", entries=())
    assert (a.alpha, a.low, a.high) == tuple(calibration.value("any", "any", f"prior.ngram.chat.{k}")
                                             for k in ("alpha", "low", "high"))
    assert "assumed" in a.source and _assumed("prior.early_exit.default.alpha")
    assert priors.assumed("ngram", "code") is None  # nothing assumed: the prior says so instead of guessing
