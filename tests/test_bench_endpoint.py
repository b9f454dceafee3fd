"""`planner bench --endpoint` against a loopback stand-in that decodes at a known rate and acceptance.

The stand-in (tests/endpoint_standin.py) records what it produced; every assertion compares the
bench's figures with that record (or with the stand-in's rate), never with a constant the bench
printed before. Each server answers a bounded number of requests and stops itself.
"""

from __future__ import annotations

import json
import socket

import pytest

from planner.bench import engine_counters as ec
from planner.bench.endpoint_profile import measured_costs
from planner.speed.model import Costs
from planner.speed.profile_file import load_profile

from .cli_run import run_cli
from .endpoint_standin import StandIn

PAIR = ["bench", "qwen2.5-7b-instruct", "--draft", "qwen2.5-0.5b-instruct", "--machine", "rtx-4090"]


def _bench(capsys, url, *extra):
    return run_cli([*PAIR, "--endpoint", url, "--requests", "6", "--tokens", "48", "--k", "4", "--json", *extra],
                   capsys)


def _truth(produced, baseline):
    """Tokens/s and accepted/drafted the stand-in produced, without the warm-up (the first request)."""
    ps = [p for p in produced[1:] if p.baseline == baseline]
    tps = sum(p.tokens for p in ps) / sum(p.decode_s for p in ps)
    rate = sum(p.accepted for p in ps) / sum(p.drafted for p in ps) if not baseline else None
    return tps, rate, ps


def test_llama_server_rate_acceptance_and_baseline(capsys):
    with StandIn(spec_tokens_per_s=400.0, base_tokens_per_s=250.0, alpha=0.7, k=4) as s:
        code, out, err = _bench(capsys, s.url)
        produced = list(s.produced)
    assert code == 0, err
    d = json.loads(out)
    tps, rate, ps = _truth(produced, baseline=False)
    base_tps, _, bs = _truth(produced, baseline=True)
    assert len(ps) == 6 and len(bs) == 6  # the speculative run and the per-request baseline run
    m = d["measured"]
    assert m["tokens_per_s"] == pytest.approx(tps, rel=0.15) and m["tokens_per_s"] == pytest.approx(400, rel=0.15)
    assert abs(m["acceptance_rate"] - rate) <= 0.03
    assert m["baseline_tokens_per_s"] == pytest.approx(base_tps, rel=0.15) and m["baseline_reason"] is None
    assert m["speedup"] == pytest.approx(400 / 250, rel=0.15)
    assert m["drafted"] == sum(p.drafted for p in ps) and m["accepted"] == sum(p.accepted for p in ps)
    assert "bench: request 6/6" in err  # progress on stderr
    p = d["predicted"]
    for key in ("tokens_per_s", "acceptance_rate", "baseline_tokens_per_s", "speedup"):
        assert d["ratio"][key] == pytest.approx(m[key] / p[key], rel=1e-3)
    assert d["build"] == "b0000-standin" and d["k"] == 4 and d["engine"] == "llama.cpp"


def test_llama_server_metrics_give_rounds_and_per_position(capsys):
    """Started with --metrics, llama-server counts rounds: mean accepted per round is then counted, not
    estimated from accepted / drafted x K."""
    with StandIn(metrics=True, alpha=0.6, k=4) as s:
        code, out, err = _bench(capsys, s.url)
        ps = [p for p in s.produced[1:] if not p.baseline]
    m = json.loads(out)["measured"]
    assert code == 0, err
    assert m["rounds"] == sum(p.rounds for p in ps)
    assert m["mean_accepted_per_round"] == pytest.approx(sum(p.accepted for p in ps) / m["rounds"], abs=1e-3)
    assert len(m["per_position"]) == 4 and "counted" in m["mean_accepted_per_round_from"]


def test_llama_server_ignoring_n_max_gives_null_baseline_with_reason(capsys):
    with StandIn(honour_n_max=False) as s:
        code, out, err = _bench(capsys, s.url)
    d = json.loads(out)
    assert code == 0, err
    assert d["measured"]["baseline_tokens_per_s"] is None and d["ratio"]["baseline_tokens_per_s"] is None
    assert "speculative.n_max" in d["measured"]["baseline_reason"] and "--baseline-endpoint" in d["measured"][
        "baseline_reason"]


