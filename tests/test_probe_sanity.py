"""The probe's own sanity (issue #28): impossible step costs trigger one re-measurement, then "unreliable".

Every timing here is injected (a fake clock, a fake probe of one model): no real timing is asserted on.
"""

from __future__ import annotations

import json

import pytest

from planner.core.spec import LayerSpec, ModelSpec, WeightInventory
from planner.probe import sanity
from planner.probe.sanity import Steps, checked, impossible
from planner.probe.timing import Timing, measure_round_robin
from planner.speed.profile import ModelCurve
from planner.speed.profile_file import load_profile, profile_json, save_profile

LAYER = LayerSpec(attention="full", q_heads=4, kv_heads=2, head_dim_k=16, head_dim_v=16, ffn="dense", ffn_width=128)


def spec(sid: str, params: int, n_layers: int) -> ModelSpec:
    return ModelSpec(id=sid, model_type="test", architecture="test", source="test", layers=(LAYER,) * n_layers,
                     hidden=64, intermediate=128, vocab=512, tied_embeddings=False, max_context=4096, dtype="F32",
                     weights=WeightInventory((), "config", params, params))


TARGET = spec("target-0.5b", 500_000_000, 24)
DRAFT = spec("draft-45m", 45_000_000, 12)  # 9% of the target's parameters, half its layers


def test_a_small_draft_slower_than_its_target_is_impossible():
    why = impossible(TARGET, DRAFT, Steps(target_s=1.090, draft_s=3.597))  # the busy-host reading
    assert why is not None and "9% of the target's active parameters" in why and "3.6e+03 ms" in why
    assert impossible(TARGET, DRAFT, Steps(target_s=1.090, draft_s=0.300)) is None
    # a draft at 11% of the target, or deeper than it, may be slower (launch-bound GPUs): not flagged
    assert impossible(TARGET, spec("d", 55_000_000, 12), Steps(1.0, 2.0)) is None
    assert impossible(TARGET, spec("d", 45_000_000, 30), Steps(1.0, 2.0)) is None
    assert impossible(TARGET, None, Steps(1.0, 2.0)) is None


def test_the_same_model_twice_must_agree_within_its_spread():
    twin = spec("target-0.5b-copy", TARGET.params_active, 24)  # same shapes under another name
    # the reading: 672 ms against 367 ms is 83% apart, beyond 25% + no spread
    assert "83% apart" in impossible(TARGET, twin, Steps(0.367, 0.672))
    assert impossible(TARGET, TARGET, Steps(0.367, 0.440)) is None  # 20% apart: within 25%
    # repeats spread 30% each: 83% apart is still beyond 25% + 30% + 30% = 85%? no: it is within it
    assert impossible(TARGET, twin, Steps(0.367, 0.672, 0.30, 0.30)) is None


def test_one_remeasurement_then_unreliable():
    calls = []

    def again(steps):
        def remeasure():
            calls.append(1)
            return steps
        return remeasure

    fine = checked(TARGET, DRAFT, Steps(1.0, 0.2), again(Steps(9.0, 9.0)))
    assert fine == sanity.Verdict(Steps(1.0, 0.2), False, None) and not calls
    fixed = checked(TARGET, DRAFT, Steps(1.0, 3.0), again(Steps(1.1, 0.15)))
    assert fixed.remeasured and fixed.unreliable is None and fixed.steps == Steps(1.1, 0.15) and len(calls) == 1
    bad = checked(TARGET, DRAFT, Steps(1.0, 3.0), again(Steps(1.0, 2.5)))
    assert len(calls) == 2 and bad.remeasured and bad.steps == Steps(1.0, 2.5)
    assert bad.unreliable.startswith("unreliable measurement: the machine is busy (")
    assert "3e+03 ms" in bad.unreliable and "re-measured: " in bad.unreliable and "2.5e+03 ms" in bad.unreliable


def test_repeats_median_rejects_the_preempted_repeat():
    """A fake clock: each call reads the clock twice; the fourth repeat was preempted (100 s)."""
    durations = iter([5.0, 1.0, 1.0, 1.2, 100.0, 0.9, 1.1, 1.0])  # first: the warm-up round
    now = [0.0]
    edges = []

    def clock():
        if len(edges) % 2:
            now[0] += next(durations)
        edges.append(now[0])
        return now[0]

    (t,) = measure_round_robin([lambda: None], device="cpu", repeats=7, warmup=1, clock=clock)
    assert t.samples_s == pytest.approx((1.0, 1.0, 1.2, 100.0, 0.9, 1.1, 1.0)) and t.warmup == 1
    assert t.median_s == pytest.approx(1.0)  # median of the six inside Tukey's fences (100 s is out)
    # kept: 0.9 1.0 1.0 1.0 1.1 1.2 -> quartiles (type 7) 1.0 and 1.075
    assert t.rel_iqr == pytest.approx(0.075)
    assert Timing(2.0, (2.0,), 0).rel_iqr == 0.0


