"""Hybrid recurrent targets: the state a checkpoint copies, what saving and restoring it costs per round, and
the engines that refuse speculation on such targets.

Why: llama-server saves a hybrid target's recurrent state before every verify and restores it (and runs the
accepted tokens again) when a draft is partly rejected (catalogs/mechanisms/recurrent_rollback.json); a model
that truncates a KV cache for free over-predicts every such plan. Each figure is worked by hand below.
"""

from __future__ import annotations

import json

import pytest

from planner import engines
from planner.fits.memory import Settings
from planner.plan import hybrid
from planner.sources import load_spec
from planner.speed import recurrent_state as rs
from planner.speed.model import Costs, expected_accepted, speedup

from .cli_run import run_cli as run

QWEN35 = "qwen3.5-35b-a3b"  # 40 layers, 30 Gated DeltaNet: conv_dim 8192, kernel 4, 524,288 state elements each


def test_state_bytes_from_the_config_in_llamacpps_f32():
    spec = load_spec(QWEN35)
    s = Settings(context=4096, batch=1, resolved_engine=engines.get("llama.cpp"), spec_tokens=8)
    # 30 layers x (8192 x (4 - 1) conv + 524,288 state) x 4 B (f32); spec_tokens adds no copies to a checkpoint
    assert rs.state_bytes(spec, s) == 30 * (8192 * 3 + 524_288) * 4 == 65_863_680
    assert rs.state_bytes(spec, Settings(context=4096, batch=3, resolved_engine=engines.get("llama.cpp"))) == 3 * 65_863_680


def test_checkpoint_round_by_hand():
    # K = 2, a = 0.5, t_v = 1, 2, 3 s, copy 0.1 s:
    # X = 0.1 + P(0)(0.1 + t_v(2)) + P(1)(0.1 + t_v(3)) = 0.1 + 0.5 x 2.1 + 0.25 x 3.1 = 1.925; r = 1 - 0.5**2
    x, r = rs.checkpoint_extra_s(2, 0.5, [1.0, 2.0, 3.0], 0.1)
    assert x == pytest.approx(1.925) and r == pytest.approx(0.75)


def test_verify_delta_gives_the_checkpoint_speedup():
    v, td = [1.0, 2.0, 3.0], 0.1
    d = rs.verify_delta_s(2, 0.5, v, td, 0.0, 0.1)
    # E(2) = 1.75, T = 2 x 0.1 + 3 = 3.2: D = 1.75 (3.2 + 1.925) / (1.75 + 0.75) - 3.2 = 0.3875
    assert d == pytest.approx(0.3875)
    assert expected_accepted(0.5, 2) == pytest.approx(1.75)
    # the plain formula with t_v(3) + D equals (E + r) t_v(1) / (T + X) = 2.5 / 5.125
    assert speedup(2, [1.0, 2.0, 3.0 + d], td, 0.5) == pytest.approx(2.5 / 5.125)


def test_copy_rate_by_machine_kind():
    assert rs.copy_rate("apple", 546e9).central == pytest.approx(273e9)  # read + write at the memory bandwidth
    g = rs.copy_rate("gpu", 3.35e12)
    assert g.low < g.central < g.high and "assumed" in g.source


def _costs():
    return Costs(verify_s=(0.010, 0.011, 0.012, 0.013), draft_s=0.001, overhead_s=0.0, source="given")


def test_llamacpp_draft_model_on_a_hybrid_target_pays_the_checkpoint():
    spec = load_spec(QWEN35)
    s = Settings(context=4096, batch=1, resolved_engine=engines.get("llama.cpp"))
    c = hybrid.priced(_costs(), spec, "draft_model", s, 0.8, "gpu", 3.35e12)
    copy = 65_863_680 / 12e9  # the central host-copy rate
    assert c.verify_s[0] == 0.010  # plain decoding saves nothing
    for k in (1, 2, 3):
        assert c.verify_s[k] == pytest.approx(0.010 + 0.001 * k + rs.verify_delta_s(k, 0.8, _costs().verify_s, 0.001,
                                                                                     0.0, copy))
    assert c.verify_low_s[3] < c.verify_s[3] < c.verify_high_s[3]  # the copy rate's interval
    assert "checkpoint" in c.source


def test_mtp_rolls_back_in_place_and_dense_targets_are_untouched():
    spec = load_spec(QWEN35)
    s = Settings(context=4096, batch=1, resolved_engine=engines.get("llama.cpp"))
    c = hybrid.priced(_costs(), spec, "mtp", s, 0.8, "gpu", 3.35e12)
    assert c.verify_s[2] == pytest.approx(0.012 + 2 * 65_863_680 / 3.35e12)  # K = 2 states written on the device
    dense = load_spec("llama-3.1-8b-instruct")
    assert hybrid.priced(_costs(), dense, "draft_model", s, 0.8, "gpu", 3.35e12) == _costs()
    vllm = Settings(context=4096, batch=1, resolved_engine=engines.get("vllm"))  # its per-position state copies are in the ledger
    assert hybrid.priced(_costs(), spec, "draft_model", vllm, 0.8, "gpu", 3.35e12) == _costs()


def test_mlx_refuses_a_draft_model_on_a_hybrid_target(capsys):
    code, out, _ = run(["recommend", QWEN35, "--machine", "m3-max-128gb", "--engine", "mlx", "--draft",
                        "qwen3.5-0.8b", "--json"], capsys)
    assert code == 0
    plans = json.loads(out)["plans"]
    assert plans and all(not p["compatible"] for p in plans if p["method"] == "draft_model")
    assert any("trimmable prompt cache" in " ".join(p["reasons"]) for p in plans)


def test_the_checkpoint_is_priced_at_every_concurrency(capsys):
    # a --batch list re-prices each plan per concurrency: its first point must be the plan itself
    code, out, _ = run(["recommend", QWEN35, "--machine", "h100-sxm", "--engine", "llama.cpp", "--draft",
                        "qwen3.5-0.8b", "--batch", "1,4", "--json"], capsys)
    assert code == 0
    plan = json.loads(out)["plans"][0]
    assert "recurrent-state checkpoint per round" in plan["costs_source"]
    first = plan["per_batch"][0]
    assert first["batch"] == 1 and first["speedup"] == pytest.approx(plan["speedup"], rel=1e-3)