def test_baseline_endpoint_measures_a_second_server(capsys):
    with StandIn(honour_n_max=False, spec_tokens_per_s=300.0) as s, \
            StandIn(speculate=False, base_tokens_per_s=200.0) as b:
        code, out, err = _bench(capsys, s.url, "--baseline-endpoint", b.url)
        truth_b = [p for p in b.produced if p.baseline]
    d = json.loads(out)
    assert code == 0, err
    tb = sum(p.tokens for p in truth_b) / sum(p.decode_s for p in truth_b)
    assert d["measured"]["baseline_tokens_per_s"] == pytest.approx(tb, rel=0.15)
    assert d["baseline_endpoint"] == b.url


def test_slower_speculation_exits_1(capsys):
    with StandIn(spec_tokens_per_s=150.0, base_tokens_per_s=250.0) as s:
        code, out, _ = _bench(capsys, s.url)
    assert code == 1 and json.loads(out)["measured"]["speedup"] < 1


def test_vllm_metrics_rate_acceptance_per_position(capsys):
    with StandIn(protocol="vllm", spec_tokens_per_s=300.0, alpha=0.6, k=3) as s:
        code, out, err = run_cli([*PAIR, "--endpoint", s.url, "--engine", "vllm", "--requests", "5", "--tokens", "48",
                                  "--k", "3", "--json"], capsys)
        produced = list(s.produced)
    assert code == 0, err
    d = json.loads(out)
    ps = produced[1:]  # the warm-up's counts precede the first /metrics read
    m = d["measured"]
    assert m["tokens_per_s"] == pytest.approx(300.0, rel=0.15)
    rate = sum(p.accepted for p in ps) / sum(p.drafted for p in ps)
    assert abs(m["acceptance_rate"] - rate) <= 0.03
    assert m["rounds"] == sum(p.rounds for p in ps)
    assert m["mean_accepted_per_round"] == pytest.approx(sum(p.accepted for p in ps) / sum(p.rounds for p in ps),
                                                         abs=1e-3)
    assert len(m["per_position"]) == 3 and m["per_position"][0] >= m["per_position"][1] >= m["per_position"][2]
    assert m["baseline_tokens_per_s"] is None and "--baseline-endpoint" in m["baseline_reason"]
    assert m["ttft_s"] == pytest.approx(0.004, rel=0.01)


def test_save_profile_then_recommend_uses_measured_acceptance(capsys, tmp_path):
    prof = tmp_path / "measured.json"
    with StandIn(spec_tokens_per_s=400.0, base_tokens_per_s=250.0, alpha=0.5, k=4) as s:
        code, out, err = _bench(capsys, s.url, "--save-profile", str(prof))
    assert code == 0, err
    d = json.loads(out)
    p = load_profile(prof)
    assert p.backend == "llama.cpp" and p.draft is not None and p.acceptance is not None
    assert p.target.verify_s[0] == pytest.approx(1 / d["measured"]["baseline_tokens_per_s"], rel=1e-3)
    code, out, err = run_cli(["recommend", "qwen2.5-7b-instruct", "--candidates", "qwen2.5-0.5b-instruct",
                              "--machine", "rtx-4090", "--engine", "llama.cpp", "--k", "4", "--profile", str(prof),
                              "--json"], capsys)
    assert code == 0, err
    plan = json.loads(out)["plans"][0]
    assert plan["acceptance"]["alpha"] == pytest.approx(p.acceptance.alpha, abs=1e-9)
    assert str(prof) in plan["acceptance"]["source"] and "bench --endpoint" in plan["acceptance"]["source"]
    assert str(prof) in plan["costs_source"]
    # the profile's t_d was solved so that the speed model reproduces the measured speed-up at this K
    assert plan["speedup"] == pytest.approx(d["measured"]["speedup"], rel=0.03)


def test_measured_costs_reproduce_the_round_time():
    """Hand-worked: t_v(1) = 1/100 s, predicted t_v(5)/t_v(1) = 1.2, t_o = 1 ms, tau = 3 at 150 tok/s:
    round = 3/150 = 20 ms; t_v(5) = 12 ms; t_d = (20 - 12 - 1) / 4 = 1.75 ms."""
    pred = Costs(verify_s=(0.02, 0.021, 0.022, 0.023, 0.024), draft_s=0.005, overhead_s=0.001)
    verify, t_d, notes = measured_costs(pred, k=4, baseline_tokens_per_s=100.0, spec_tokens_per_s=150.0, tau=3.0)
    assert verify[0] == pytest.approx(0.01) and verify[4] == pytest.approx(0.012)
    assert t_d == pytest.approx(0.00175)
    verify, t_d, notes = measured_costs(pred, k=4, baseline_tokens_per_s=100.0, spec_tokens_per_s=400.0, tau=3.0)
    assert t_d == pytest.approx(0.005 * 0.5) and "under the predicted" in notes[-1]


