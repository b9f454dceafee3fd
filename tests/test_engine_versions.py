"""Engine costs by build (engines/versions.py): which range a plan assumes, --engine-version selecting one,
and a build in no range falling back with the range it falls back to. Figures worked by hand."""

from __future__ import annotations

import json

import pytest

from planner.core.calibration import get
from planner.core.errors import UsageError
from planner.engines import versions

from .cli_run import run_cli as run


def test_parse_reads_llama_cpp_builds_and_refuses_the_rest():
    assert versions.parse(None, "vllm") == {}
    assert versions.parse("b8000", "auto") == {"llama.cpp": 8000}
    assert versions.parse("llama.cpp=10451", None) == {"llama.cpp": 10451}
    for bad, engine in (("0.10.1", "llama.cpp"), ("vllm=0.10.1", None), ("0.10.1", "vllm")):
        with pytest.raises(UsageError):
            versions.parse(bad, engine)


def test_the_graph_reuse_range_is_the_2024_fit_less_graph_build_and_allocation():
    # 2.81 ms (builds b2824-b2843) - (0.503 + 1.109) ms (ik_llama.cpp #1736's logged build + alloc) = 1.198 ms
    old = get("llama.cpp", "gpu-hbm", "forward_fixed_s")
    new = get("llama.cpp", "gpu-hbm", "forward_fixed_s.graph_reuse")
    assert old.value == pytest.approx(0.00281) and new.value == pytest.approx(round(0.00281 - 0.001612, 4))
    assert old.versions["applies_to"] < new.versions["applies_from"]


def test_each_build_gets_its_range_and_one_in_none_says_what_it_falls_back_to():
    default = versions.fixed_cost("llama.cpp", "gpu-hbm")
    assert default.entry.value == pytest.approx(0.00281) and "assumes 2.81 ms" in default.note
    assert "measured on b2824-b2843" in default.note
    for build, value in ((2900, 0.00281), (3916, 0.00281), (10451, 0.0012), (12000, 0.0012)):
        with versions.selected({"llama.cpp": build}):
            assert versions.fixed_cost("llama.cpp", "gpu-hbm").entry.value == pytest.approx(value), build
    with versions.selected({"llama.cpp": 8000}):
        c = versions.fixed_cost("llama.cpp", "gpu-hbm")
    assert c.entry.value == pytest.approx(0.00281)
    assert "b8000 lies in no catalogued range" in c.note and "falls back to 2.81 ms" in c.note
    assert versions.fixed_cost("llama.cpp", "gpu") is None  # GDDR: no fixed cost per forward catalogued
    assert versions.fixed_cost("vllm", "gpu-hbm") is None


def _plan(capsys, *extra):
    code, out, err = run(["recommend", "llama-3.1-8b-instruct", "--machine", "h100-sxm", "--engine", "llama.cpp",
                          "--json", *extra], capsys)
    assert code == 0, err
    return json.loads(out)["plans"][0]


def test_recommend_prices_the_selected_build_and_says_which_it_assumes(capsys):
    old, new = _plan(capsys), _plan(capsys, "--engine-version", "b10500")
    # plain decoding is one forward: t_v(1) loses exactly the fixed-cost difference, 2.81 - 1.2 = 1.61 ms
    t_old, t_new = 1 / old["baseline_tokens_per_s"], 1 / new["baseline_tokens_per_s"]
    assert t_old - t_new == pytest.approx(0.00281 - 0.0012, abs=2e-6)  # baseline_tokens_per_s is rounded
    assert "assumes 2.81 ms per forward for builds up to b3916" in old["costs_source"]
    assert "build b10500: 1.2 ms per forward for builds from b10451" in new["costs_source"]
    assert new["speedup"] > old["speedup"]  # every draft step pays the fixed cost too


def test_a_bad_engine_version_is_one_line_and_exit_2(capsys):
    code, _, err = run(["recommend", "llama-3.1-8b-instruct", "--machine", "h100-sxm", "--engine", "llama.cpp",
                        "--engine-version", "0.10"], capsys)
    assert code == 2 and "expected a llama.cpp build number" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(["check", "--engine-version", "vllm=0.10"], capsys)
    assert code == 2 and "only llama.cpp's costs carry the builds" in err
