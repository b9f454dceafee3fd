"""A measured machine's bandwidth spread enters check's and report's intervals and verdicts, as recommend's
(issue #28: plan/machine_spread.py is the one widening function; report goes through recommend).

The host is faked (no nvidia-smi, no torch, an uncatalogued CPU) and its bandwidth "measurement" injected:
no real timing. The expected interval is computed independently: the same deployment on the machine at
each quartile's bandwidth with no spread, the lowest low and highest high kept.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from planner.core.constants import GiB
from planner.fits import machine_detect as D
from planner.fits.measure_stats import Spread
from planner.plan.assess import assess
from planner.plan.policy import load_policy
from planner.plan.scenario import scenarios

from .cli_run import run_cli as run

TARGET, DRAFT = "qwen2.5-7b-instruct", "qwen2.5-0.5b-instruct"


def fake_host(monkeypatch, spread: Spread) -> None:
    monkeypatch.setattr(D, "_run", lambda cmd: None)
    monkeypatch.setattr(D, "_virtual_memory", lambda: (64 * GiB, 40 * GiB))
    monkeypatch.setattr(D, "_platform", lambda: ("Linux", "x86_64"))
    monkeypatch.setattr(D, "_torch_installed", lambda: False)
    monkeypatch.setattr(D, "_cpu_name", lambda: "Test CPU 9000")
    monkeypatch.setattr(D, "measure_bandwidth", lambda: spread)


def speed_on(machine, tmp_path):
    p = tmp_path / "planner.toml"
    p.write_text(f'[[deployment]]\nname = "chat"\ntarget = "{TARGET}"\ndraft = "{DRAFT}"\nmachine = "auto"\n'
                 f'engine = "llama.cpp"\ncontext = 4096\n')
    (dep,) = load_policy(p).deployments
    (sc,) = scenarios(dep, [machine], base=tmp_path)
    return assess(sc).speed


@pytest.fixture
def measured(monkeypatch):
    def host(q1: float, med: float, q3: float):
        fake_host(monkeypatch, Spread(med, q1, q3, 15, 15, 1.0, "thread CPU time"))
        return D.detect()
    return host


def test_check_interval_spans_both_quartiles_of_the_measured_bandwidth(measured, tmp_path):
    m = measured(4e9, 10e9, 25e9)
    wide = speed_on(m, tmp_path)
    ends = [speed_on(replace(m, bandwidth_bytes_per_s=int(b), measured={}), tmp_path) for b in (4e9, 25e9)]
    mid = speed_on(replace(m, measured={}), tmp_path)
    assert wide.k == mid.k and wide.speedup == mid.speedup  # the centre is the median machine's
    # ends priced at the K judged: predict at the median's K on each end's machine
    lows = [mid.speedup_low] + [e.speedup_low for e in ends if e.k == mid.k]
    highs = [mid.speedup_high] + [e.speedup_high for e in ends if e.k == mid.k]
    assert wide.speedup_low <= min(lows) + 1e-12 and wide.speedup_high >= max(highs) - 1e-12
    assert wide.speedup_low < mid.speedup_low and wide.speedup_high > mid.speedup_high
    assert wide.prediction.speedup_low <= mid.prediction.speedup_low
    # no spread measured (one trial, q1 == q3): check's answer is the median machine's, unwidened
    assert speed_on(measured(10e9, 10e9, 10e9), tmp_path).speedup_low == mid.speedup_low


def test_a_spread_straddling_one_makes_check_uncertain(measured, tmp_path, monkeypatch):
    """Force the ends apart: the roofline priced at each quartile is replaced by a plan 0.5x and 2x as fast."""
    from planner.plan import machine_spread as MS

    m = measured(4e9, 10e9, 25e9)
    mid = speed_on(replace(m, measured={}), tmp_path)
    real = MS.widen_by_machine

    def straddle(pred, costs, alpha, k_max, policy):
        out = real(pred, costs, alpha, k_max, policy)
        assert costs.machine_spread  # the assess path handed the ends over
        return replace(out, speedup_low=0.5, speedup_high=2.0, verdict=MS.speed.verdict(0.5, 2.0))

    monkeypatch.setattr("planner.plan.assess.widen_by_machine", straddle)
    sp = speed_on(m, tmp_path)
    assert mid.prediction.verdict != "uncertain" and sp.prediction.verdict == "uncertain"
    assert (sp.speedup_low, sp.speedup_high) == (0.5, 2.0)


def test_report_row_carries_the_measured_spread(monkeypatch, capsys):
    def row(spread):
        fake_host(monkeypatch, spread)
        code, out, err = run(["report", "--machine", "auto", "--targets", TARGET, "--json"], capsys)
        assert code == 0, err
        (r,) = json.loads(out)["rows"]
        return r

    narrow = row(Spread(10e9, 10e9, 10e9, 15, 15, 1.0, "thread CPU time"))
    wide = row(Spread(10e9, 4e9, 25e9, 15, 15, 1.0, "thread CPU time"))
    lo_n, hi_n = narrow["speedup_interval"]
    lo_w, hi_w = wide["speedup_interval"]
    assert lo_w < lo_n and hi_w > hi_n
    code, out, err = run(["recommend", TARGET, "--machine", "auto", "--json"], capsys)
    assert code in (0, 1), err
    rec = json.loads(out)["recommendation"]
    assert rec["speedup_interval"] == pytest.approx([lo_w, hi_w])  # report's row is recommend's plan


