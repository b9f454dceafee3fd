"""benchmarks/bench_baselines.py: the data file, one row through the CLI, the grouping."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "data" / "published_baselines.json"
sys.path.insert(0, str(REPO / "benchmarks"))


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


bench = _load("bench_baselines")


def test_data_rows_have_sources_roles_and_unique_ids():
    rows = bench.load_rows(DATA)
    assert len(rows) >= 40 and len({r["id"] for r in rows}) == len(rows)
    assert {r["role"] for r in rows} == {"in-sample", "out-of-sample"}
    assert all(r["source"].strip() and r["measured_tokens_per_s"] > 0 for r in rows)


def test_bad_files_are_refused(tmp_path):
    bad = tmp_path / "b.json"
    for text in ("{", '{"baselines": 1}', '{"baselines": [{"id": "a"}]}',
                 '{"baselines": [{"id": "a", "source": "s", "engine": "vllm", "machine": "h100-sxm", "model": "m", '
                 '"weights_dtype": "bf16", "measured_tokens_per_s": -10}]}'):
        bad.write_text(text)
        with pytest.raises(bench.DataError):
            bench.load_rows(bad)
    assert bench.main(["--data", str(tmp_path / "missing.json")]) == 2


def test_a_row_is_in_sample_exactly_when_a_calibration_entry_lists_it(monkeypatch):
    rows = {r["id"]: r for r in bench.load_rows(DATA)}
    # the HBM share and fixed cost are two-point fits on XiongjieDai's H100 PCIe and A100 SXM4 Q4_K_M decodes
    assert rows["xiongjiedai-h100pcie-8b-q4km"]["role"] == "in-sample"
    assert set(rows["xiongjiedai-h100pcie-8b-q4km"]["fitted_by"]) == {"llama.cpp/gpu-hbm/bandwidth_share",
                                                                     "llama.cpp/gpu-hbm/forward_fixed_s"}
    # the F16 decodes on the same GPUs are held out from them: out-of-sample
    assert rows["xiongjiedai-h100pcie-8b-f16"]["role"] == "out-of-sample"
    # computed, not declared: an entry that lists a row makes it in-sample
    monkeypatch.setattr(bench, "calibration_rows", lambda: {"xiongjiedai-h100pcie-8b-f16": ["x/y/z"]})
    again = {r["id"]: r for r in bench.load_rows(DATA)}
    assert again["xiongjiedai-h100pcie-8b-f16"]["role"] == "in-sample"
    assert again["xiongjiedai-h100pcie-8b-q4km"]["role"] == "out-of-sample"


def test_one_row_through_the_cli_prices_the_baseline():
    # the SGLang baseline its zero per-step overhead rests on: 158.34 tok/s, weight stream 6.39 ms at 0.75
    row = next(r for r in bench.load_rows(DATA) if r["id"] == "sglang-eagle3-paper-h100-llama3.1-8b")
    out = bench.predict(row)
    assert out["error"] is None and out["ratio"] == pytest.approx(out["predicted"] / 158.34)
    assert 0.9 < out["ratio"] < 1.15


def test_groups_split_engine_class_kind_and_role():
    rows = [{"engine": "llama.cpp", "machine": "a100-80gb", "moe": False, "role": "out-of-sample", "ratio": r}
            for r in (1.0, 1.2, 1.4)]
    rows.append({"engine": "llama.cpp", "machine": "rtx-4090", "moe": True, "role": "out-of-sample", "ratio": 2.0})
    s = bench.summary(rows)
    assert s["llama.cpp gpu-hbm dense (out-of-sample)"] == {"n": 3, "median": 1.2, "low": 1.0, "high": 1.4}
    assert s["llama.cpp gpu MoE (out-of-sample)"]["n"] == 1
