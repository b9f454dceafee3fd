"""Calibration prompts and the acceptance summaries (per-position a_k, spread): torch-free, hand-worked."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from planner.core.errors import ConfigError
from planner.probe.acceptance import load_prompts, parse_prompts, per_position, summarize


def test_per_position_hand_worked():
    # alphas 1, .5, 1, .5 with K = 2: windows s = 0, 1, 2
    # P1 = (1 + .5 + 1)/3 = 5/6; P2 = (1*.5 + .5*1 + 1*.5)/3 = .5; a1 = 5/6, a2 = .5 / (5/6) = .6
    assert per_position([[1.0, 0.5, 1.0, 0.5]], 2) == pytest.approx((5 / 6, 0.6))
    # constant alpha: a_k = alpha at every k
    assert per_position([[0.7] * 10, [0.7] * 6], 4) == pytest.approx((0.7,) * 4)
    # continuations shorter than K: K shrinks to the longest one
    assert len(per_position([[0.5, 0.5]], 8)) == 2
    assert per_position([], 3) == ()


def test_summarize_pools_positions_and_reports_spread():
    acc = summarize(["code", "chat"], [[1.0, 0.5], [0.2, 0.2, 0.2, 0.2]], [[1, 0], [0, 1, 1, 1]],
                    temperature=0.8, k_max=2, source="test")
    # pooled over the 6 positions: (1 + .5 + 4*.2)/6 = 2.3/6
    assert acc.alpha == pytest.approx(2.3 / 6)
    assert acc.greedy_match == pytest.approx(4 / 6)
    # per prompt: .75 and .2 -> population std .275, min .2, max .75
    assert (acc.alpha_std, acc.alpha_min, acc.alpha_max) == pytest.approx((0.275, 0.2, 0.75))
    assert dict(acc.by_kind) == pytest.approx({"code": 0.75, "chat": 0.2})
    assert (acc.prompts, acc.positions, acc.temperature) == (2, 6, 0.8)


def test_bundled_prompt_set_is_package_data():
    ps = load_prompts()
    kinds = [p.kind for p in ps]
    assert {"chat", "code", "math", "prose"} <= set(kinds)
    assert all(kinds.count(k) >= 2 for k in ("chat", "code", "math", "prose"))


def test_prompt_files_json_and_text(tmp_path):
    j = tmp_path / "p.json"
    j.write_text(json.dumps({"prompts": [{"kind": "code", "text": "def f():"}, "plain string"]}))
    assert [(p.kind, p.text) for p in load_prompts(j)] == [("code", "def f():"), ("custom", "plain string")]
    t = tmp_path / "p.txt"
    t.write_text("first prompt\n\n  second prompt\n")
    assert [p.text for p in load_prompts(t)] == ["first prompt", "  second prompt"]


@pytest.mark.parametrize(("text", "message"), [
    ("", "wrong number of prompts"),
    ('{"prompts": [{"kind": "chat"}]}', "entry 0 has no text"),
    ('{"prompts": 3}', "no prompt list"),
    ("[1, 2", "not valid JSON"),
    ("x" * 20_001, "too long"),
])
def test_bad_prompt_files(text, message):
    with pytest.raises(ConfigError, match=message) as e:
        parse_prompts(text, "prompts.json")
    assert str(e.value).startswith("Cannot read calibration prompts from 'prompts.json'")


def test_profile_and_parsers_import_without_torch():
    code = ("import sys\nimport planner.speed.profile, planner.probe, planner.probe.importers, planner.probe.acceptance\n"
            "import planner.probe.synthetic, planner.probe.timing, planner.probe.runner, planner.commands.probe\n"
            "import planner.probe.synthetic_shapes, planner.probe.synthetic_ops, planner.probe.synthetic_layers\n"
            "import planner.probe.curves, planner.probe.device, planner.probe.settings\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