def test_prometheus_parsing_and_deltas():
    text = ('# TYPE vllm:spec_decode_num_drafts counter\n'
            'vllm:spec_decode_num_drafts_total{engine="0"} 10\n'
            'vllm:spec_decode_num_drafts_total{engine="1"} 5\n'
            'vllm:spec_decode_num_draft_tokens_total{engine="0"} 45\n'
            'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 20\n'
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="1"} 6\n'
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 14\n'
            'garbage line\n')
    c = ec.vllm_counters(ec.parse_metrics(text))
    assert (c.drafts, c.drafted, c.accepted, c.accepted_per_pos) == (15.0, 45.0, 20.0, (14.0, 6.0))
    d = ec.counters_delta(ec.SpecCounters(5.0, 20.0, 8.0, (6.0,)), c)
    assert (d.drafts, d.drafted, d.accepted, d.accepted_per_pos) == (10.0, 25.0, 12.0, (8.0, 6.0))
    g = ec.sglang_counters(ec.parse_metrics('sglang:spec_accept_rate{tp_rank="0"} 0.55\n'
                                            'sglang:spec_accept_length{tp_rank="0"} 2.2\n'))
    assert (g.accept_rate_gauge, g.accept_length_gauge) == (0.55, 2.2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("case", ["down", "wrong", "slow", "url"])
def test_bad_servers_are_one_line_exit_2(capsys, case):
    if case == "down":
        code, out, err = _bench(capsys, f"http://127.0.0.1:{_free_port()}")
        assert "down or unreachable" in err
    elif case == "url":
        code, out, err = _bench(capsys, "ftp://127.0.0.1:1")
        assert "expected http://HOST:PORT" in err
    else:
        with StandIn(protocol="vllm" if case == "wrong" else "llama", spec_tokens_per_s=20.0) as s:
            code, out, err = _bench(capsys, s.url, *(["--timeout", "0.5"] if case == "slow" else []))
        assert ("HTTP 404" if case == "wrong" else "did not answer within 0.5 s") in err
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and "Traceback" not in err
    assert lines[-1].startswith("error:") and sum(x.startswith("error:") for x in lines) == 1


def test_text_output_and_no_torch_import():
    """The human table in a fresh interpreter, which must not have imported torch (no probing here)."""
    import subprocess
    import sys
    code = ("import sys; sys.path.insert(0, '.')\n"
            "from tests.endpoint_standin import StandIn\n"
            "from planner.cli import main\n"
            "with StandIn() as s:\n"
            "    try:\n"
            f"        main({PAIR!r} + ['--endpoint', s.url, '--requests', '2', '--tokens', '16', '--k', '4'])\n"
            "    except SystemExit as e:\n"
            "        print('exit', e.code)\n"
            "print('torch loaded', 'torch' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "exit 0" in r.stdout and "torch loaded False" in r.stdout, r.stderr
    assert "decode tokens/s" in r.stdout and "measured" in r.stdout and "predicted" in r.stdout


def test_check_policy_profile_from_a_live_server(capsys, tmp_path):
    """planner.toml `profile = ...` written by bench --endpoint: check's acceptance is the measured one, named."""
    from planner.plan.check import check
    from planner.plan.policy import load_policy
    prof = tmp_path / "measured.json"
    with StandIn(alpha=0.6, k=4) as s:
        code, _, err = _bench(capsys, s.url, "--save-profile", str(prof))
    assert code == 0, err
    p = tmp_path / "planner.toml"
    p.write_text('[[deployment]]\nname = "chat"\ntarget = "qwen2.5-7b-instruct"\ndraft = "qwen2.5-0.5b-instruct"\n'
                 'machine = "rtx-4090"\nengine = "llama.cpp"\nk = 4\nprofile = "measured.json"\n'
                 '\n[deployment.require]\nmin_speedup = 0.1\n')
    a = check(load_policy(p)).assessments[0]
    assert a.speed.acceptance.alpha == pytest.approx(load_profile(prof).acceptance.alpha, abs=1e-9)
    assert "measured.json" in a.speed.acceptance.source and "bench --endpoint" in a.speed.acceptance.source
