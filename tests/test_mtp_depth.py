"""MTP layers run past their depth (plan/mtp_depth.py): a plan whose K exceeds the target's MTP layers
says its acceptance there is low confidence and what would settle it; one within the depth does not.
"""

from __future__ import annotations

import json

from planner.sources import load_spec

from .cli_run import run_cli as run

QWEN35 = "qwen3.5-35b-a3b"  # one MTP layer (mtp_num_hidden_layers = 1)


def test_mtp_past_its_depth_says_low_confidence(capsys):
    # Qwen3.5-35B-A3B ships one MTP layer: K = 3 runs it two positions past its depth
    spec = load_spec(QWEN35)
    assert spec.mtp is not None and spec.mtp.layers == 1
    code, out, _ = run(["recommend", QWEN35, "--machine", "h100-sxm", "--engine", "llama.cpp", "--method", "mtp",
                        "--k", "3", "--json"], capsys)
    assert code == 0
    reasons = " ".join(json.loads(out)["plans"][0]["reasons"])
    assert "K=3 runs the 1 MTP layer(s) 2 position(s) past their depth" in reasons
    assert "each position past the depth is priced at 0.967x the one before" in reasons
    # on vLLM the same target at K = 3 prices the decayed rates a, 0.967a, 0.967^2 a: alpha is the first's
    code, out, _ = run(["recommend", QWEN35, "--machine", "h100-sxm", "--engine", "vllm", "--method", "mtp",
                        "--k", "3", "--json"], capsys)
    plan = json.loads(out)["plans"][0]
    a = plan["acceptance"]["alpha"]
    assert plan["acceptance"]["decay"]["depth"] == 1 and plan["acceptance"]["decay"]["factor"] == 0.967
    assert f"per-position alpha = [{a:.2f}, {a * 0.967:.2f}, {a * 0.967 ** 2:.2f}]" in " ".join(plan["reasons"])
    code, out, _ = run(["recommend", QWEN35, "--machine", "h100-sxm", "--engine", "llama.cpp", "--method", "mtp",
                        "--k", "1", "--json"], capsys)
    assert "past their depth" not in " ".join(json.loads(out)["plans"][0]["reasons"])
