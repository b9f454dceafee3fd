"""benchmarks/data/fresh_r5.json: a check set independent of the development set (#29, round 5).

Its value is that the model was never scored or tuned on its sources: no row may share a source with
published_measurements.json, none may be listed by a calibration entry (the benchmark would count it
in-sample), and each measured speed-up is the quoted spec / baseline.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _load_bench():
    spec = importlib.util.spec_from_file_location("bench_published", REPO / "benchmarks" / "bench_published.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_published", module)
    spec.loader.exec_module(module)
    return module


bench = _load_bench()

FRESH = REPO / "benchmarks" / "data" / "fresh_r5.json"


def rows() -> list[dict]:
    return bench.load_entries(FRESH)


def test_fresh_sources_are_not_in_the_development_set():
    dev = {bench.source_key(e["source"]) for e in bench.load_entries(bench.DATA)}
    fresh = {bench.source_key(e["source"]) for e in rows()}
    assert fresh and not fresh & dev, sorted(fresh & dev)


def test_no_fresh_row_is_in_sample():
    assert all(bench.sample_key(e) == "out-of-sample" for e in rows())


@pytest.mark.parametrize("entry", rows(), ids=lambda e: e["id"])
def test_each_row_quotes_its_source_and_its_ratio(entry):
    assert entry["source"].split()[0].startswith("http") and entry["quote"]
    # measured = spec / baseline, rounded to 3 places in the file
    assert entry["measured_speedup"] == pytest.approx(entry["spec_tokens_per_s"] / entry["baseline_tokens_per_s"],
                                                      abs=5e-4)


def test_the_fresh_set_has_fifteen_measurements_and_its_slowdowns():
    r = rows()
    assert len(r) >= 15
    assert sum(1 for e in r if e["measured_speedup"] <= bench.SLOWDOWN_AT_MOST) >= 7
    assert json.loads(FRESH.read_text())["about"]
