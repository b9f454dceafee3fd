"""planner/speed/profile.py: diagnosis arithmetic (hand-worked), profile file I/O and its errors. Torch-free."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from planner.core import constants
from planner.core.errors import PlannerError, ProfileError, UsageError
from planner.speed.diagnosis import (
    best_speedup,
    diagnose,
    draft_ratio,
    expected_tokens,
    expected_tokens_positional,
    verify_slope,
)
from planner.speed.profile import MeasuredAcceptance, ModelCurve, Profile, verify_ratios
from planner.speed.profile_file import load_profile, profile_json, save_profile

FIX = Path(__file__).parent / "fixtures" / "probe"


def curve(verify, step=None, cid="m"):
    return ModelCurve(id=cid, verify_s=tuple(verify), step_s=step if step is not None else verify[0],
                      method="synthetic")


def profile(target, draft=None, overhead=0.0, acceptance=None):
    return Profile(device="cpu", device_name="test", backend="torch-synthetic (cpu)", dtype="F32", context=128,
                   target=target, draft=draft, overhead_s=overhead, acceptance=acceptance,
                   diagnosis=diagnose(target, draft, overhead, acceptance), timestamp="t")


# --- arithmetic -----------------------------------------------------------------------------

def test_ratios_and_slope_hand_worked():
    v = [0.010, 0.012, 0.015, 0.020]
    assert verify_ratios(v) == pytest.approx((1.0, 1.2, 1.5, 2.0))
    # (t_v(4)/t_v(1) - 1) / (4 - 1) = (2 - 1) / 3
    assert verify_slope(v) == pytest.approx(1 / 3)
    assert verify_slope(v, 2) == pytest.approx(0.2)
    assert verify_slope([0.01]) == 0.0
    assert draft_ratio(0.001, 0.02) == pytest.approx(0.05)


def test_expected_tokens_closed_form():
    # E(K) = (1 - a^(K+1)) / (1 - a): a = 0.5, K = 2 -> (1 - 0.125) / 0.5 = 1.75
    assert expected_tokens(0.5, 2) == pytest.approx(1.75)
    assert expected_tokens(1.0, 4) == 5.0
    # per-position: 1 + a1 + a1*a2 = 1 + 0.8 + 0.8*0.5 = 2.2
    assert expected_tokens_positional([0.8, 0.5, 0.9], 2) == pytest.approx(2.2)
    assert expected_tokens_positional([0.5, 0.5], 2) == pytest.approx(expected_tokens(0.5, 2))


@pytest.mark.parametrize(("alpha", "c", "k", "speedup"), [(0.7, 0.05, 6, 2.35), (0.8, 0.1, 6, 2.47)])
def test_design_check_values(alpha, c, k, speedup):
    """DESIGN.md 'Speed model' check: flat verify, c = t_d/t_v(1)."""
    flat = [1.0] * 17
    got_k, got = best_speedup(flat, c, 0.0, alpha=alpha)
    assert got_k == k
    assert got == pytest.approx(speedup, abs=0.005)


def test_best_speedup_uses_measured_curve():
    # sequential verify (t_v(n) = n): speedup(K) = (K+1) / (K*0.1 + K + 1) at alpha 1 -> best K=1: 2/2.1
    seq = [1.0, 2.0, 3.0, 4.0]
    k, s = best_speedup(seq, 0.1, 0.0, alpha=1.0)
    assert (k, s) == (1, pytest.approx(2 / 2.1))


# --- diagnosis ------------------------------------------------------------------------------

def codes(findings):
    return {f.code: f for f in findings}


def test_sequential_verification_is_flagged_with_its_ratio():
    p = profile(curve([0.010, 0.020, 0.030, 0.040, 0.050]), curve([0.001]))
    f = codes(p.diagnosis)
    assert f["verify_not_parallel"].severity == "problem"
    assert f["verify_not_parallel"].value == pytest.approx(5.0)
    assert "t_v(5)/t_v(1) = 5.00" in f["verify_not_parallel"].message
    # ceiling at perfect acceptance: (K+1)*0.01 / (K*0.001 + 0.01*(K+1)) < 1 for every K
    assert f["slower_at_any_acceptance"].severity == "problem"
    assert f["slower_at_any_acceptance"].value < 1.0


def test_partly_parallel_and_slow_draft():
    # slope (1.4 - 1)/(3 - 1) = 0.2 -> below the warning threshold 0.25; (1.6-1)/2 = 0.3 -> warning
    assert "verify_parallel" in codes(diagnose(curve([1.0, 1.2, 1.4]), None, 0.0))
    f = codes(diagnose(curve([1.0, 1.3, 1.6]), curve([0.3]), 0.0))
    assert f["verify_partly_parallel"].severity == "warning"
    assert f["draft_slow"].value == pytest.approx(0.3)
    f = codes(diagnose(curve([1.0, 1.0]), curve([0.6]), 0.0))
    assert f["draft_too_slow"].severity == "problem"
    assert "1/c = 1.67x" in f["draft_too_slow"].message
    assert constants.DRAFT_RATIO_WARN <= 0.3 < constants.DRAFT_RATIO_BAD


def test_flat_verify_fast_draft_is_ok_and_jagged_is_noted():
    f = codes(diagnose(curve([1.0, 1.01, 0.8, 1.02]), curve([0.05]), 0.0))
    assert f["verify_parallel"].severity == "ok"
    assert f["draft_fast"].severity == "ok"
    assert "n = 3" in f["verify_jagged"].message
    assert f["ceiling"].value > 1.0


def test_acceptance_finding_uses_per_position():
    acc = MeasuredAcceptance(alpha=0.5, greedy_match=0.6, per_position=(0.9, 0.1), temperature=1.0, prompts=2,
                     positions=20)
    f = codes(diagnose(curve([1.0, 1.0, 1.0]), curve([0.05]), 0.0, acc))
    # K=1: (1 + 0.9) / 1.05 = 1.8095; K=2: (1 + 0.9 + 0.09) / 1.1 = 1.809 -> K=1
    assert f["expected_speedup"].value == pytest.approx(1.9 / 1.05)
    low = replace(acc, per_position=(0.01, 0.01))
    f = codes(diagnose(curve([1.0, 2.0, 3.0]), curve([0.3]), 0.0, low))
    assert f["acceptance_too_low"].severity == "problem"


# --- file I/O -------------------------------------------------------------------------------

def test_load_fixture_profile():
    p = load_profile(FIX / "profile-cpu.json")
    assert p.target.verify_s[:2] == (0.0123, 0.0131)
    assert p.max_k == 4
    assert p.draft is not None and p.draft.verify_s == (0.0021,) and p.draft.step_s == 0.0021
    assert p.overhead_parts["draft_rollback_s"] == 0.00005
    assert p.acceptance is None


def test_round_trip_is_exact(tmp_path):
    acc = MeasuredAcceptance(alpha=0.71, greedy_match=0.8, per_position=(0.7, 0.72), temperature=0.7, prompts=3,
                     positions=90, alpha_std=0.05, alpha_min=0.6, alpha_max=0.8, by_kind={"code": 0.75},
                     source="teacher-forced")
    p = profile(curve([0.02, 0.021, 0.023], cid="t"), curve([0.002], cid="d"), overhead=0.0005, acceptance=acc)
    out = save_profile(p, tmp_path / "prof.json")
    back = load_profile(out)
    assert profile_json(back) == profile_json(p)
    assert [x.name for x in tmp_path.iterdir()] == ["prof.json"]  # no temp file left behind


def test_save_refuses_to_overwrite_an_input(tmp_path):
    src = tmp_path / "bench.md"
    shutil.copy(FIX / "llama-bench-verify.md", src)
    before = src.read_bytes()
    p = profile(curve([0.02, 0.03]))
    with pytest.raises(UsageError, match="also an input"):
        save_profile(p, src, inputs=[src])
    assert src.read_bytes() == before


def test_save_replaces_atomically(tmp_path):
    dest = tmp_path / "p.json"
    dest.write_text("old")
    save_profile(profile(curve([0.02, 0.03])), dest)
    assert json.loads(dest.read_text())["target"]["verify_s"] == [0.02, 0.03]
    with pytest.raises(UsageError, match="is a directory"):
        save_profile(profile(curve([0.02])), tmp_path)


def _write(tmp_path, data) -> Path:
    p = tmp_path / "p.json"
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d.pop("target"), "field 'target' is invalid"),
    (lambda d: d["target"].update(verify_s=[0.01, -1]), r"target.verify_s\[1\]"),
    (lambda d: d["target"].update(verify_s=[]), "target.verify_s"),
    (lambda d: d.update(context="4k"), "field 'context'"),
    (lambda d: d.update(schema=99), "upgrade spec-planner"),
    (lambda d: d.update(acceptance={"alpha": 1.5}), "acceptance.alpha"),
    (lambda d: d.update(diagnosis=[{"code": "x", "severity": "fatal", "message": "m"}]), "diagnosis"),
    (lambda d: d.update(overhead_s=float("nan")), "overhead_s"),
])
def test_invalid_profiles_name_the_field(tmp_path, mutate, message):
    data = json.loads((FIX / "profile-cpu.json").read_text())
    mutate(data)
    path = _write(tmp_path, data)
    with pytest.raises(ProfileError, match=message) as e:
        load_profile(path)
    assert str(e.value).startswith(f"Cannot read profile from '{path}'")
    assert isinstance(e.value, PlannerError)


def test_not_json_missing_and_too_large(tmp_path, monkeypatch):
    with pytest.raises(ProfileError, match="not JSON"):
        load_profile(_write(tmp_path, "{nope"))
    with pytest.raises(ProfileError, match="Check the path"):
        load_profile(tmp_path / "absent.json")
    monkeypatch.setattr(constants, "PROFILE_MAX_BYTES", 100)
    with pytest.raises(ProfileError, match="too large"):
        load_profile(FIX / "profile-cpu.json")
    assert os.path.getsize(FIX / "profile-cpu.json") > 100
