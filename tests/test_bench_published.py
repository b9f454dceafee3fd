"""benchmarks/bench_published.py: the data file, the scores on hand-made rows, one entry through the CLI."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "data" / "published_measurements.json"


def _load_bench():
    spec = importlib.util.spec_from_file_location("bench_published", REPO / "benchmarks" / "bench_published.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_published", module)
    spec.loader.exec_module(module)
    return module


bench = _load_bench()


def row(measured: float, predicted: float, verdict: str, interval=(0.0, 9.0), *, status="ok",
        base_meas=None, base_pred=None, rid=None) -> dict:
    """A row shaped like predict_entry's, for the pure scoring functions."""
    return {"id": rid or f"r{measured}-{predicted}", "status": status, "measured_speedup": measured,
            "speedup": predicted, "verdict": verdict, "speedup_interval": list(interval),
            "measured_baseline_tokens_per_s": base_meas, "baseline_tokens_per_s": base_pred}


def test_data_file_parses_with_sources_speedups_and_unique_ids():
    doc = json.loads(DATA.read_text())
    entries = bench.load_entries(DATA)
    assert entries == doc["measurements"] and len(entries) >= 50
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids))
    for e in entries:
        assert e["source"].strip(), e["id"]
        assert isinstance(e["measured_speedup"], (int, float)) and e["measured_speedup"] > 0, e["id"]
        assert e["k"] is None or (isinstance(e["k"], int) and e["k"] >= 1), e["id"]
        # every entry that is left out says why
        assert not bench.missing_fields(e) or e["note"], e["id"]
    assert sum(not bench.missing_fields(e) for e in entries) >= 20
    assert {x["id"] for x in doc["excluded"]}.isdisjoint(ids)


def test_load_entries_rejects_bad_files(tmp_path):
    bad = tmp_path / "bad.json"
    for text in ("{not json", '{"measurements": 3}', '{"measurements": [{"id": "a", "source": "s"}]}',
                 '[{"id": "a", "source": "s", "measured_speedup": 1.2}, {"id": "a", "source": "t", "measured_speedup": 1}]'):
        bad.write_text(text)
        with pytest.raises(bench.DataError):
            bench.load_entries(bad)
    assert bench.main(["--data", str(tmp_path / "missing.json")]) == 2


def test_summarise_hand_made_rows():
    rows = [
        row(2.0, 1.8, "faster", (1.5, 2.5), base_meas=10.0, base_pred=12.0),  # right, covered, err 0.1
        row(0.8, 1.2, "faster", (1.0, 1.6), base_meas=20.0, base_pred=20.0),  # wrong, missed slowdown, err 0.5
        row(0.5, 0.6, "slower", (0.4, 0.9)),                                  # right, slowdown caught, err 0.2
        row(1.5, 1.0, "uncertain", (0.8, 1.4)),                               # uncertain, not covered, err 1/3
        row(1.0, 1.3, "faster", (1.1, 1.5)),                                  # measured no gain: no sign call
        {**row(3.0, 0.0, "faster"), "status": "not expressible", "speedup": None},
    ]
    s = bench.summarise(rows)
    assert (s["entries"], s["predicted"], s["not_expressible"]) == (6, 5, 1)
    assert (s["sign_right"], s["sign_wrong"], s["sign_uncertain"]) == (2, 1, 1)
    assert s["sign_agreement"] == pytest.approx(2 / 4)
    assert s["sign_agreement_decided"] == pytest.approx(2 / 3)
    assert s["slowdowns"] == 2 and s["slowdowns_flagged"] == pytest.approx(1 / 2)
    # errors 0.1, 0.5, 0.2, 1/3, 0.3 -> median 0.3, worst 0.5
    assert s["median_rel_error"] == pytest.approx(0.3)
    assert s["worst_rel_error"] == pytest.approx(0.5) and s["worst_id"] == rows[1]["id"]
    assert s["interval_coverage"] == pytest.approx(2 / 5)  # rows 0 and 2
    assert s["uncertain_share"] == pytest.approx(1 / 5)
    assert s["baseline_ratio_median"] == pytest.approx(1.1) and s["baseline_ratio_n"] == 2


def test_summarise_empty_and_bands():
    s = bench.summarise([])
    assert s["predicted"] == 0 and s["sign_agreement"] is None and s["median_rel_error"] is None
    assert [bench.measured_outcome(x) for x in (1.06, 1.05, 0.95, 0.94)] == ["faster", "no gain", "no gain", "slower"]
    assert bench.summarise([row(0.95, 1.2, "faster")])["slowdowns"] == 1  # a 5% slowdown counts, not a sign call


def test_source_keys_and_refused_flags():
    assert bench.source_key("https://github.com/ggml-org/llama.cpp/issues/10664 (issue by X)") == "llama.cpp#10664"
    assert bench.source_key("https://github.com/mostlygeek/llama-swap/blob/abc/README.md (x)") == "mostlygeek/llama-swap"
    assert bench.source_key("arXiv 2405.19715 (SpecDec++)") == "arXiv 2405.19715"
    assert bench.source_key("https://www.reddit.com/r/LocalLLaMA/comments/1gzm93o/ (t)") == "reddit 1gzm93o"
    argv = ["recommend", "t", "--k", "3", "--draft-weights-dtype", "q8_0", "--json"]
    assert bench.refused_flag("Error: No such option: --k (Possible options: --kv-dtype)", argv) == "--k"
    assert bench.refused_flag("Error: No such option: --kv-dtype", argv) is None
    entry = {"target": "t", "draft": "d", "machine": "m", "engine": "e", "weights_dtype": "q4_k",
             "draft_weights_dtype": "q8_0", "k": 4}
    assert "--k" not in bench.cli_args(entry, drop=["--k"]) and "--draft-weights-dtype" in bench.cli_args(entry)


