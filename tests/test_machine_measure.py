"""Repeated host measurements: robust statistics, contention, the saved profile, and the spread in the verdict.

No assert here depends on timing: samples are given, the host is faked (conftest _quiet_host and the
patches below), and the profile lives in a tmp dir (SPEC_PLANNER_PROFILE_DIR)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from planner import engines
from planner.core.errors import UsageError
from planner.fits import host_load
from planner.fits import machine_detect as D
from planner.fits import machine_lookup as L
from planner.fits import machine_profile as MP
from planner.fits.measure_stats import Spread, quantile, reject_outliers, run_trials, summarise
from planner.plan import recommend as P
from planner.plan.request import Pricing, Target, Where, Workload
from planner.sources import load_spec

from .fake_host import fake_cpu_host

GiB = 1 << 30


# --- statistics -------------------------------------------------------------------------------

def test_quantile_is_numpy_type_7():
    xs = [1.0, 2.0, 3.0, 4.0]
    # h = (n-1) q: q=0.25 -> h=0.75 -> 1 + 0.75 * (2 - 1) = 1.75; median h=1.5 -> 2.5; q3 h=2.25 -> 3.25
    assert (quantile(xs, 0.25), quantile(xs, 0.5), quantile(xs, 0.75)) == (1.75, 2.5, 3.25)
    with pytest.raises(UsageError):
        quantile([], 0.5)


def test_tukey_fences_drop_a_descheduled_trial():
    xs = [10.0, 10.2, 9.9, 10.1, 10.0, 2.0]  # one trial the scheduler interrupted
    # sorted [2, 9.9, 10, 10, 10.1, 10.2]: q1 = 9.925, q3 = 10.075, IQR 0.15, fences 9.7 .. 10.3
    assert reject_outliers(xs) == [9.9, 10.0, 10.0, 10.1, 10.2]
    s = summarise(xs, 1.0, "test")
    assert (s.trials, s.kept, s.median) == (6, 5, 10.0)
    assert s.q1 == pytest.approx(10.0) and s.q3 == pytest.approx(10.1)
    assert reject_outliers([1.0, 100.0, 5.0]) == [1.0, 5.0, 100.0]  # under 4 values nothing is fenced


def test_disagreeing_trials():
    assert not Spread(10.0, 9.0, 11.0, 9, 9, 1.0, "c").disagree  # IQR 20% of the median
    assert Spread(10.0, 8.0, 11.0, 9, 9, 1.0, "c").disagree  # 30%
    with pytest.raises(UsageError):
        summarise([1.0, float("nan")], 1.0, "c")


def test_trials_run_until_the_budget_with_floor_and_cap():
    now = [0.0]
    calls = []

    def trial():  # each trial takes one second of a fake wall clock
        calls.append(1)
        now[0] += 1.0
        return 1.0

    values, seconds = run_trials(trial, budget_s=3, min_trials=5, max_trials=50, warmup=2, wall=lambda: now[0])
    assert len(values) == 5 and len(calls) == 7 and seconds == 5.0  # the floor beats the budget; warm-up unrecorded
    now[0] = 0.0
    values, _ = run_trials(trial, budget_s=7.5, min_trials=1, max_trials=50, warmup=0, wall=lambda: now[0])
    assert len(values) == 8  # trials start while under 7.5 s: at 0, 1, .., 7
    values, _ = run_trials(trial, budget_s=1e9, min_trials=1, max_trials=4, warmup=0, wall=lambda: now[0])
    assert len(values) == 4


def test_budget_counted_on_the_trial_clock_so_a_busy_host_gets_as_many_trials():
    """A trial costs 0.1 s of CPU time; on a host where we get a tenth of a core it costs 1 s of wall time.
    Budgeted in CPU time, both hosts run the same 8 trials (starting at 0, 0.1, .., 0.7 s of CPU);
    budgeted in wall time (the old rule), the busy host stopped at the 3-trial floor."""
    def host(share: float):
        wall, cpu = [0.0], [0.0]

        def trial():
            cpu[0] += 0.1
            wall[0] += 0.1 / share
            return 1.0
        return trial, (lambda: wall[0]), (lambda: cpu[0])

    for share in (1.0, 0.1):
        trial, wall, cpu = host(share)
        values, seconds = run_trials(trial, budget_s=0.75, min_trials=3, max_trials=50, warmup=0, wall=wall,
                                     spent=cpu)
        assert len(values) == 8 and seconds == pytest.approx(0.8 / share)
    trial, wall, _ = host(0.1)
    assert len(run_trials(trial, budget_s=0.75, min_trials=3, max_trials=50, warmup=0, wall=wall)[0]) == 3
    # the wall cap ends a very busy host's trials past the floor: trials start at 0, 1, .., 4 s of wall time
    trial, wall, cpu = host(0.1)
    values, _ = run_trials(trial, budget_s=0.75, min_trials=3, max_trials=50, warmup=0, wall=wall, spent=cpu,
                           wall_cap_s=4.5)
    assert len(values) == 5


# --- contention -------------------------------------------------------------------------------

def test_contention_names_each_cause_in_one_line():
    assert host_load.contention(1.5, 2, 0.0, Spread(10, 9.5, 10.5, 9, 9, 1, "c")) is None
    line = host_load.contention(7.8, 2, 0.12, Spread(10, 7, 11, 9, 9, 1, "c"))
    assert "\n" not in line
    assert "load average 7.8 on 2 cores" in line and "12% CPU steal" in line and "IQR 40% of the median" in line


def test_steal_is_a_rate_over_two_reads(monkeypatch):
    reads = iter([(100, 10_000), (130, 10_200)])  # 30 of 200 jiffies stolen
    monkeypatch.setattr(host_load, "_cpu_times", lambda: next(reads))
    assert host_load.steal_fraction(window_s=0) == pytest.approx(0.15)


def test_proc_stat_parse():
    # steal is the 8th field; the total is the first eight (guest is already inside user)
    assert host_load.parse_proc_stat("cpu  1 2 3 4 5 6 7 8 9 10") == (8, 36)
    assert host_load.parse_proc_stat("cpu0 1 2 3 4 5 6 7 8") is None
    assert host_load.parse_proc_stat("cpu  1 2 x 4 5 6 7 8 9") is None


# --- the saved profile -----------------------------------------------------------------------

@pytest.fixture
def cpu_host(monkeypatch):
    """A 64 GiB uncatalogued CPU host whose bandwidth measures 10 GB/s (IQR 9-11) and counts its measurements."""
    fake_cpu_host(monkeypatch)
    host = SimpleNamespace(measured=0, bw=Spread(10e9, 9e9, 11e9, 9, 8, 0.6, "thread CPU time"))

    def measure():
        host.measured += 1
        return host.bw

    monkeypatch.setattr(D, "measure_bandwidth", measure)
    return host


def test_profile_round_trip_skips_measuring(cpu_host):
    first = L.get_machine("auto")
    assert cpu_host.measured == 1 and first.profile_path is None and first.bandwidth_bytes_per_s == 10_000_000_000
    path = MP.save(first)
    again = L.get_machine("auto")
    assert cpu_host.measured == 1  # read, not measured
    assert again.profile_path == str(path) and again.bandwidth_bytes_per_s == 10_000_000_000
    assert again.measured["bandwidth"] == cpu_host.bw
    assert any("saved profile" in n and "under an hour old" in n for n in again.notes)
    L.get_machine("auto", remeasure=True)
    assert cpu_host.measured == 2


def test_saved_free_memory_holds_while_the_live_figure_churns_within_5_percent(cpu_host, monkeypatch):
    MP.save(L.get_machine("auto"))  # saved with 40 GiB free of 64 GiB
    # 5% of 64 GiB is 3.2 GiB: 41 GiB live is churn, and the saved 40 GiB stands (the same answer every run)
    monkeypatch.setattr(D, "_virtual_memory", lambda: (64 * GiB, 41 * GiB))
    steady = L.get_machine("auto")
    assert steady.devices[0].free_bytes == 40 * GiB and steady.profile_path is not None
    assert any("free memory of device 0 as saved" in n for n in steady.notes)
    assert "free memory as saved" in steady.sources["memory"]
    # 20 GiB live is memory really taken: read live, no claim of the saved figure
    monkeypatch.setattr(D, "_virtual_memory", lambda: (64 * GiB, 20 * GiB))
    taken = L.get_machine("auto")
    assert taken.devices[0].free_bytes == 20 * GiB and not any("as saved" in n for n in taken.notes)
    # 3.2 GiB is the edge: 43.2 GiB stays steady, 43.3 GiB does not
    edge = int(40 * GiB + 0.05 * 64 * GiB)
    monkeypatch.setattr(D, "_virtual_memory", lambda: (64 * GiB, edge))
    assert L.get_machine("auto").devices[0].free_bytes == 40 * GiB
    monkeypatch.setattr(D, "_virtual_memory", lambda: (64 * GiB, edge + 100 * 2**20))
    assert L.get_machine("auto").devices[0].free_bytes == edge + 100 * 2**20


def test_profile_of_other_hardware_is_ignored_with_a_note(cpu_host, monkeypatch):
    path = MP.save(L.get_machine("auto"))
    monkeypatch.setattr(D, "_cpu_name", lambda: "Other CPU 1")
    m = L.get_machine("auto")
    assert m.profile_path is None and cpu_host.measured == 2
    assert any("other hardware (devices differ)" in n and str(path) in n for n in m.notes)


def test_old_or_broken_profile_is_ignored(cpu_host):
    m = L.get_machine("auto")
    path = MP.save(m, now=0.0)  # saved in 1970: far past the age limit
    live = D.detect(measure=False)
    assert MP.apply_saved(live)[0] is None and "days old" in MP.apply_saved(live)[1]
    doc = json.loads(path.read_text())
    MP.save(m)
    doc = json.loads(path.read_text())
    doc["bandwidth_bytes_per_s"] = -1
    path.write_text(json.dumps(doc))
    saved, why = MP.apply_saved(live)
    assert saved is None and "field 'bandwidth_bytes_per_s'" in why
    path.write_text("x" * (70 * 1024))  # over the size cap: refused before parsing
    assert MP.apply_saved(live)[0] is None


def test_profile_dir_conventions(monkeypatch, tmp_path):
    monkeypatch.setenv("SPEC_PLANNER_PROFILE_DIR", str(tmp_path / "p"))
    assert MP.profile_path() == tmp_path / "p" / "machine-profile.json"
    monkeypatch.delenv("SPEC_PLANNER_PROFILE_DIR")
    monkeypatch.setitem(__import__("sys").modules, "platformdirs", None)  # not installed
    monkeypatch.setattr(MP.sys, "platform", "linux")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert MP.profile_dir() == tmp_path / "xdg" / "spec-planner"


def test_age_text_is_coarse():
    assert MP.age_text(59 * 60) == "under an hour old"
    assert MP.age_text(5 * 3600 + 59) == "5 h old"
    assert MP.age_text(3 * 86400 + 1) == "3 days old"


# --- the spread enters the verdict -------------------------------------------------------------

def _choice(cpu_host, bw):
    cpu_host.bw = bw
    m = L.get_machine("auto", remeasure=True)
    spec = load_spec("qwen2.5-7b-instruct")
    from planner.speed.adaptive import Adaptive

    rec = P.recommend(Target(spec, spec.id),
                      Where(m, engines.get("llama.cpp")),
                      Workload(context=4096),
                      Pricing(k_max=16, adaptive=Adaptive(0.75, 0)))
    return rec.choice


def test_bandwidth_spread_widens_the_interval(cpu_host):
    exact = _choice(cpu_host, Spread(10e9, 10e9, 10e9, 9, 9, 0.6, "c"))
    spread = _choice(cpu_host, Spread(10e9, 5e9, 20e9, 9, 9, 0.6, "c"))
    assert spread.speedup == pytest.approx(exact.speedup)  # the centre is the median's
    assert spread.speedup_interval[0] < exact.speedup_interval[0] - 0.01
    assert spread.speedup_interval[1] > exact.speedup_interval[1] + 0.01


def test_widen_by_machine_makes_a_straddling_verdict_uncertain():
    from planner.speed.model import Costs, predict

    fast = Costs(verify_s=(1.0,) * 6, draft_s=0.05, source="t")  # flat verify: clearly faster
    slow = Costs(verify_s=(1.0, 2.0, 3.0, 4.0, 5.0, 6.0), draft_s=0.5, source="t")  # serial: slower
    pred = predict(fast.verify_s, fast.draft_s, 0.7, k_max=5)
    assert pred.verdict == "faster"
    costs = Costs(verify_s=fast.verify_s, draft_s=fast.draft_s, source="t", machine_spread=(slow, fast),
                  machine_spread_source="the measured bandwidth's spread")
    from planner.speed.acceptance import Acceptance

    out = P.widen_by_machine(pred, costs, Acceptance(0.7, 0.7, 0.7, "g", "s"), 5, None)
    assert out.verdict == "uncertain" and out.speedup_low < 1.0 < out.speedup_high
    assert "re-measure on an idle machine" in out.reasons[0] and "planner probe" in out.reasons[0]


# --- the probe's diagnosis names only the measured backend's mechanisms ---------------------------

def test_serial_verify_names_quantised_metal_only_on_metal():
    from planner.speed.diagnosis import diagnose
    from planner.speed.profile import ModelCurve

    serial = ModelCurve(id="t", verify_s=(0.01, 0.02, 0.03, 0.04, 0.05), step_s=0.01, method="synthetic")
    on = {d: next(f.message for f in diagnose(serial, None, 0.0, device=d) if f.code == "verify_not_parallel")
          for d in ("cpu", "cuda", "mps")}
    assert "quantised-Metal" in on["mps"]
    assert "quantised-Metal" not in on["cpu"] and "quantised-Metal" not in on["cuda"]
