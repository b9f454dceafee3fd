"""Layouts that cannot run (issue #34, class 4): refused with one line by fit, recommend, check and the search.

Tensor parallelism divides attention heads among ranks: vLLM refuses a tp that does not divide the
query heads (vllm/config/model.py verify_with_parallel_config) and shards KV heads with
divide(kv_heads, tp) or, replicated, divide(tp, kv_heads) (layers/linear.py QKVParallelLinear).
Llama-3.1-8B has 32 query heads and 8 KV heads (its config.json).
"""

from __future__ import annotations

import json

import pytest

from planner import engines
from planner.fits import fit as F
from planner.fits.machine_lookup import get_machine
from planner.fits.memory import Settings
from planner.fits.search import _layouts
from planner.sources import load_spec

from .cli_run import run_cli as run
from .fuzz.harness import ROOT


@pytest.mark.parametrize("args", [["--machine", "h100-sxm", "--gpus", "1024", "--tp", "1024"],
                                  ["--machine", "8x-h100-sxm", "--tp", "3"],
                                  ["--machine", "8x-h100-sxm", "--tp", "6"]])
def test_fit_refuses_a_tp_that_does_not_divide_the_heads(args, capsys):
    code, out, err = run(["fit", "llama-3.1-8b", "--engine", "vllm", *args], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "heads" in err, err


def test_heads_rule_by_hand():
    spec = load_spec("llama-3.1-8b")
    assert F.heads_refuse_tp(spec, 2, engines.get("vllm")) is None and F.heads_refuse_tp(spec, 8, engines.get("vllm")) is None
    assert F.heads_refuse_tp(spec, 16, engines.get("vllm")) is None  # 8 KV heads replicated twice over 16 ranks; 32 % 16 == 0
    assert "32 attention heads" in F.heads_refuse_tp(spec, 3, engines.get("vllm"))
    assert "32 attention heads" in F.heads_refuse_tp(spec, 64, engines.get("vllm"))
    p = F.Problem(spec, get_machine("8x-h100-sxm"), Settings(resolved_engine=engines.get("vllm")), F.Layout(tp=1, pp=8))
    assert {(lay.tp, lay.pp) for lay in _layouts(p)} == {(1, 8), (2, 4), (4, 2), (8, 1)}  # the search agrees


def test_recommend_and_check_refuse_it_too(tmp_path, capsys):
    code, _, err = run(["recommend", "llama-3.1-8b", "--machine", "8x-h100-sxm", "--tp", "3", "--engine", "vllm"],
                       capsys)
    assert code == 2 and "heads" in err, err
    pol = tmp_path / "planner.toml"
    pol.write_text('[[deployment]]\nname = "x"\ntarget = "llama-3.1-8b"\nmachine = "8x-h100-sxm"\nengine = "vllm"\n'
                   'tp = 3\n')
    code, out, _ = run(["check", "--config", str(pol), "--json"], capsys)
    fits = [r for r in json.loads(out)["results"] if r["requirement"] == "fits"]
    assert code == 1 and fits[0]["status"] == "fail" and "heads" in fits[0]["message"]


def test_gpus_on_a_cpu_machine_is_refused(capsys):
    code, _, err = run(["fit", "llama-3.1-8b", "--machine", "cpu-ryzen-9-7950x-64gb", "--gpus", "4"], capsys)
    assert code == 2 and "cpu machine" in err


def test_a_gpu_machine_of_vendor_apple_is_refused(tmp_path, capsys):
    spec = json.loads((ROOT / "planner" / "catalogs" / "machines" / "rtx-4090.json").read_text())
    spec["vendor"] = "apple"
    f = tmp_path / "box.json"
    f.write_text(json.dumps(spec))
    code, _, err = run(["fit", "llama-3.1-8b", "--machine", str(f)], capsys)
    assert code == 2 and "vendor 'apple'" in err and str(f) in err


@pytest.mark.parametrize("argv", [["fit", "llama-3.1-8b", "--machine", "rtx-4090", "--machine", "h100-sxm"],
                                  ["fit", "llama-3.1-8b", "--machine=rtx-4090", "-m", "h100-sxm"],
                                  ["recommend", "llama-3.1-8b", "--machine", "rtx-4090", "--machine", "h100-sxm"],
                                  ["fit", "llama-3.1-8b", "--context", "4k", "--context", "8k"]])
def test_a_one_value_option_given_twice_is_refused(argv, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and "more than once" in err and len(err.splitlines()) == 1