torch = pytest.importorskip("torch", reason="the synthetic probe needs torch (extra 'probe')")


def _fake_probe(readings):
    """A stand-in for curves.probe_model: each call returns the next injected step cost for its role."""
    seen = []

    def probe_model(spec_, *, role, points, spreads=None, **_kw):
        step = readings[role].pop(0)
        seen.append((role, points))
        if spreads is not None:
            spreads.append(0.0)
        verify = tuple(step * (1 + 0.1 * i) for i in range(points))
        return ModelCurve(id=spec_.id, verify_s=verify, step_s=step, method="synthetic", layers_timed=spec_.n_layers,
                          layers_total=spec_.n_layers)
    return probe_model, seen


def _probe(monkeypatch, readings):
    from planner.probe import runner
    from planner.probe.settings import ProbeSettings

    fake, seen = _fake_probe(readings)
    monkeypatch.setattr(runner, "probe_model", fake)
    st = ProbeSettings(device="cpu", max_k=2, context=64, budget_s=5, repeats=2, warmup=1, threads=1)
    return runner.run_synthetic(TARGET, DRAFT, st), seen


def test_probe_says_unreliable_instead_of_a_confident_curve(monkeypatch, tmp_path):
    from planner.commands.probe import profile_table

    prof, seen = _probe(monkeypatch, {"target": [1.090, 1.050], "draft": [3.597, 2.900]})
    assert seen == [("target", 3), ("draft", 1), ("target", 1), ("draft", 1)]  # one re-measurement of both steps
    assert prof.unreliable.startswith("unreliable measurement: the machine is busy")
    assert prof.diagnosis[0].code == "unreliable_measurement" and prof.diagnosis[0].severity == "problem"
    assert prof.target.step_s == 1.050 and prof.target.verify_s == pytest.approx((1.050, 1.155, 1.260))
    assert profile_json(prof)["unreliable"] == prof.unreliable
    assert load_profile(save_profile(prof, tmp_path / "p.json")).unreliable == prof.unreliable
    assert profile_table(prof).splitlines()[1].startswith("unreliable measurement: the machine is busy")


def test_probe_keeps_a_sane_remeasurement(monkeypatch, tmp_path):
    prof, seen = _probe(monkeypatch, {"target": [1.0, 1.2], "draft": [3.0, 0.1]})
    assert len(seen) == 4 and prof.unreliable is None
    assert "unreliable" not in profile_json(prof)  # the key only when set: older files and goldens unchanged
    assert prof.target.verify_s == pytest.approx((1.2, 1.32, 1.44))  # shape kept, rescaled to the new t_v(1)
    assert prof.draft.step_s > 0.1 and any("re-measured" in n for n in prof.target.notes)
    json.dumps(profile_json(prof))


def test_probe_does_not_remeasure_a_possible_result(monkeypatch):
    prof, seen = _probe(monkeypatch, {"target": [1.0], "draft": [0.2]})
    assert seen == [("target", 3), ("draft", 1)] and prof.unreliable is None


def test_probe_save_writes_the_profile_beside_the_machine_profile(monkeypatch, tmp_path, capsys):
    """`planner probe --save` (injected step costs: the same model twice, 40% apart, twice) writes the profile
    to SPEC_PLANNER_PROFILE_DIR, flagged unreliable, and recommend --profile on it warns so."""
    import os

    from planner.cli import main
    from planner.probe import runner

    from .conftest import model_dir

    d = model_dir(tmp_path, "Qwen3-0.6B", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, intermediate_size=128, vocab_size=512)
    fake, seen = _fake_probe({"target": [1.0, 1.0], "draft": [1.4, 1.4]})
    monkeypatch.setattr(runner, "probe_model", fake)
    with pytest.raises(SystemExit) as e:
        main(["probe", str(d), "--draft", str(d), "--device", "cpu", "--dtype", "f32", "--max-k", "2",
              "--context", "64", "--budget-s", "5", "--repeats", "2", "--threads", "1", "--json", "--save"])
    cap = capsys.readouterr()
    assert e.value.code == 0, cap.err
    data = json.loads(cap.out)
    saved = data["saved_profile"]
    assert os.path.dirname(saved) == os.environ["SPEC_PLANNER_PROFILE_DIR"] and saved.endswith("probe-profile.json")
    assert len(seen) == 4 and "40% apart" in data["unreliable"]
    assert load_profile(saved).unreliable == data["unreliable"]
    with pytest.raises(SystemExit):
        main(["recommend", "qwen2.5-0.5b-instruct", "--machine", "rtx-4090", "--profile", saved])
    assert "unreliable measurement: the machine is busy" in " ".join(capsys.readouterr().err.split())  # wrapped