def test_predict_entry_through_the_cli():
    entry = next(e for e in bench.load_entries(DATA) if e["id"] == "llamacpp-5877-llama3.1-8b-q8-llama3.2-1b-q8")
    r = bench.predict_entry(entry)
    assert r["status"] == "ok", r["reason"]
    assert r["verdict"] in ("faster", "slower", "uncertain")
    assert r["speedup"] > 0 and r["baseline_tokens_per_s"] > 0
    lo, hi = r["speedup_interval"]
    assert lo <= r["speedup"] <= hi
    assert r["k"] == 5 and r["dropped_flags"] == []
    assert r["measured_speedup"] == entry["measured_speedup"]


def test_predict_entry_drops_a_refused_flag(monkeypatch):
    calls = []

    def fake_cli(argv):
        calls.append(list(argv))
        if "--k" in argv:
            return 2, "", "Usage: planner recommend [OPTIONS] {target}\nError: No such option: --k\n"
        plan = {"speedup": 1.4, "speedup_interval": [1.1, 1.9], "verdict": "faster", "baseline_tokens_per_s": 30.0,
                "k": 3, "compatible": True, "fits": True}
        return 0, json.dumps({"plans": [plan]}), ""

    monkeypatch.setattr(bench, "run_cli", fake_cli)
    entry = {"id": "x", "source": "s", "measured_speedup": 1.5, "target": "t", "draft": "d", "machine": "m",
             "engine": "e", "weights_dtype": "q4_k", "k": 4}
    r = bench.predict_entry(entry)
    assert len(calls) == 2 and "--k" not in calls[1]
    assert r["status"] == "ok" and r["dropped_flags"] == ["--k"] and r["speedup"] == 1.4 and r["k"] == 3


def test_method_batch_and_context_entries_become_flags():
    entry = {"id": "x", "source": "s", "measured_speedup": 1.5, "target": "llama-3.1-8b-instruct",
             "draft": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "machine": "h100-sxm", "engine": "sglang",
             "weights_dtype": "bf16", "k": 3, "method": "eagle3", "batch": 16, "context": 2048}
    argv = bench.cli_args(entry)
    assert "--candidates" not in argv and argv[argv.index("--method") + 1] == "eagle3"
    assert argv[argv.index("--batch") + 1] == "16" and argv[argv.index("--context") + 1] == "2048"
    plain = bench.cli_args({**entry, "method": None, "batch": None, "context": None})
    assert plain[plain.index("--candidates") + 1] == entry["draft"] and "--batch" not in plain
    # one of the paper's batch-16 rows through the CLI: the plan is priced at that concurrency
    row16 = next(e for e in bench.load_entries(DATA) if e["id"].endswith("sglang-h100-llama3.1-8b-eagle3-chain3-bs16"))
    r = bench.predict_entry(row16)
    assert r["status"] == "ok" and r["k"] == 3
    r1 = bench.predict_entry({**row16, "batch": 1})
    assert r["baseline_tokens_per_s"] < r1["baseline_tokens_per_s"]


def test_pooled_by_source_counts_a_sweep_once():
    rows = [{**row(1.0, 1.1, "faster"), "source": "sweep", "id": f"s{i}"} for i in range(9)]  # 10% each
    rows += [{**row(1.0, 1.5, "faster"), "source": "a", "id": "a"}, {**row(1.0, 1.3, "faster"), "source": "b", "id": "b"}]
    med, n = bench.pooled_by_source(rows)
    assert n == 3 and med == pytest.approx(0.3)  # median of 0.1, 0.5, 0.3 (not of the eleven rows: 0.1)


def test_in_sample_is_computed_from_the_calibration():
    entries = {e["id"]: e for e in bench.load_entries(DATA)}
    # SGLang's zero per-step cost was set from the EAGLE-3 paper's batch-1 row (Table 4): the paper's Table 3
    # sweep on the same H100 and model is listed as dependent, so it is not scored as independent evidence
    assert bench.sample_key(entries["eagle3-paper-t3-sglang-h100-llama3.1-8b-eagle3-chain3-bs2"]) == "in-sample"
    # vLLM's draft step is fitted on #20780's EAGLE-3 K = 4 round; the paper's vLLM sweep on an RTX 3090 is not
    assert bench.sample_key(entries["vllm-20780-llama3.1-8b-eagle3-k4"]) == "in-sample"
    assert bench.sample_key(entries["eagle3-paper-t5-vllm-rtx3090-llama3.1-8b-eagle3-k2-bs2"]) == "out-of-sample"
    pairs = next(e for e in entries.values() if (e.get("origin") or "").startswith("catalogs/pairs"))
    assert bench.sample_key(pairs) == "in-sample"  # its acceptance feeds the priors
    assert bench.sample_key(entries["llamacpp-10664-qwen2.5-72b-q4km-0.5b-f16"]) == "out-of-sample"


@pytest.mark.slow
def test_the_docs_tables_are_the_benchmarks_output():
    # docs/speed.md's benchmark tables are generated (benchmarks/speed_doc.py), never pasted
    spec = importlib.util.spec_from_file_location("speed_doc", REPO / "benchmarks" / "speed_doc.py")
    doc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(doc)
    assert doc.main(["--check"]) == 0
