"""Confidence-stopped drafting (speed/adaptive.py, llama.cpp --draft-p-min), held against hand-worked values.

With kappa (1 - alpha) = 1 the draft's confidence law Beta(kappa alpha, 1) has I(x; a, 1) = x^a, so every
term is a closed form: alpha 0.75, kappa 4 -> Beta(3, 1), density 3 p^2.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from planner.core.errors import UsageError
from planner.speed import model
from planner.speed.adaptive import Adaptive, mean_drafted, regularized_beta, round_profile, speedup, split
from planner.speed.adaptive_predict import predict_plan

from .cli_run import run_cli

POLICY = Adaptive(0.5, kappa=4.0, persistence=0.0)  # independent sureness: the closed forms below


def test_incomplete_beta_closed_forms():
    assert regularized_beta(0.75, 1.3, 1.0) == pytest.approx(0.75 ** 1.3, rel=1e-12)
    assert regularized_beta(0.75, 1.0, 0.2) == pytest.approx(1 - 0.25 ** 0.2, rel=1e-12)
    assert regularized_beta(0.2, 0.5, 0.5) == pytest.approx(2 / math.pi * math.asin(math.sqrt(0.2)), rel=1e-12)
    assert (regularized_beta(0.0, 2, 3), regularized_beta(1.0, 2, 3)) == (0.0, 1.0)


def test_the_split_by_hand():
    # q = 1 - 0.5^3 = 0.875; A_hi = 0.75 (1 - 0.5^4) / 0.875; A_lo = E[p | p < 0.5] = (3/4 0.5^4) / 0.5^3 = 0.375
    q, a_hi, a_lo = split(0.75, 0.5, 4.0)
    assert q == pytest.approx(0.875) and a_hi == pytest.approx(0.75 * 0.9375 / 0.875) and a_lo == pytest.approx(0.375)


def test_a_round_by_hand():
    # n_max 2: P(L=1) = 0.125 (the first token unsure, drafting stops), P(L=2) = 0.875
    probs, accepted = round_profile(0.75, 2, POLICY)
    a_hi = 0.75 * 0.9375 / 0.875
    assert probs == pytest.approx((0.125, 0.875)) and accepted == pytest.approx((0.375, a_hi + a_hi * 0.75))
    # tokens 0.125 x 1.375 + 0.875 x 2.40625; time 0.125 (0.1 + 1.2) + 0.875 (0.2 + 1.5)
    v = [1.0, 1.2, 1.5]
    tokens = 0.125 * 1.375 + 0.875 * (1 + a_hi * 1.75)
    assert speedup(2, v, 0.1, 0.75, 0.0, POLICY) == pytest.approx(tokens / 1.65) == pytest.approx(1.38021, abs=1e-5)
    # draft-min 2: the one-token drafts are dropped and that round decodes one token at t_v(1)
    dropped = 0.125 + 0.875 * (1 + a_hi * 1.75)
    assert speedup(2, v, 0.1, 0.75, 0.0, Adaptive(0.5, 2, kappa=4.0, persistence=0.0)) == pytest.approx(dropped / 1.625)
    assert mean_drafted(0.75, 2, POLICY) == pytest.approx(1.875)


def test_the_unconditional_acceptance_sum_matches():
    # sum_l P(l) E[accepted | l] = sum_i (q A_hi)^(i-1) alpha  (position i is reached and accepted)
    for alpha, p_min, n in ((0.82, 0.75, 16), (0.6, 0.3, 5), (0.93, 0.9, 8)):
        q, a_hi, _ = split(alpha, p_min, 1.5)
        probs, accepted = round_profile(alpha, n, Adaptive(p_min, kappa=1.5, persistence=0.0))
        direct = sum((q * a_hi) ** (i - 1) * alpha for i in range(1, n + 1))
        assert sum(p * a for p, a in zip(probs, accepted, strict=True)) == pytest.approx(direct, rel=1e-9)


def test_p_min_zero_is_the_fixed_k_model():
    v = [1.0, 1.05, 1.1, 1.2, 1.3, 1.5]
    for k in range(1, 6):
        assert speedup(k, v, 0.05, 0.8, 0.01, Adaptive(0.0)) == pytest.approx(model.speedup(k, v, 0.05, 0.8, 0.01))
    a = predict_plan(v, 0.05, 0.8, 0.01, adaptive=Adaptive(0.0, kappa=1.5))
    b = model.predict(v, 0.05, 0.8, 0.01)
    assert (a.k_best, a.speedup_by_k) == (b.k_best, pytest.approx(b.speedup_by_k))


def test_a_long_draft_past_an_expensive_verify_pays_less_when_it_stops_early():
    # verify flat to 8 tokens, then a matrix kernel at 2.5x: a fixed K = 12 pays 2.5 every round,
    # a confidence stop drafts past 8 only where the draft is sure
    v = [1.0] + [1.02] * 7 + [2.5] * 9
    fixed = model.speedup(12, v, 0.03, 0.8, 0.0)
    stopped = speedup(12, v, 0.03, 0.8, 0.0, Adaptive(0.75, kappa=1.5))
    assert stopped > fixed


def test_bad_policies_are_refused():
    for p in (-0.1, 1.0, float("nan")):
        with pytest.raises(UsageError, match="draft-p-min"):
            Adaptive(p)
    with pytest.raises(UsageError, match="draft-min"):
        Adaptive(0.5, -1)


def test_the_cli_models_and_launches_llama_servers_stop(capsys):
    rc, out, _ = run_cli(["recommend", "qwen2.5-14b-instruct", "--candidates", "qwen2.5-0.5b-instruct", "--machine",
                          "m4-max-128gb", "--engine", "llama.cpp", "--weights-dtype", "q4_k", "--kv-dtype", "f16",
                          "--draft-p-min", "0.75", "--draft-min", "2", "--k", "16", "--json"], capsys)
    plan = json.loads(out)["plans"][0]
    assert rc == 0 and plan["k"] == 16 and "draft-p-min 0.75" in plan["reasons"][-1]
    assert "--spec-draft-n-max 16 --spec-draft-n-min 2 --spec-draft-p-min 0.75" in plan["launch"]["command"]
    rc, _, err = run_cli(["recommend", "qwen2.5-14b-instruct", "--machine", "h100-sxm", "--engine", "vllm",
                          "--draft-p-min", "0.75"], capsys)
    assert rc == 2 and "only llama.cpp" in err and "Traceback" not in err


def test_k_alone_fixes_k_and_the_default_plan_takes_llama_servers_stop(capsys):
    base = ["recommend", "qwen2.5-14b-instruct", "--candidates", "qwen2.5-0.5b-instruct", "--machine", "m4-max-128gb",
            "--engine", "llama.cpp", "--kv-dtype", "f16", "--json"]
    _, out, _ = run_cli([*base, "--weights-dtype", "q4_k", "--k", "4"], capsys)
    fixed = json.loads(out)["plans"][0]
    assert fixed["k"] == 4 and "--spec-draft-p-min 0.0" in fixed["launch"]["command"]
    assert fixed["reasons"][-1].startswith("K=4: ")  # the fixed-K reason, not the confidence stop's
    assert fixed["drafting_stop"] is None
    # no --k: the plan takes llama-server's stop (p-min 0.75); every round drafting K is priced beside it and
    # named when it prices better (a 4-bit k-quant on Metal: the stop's short rounds run plain mul_mv)
    plans = {}
    for flag in ([], ["--draft-p-min", "0"], ["--draft-p-min", "0.75"]):
        _, out, _ = run_cli([*base, "--weights-dtype", "q4_k", *flag], capsys)
        plans[tuple(flag)] = json.loads(out)["plans"][0]
    stop, fixed_k = plans[("--draft-p-min", "0.75")], plans[("--draft-p-min", "0")]
    assert plans[()]["speedup"] == stop["speedup"] and plans[()]["launch"] == stop["launch"]
    assert plans[()]["drafting_stop"] == {"p_min": 0.75, "n_min": 0}
    assert fixed_k["speedup"] > 1.05 * stop["speedup"]
    assert any(r.startswith(f"every round drafting K={fixed_k['k']} (--draft-p-min 0) prices {fixed_k['speedup']:.2f}x")
               for r in plans[()]["reasons"])
    # an engine without a confidence stop takes --k as before
    rc, out, _ = run_cli(["recommend", "qwen2.5-7b-instruct", "--candidates", "qwen2.5-0.5b-instruct", "--machine",
                          "h100-sxm", "--engine", "vllm", "--k", "3", "--json"], capsys)
    assert rc == 0 and json.loads(out)["plans"][0]["k"] == 3


def test_draft_min_alone_takes_the_engines_stop(capsys):
    base = ["recommend", "qwen2.5-14b-instruct", "--candidates", "qwen2.5-0.5b-instruct", "--machine", "m4-max-128gb",
            "--engine", "llama.cpp", "--weights-dtype", "q8_0", "--kv-dtype", "f16", "--json"]
    _, out, _ = run_cli([*base, "--draft-min", "3"], capsys)
    _, ref, _ = run_cli([*base, "--draft-p-min", "0.75", "--draft-min", "3"], capsys)
    plan, want = json.loads(out)["plans"][0], json.loads(ref)["plans"][0]
    assert plan["drafting_stop"] == {"p_min": 0.75, "n_min": 3} and plan["speedup"] == want["speedup"]
    rc, _, err = run_cli(["recommend", "qwen2.5-7b-instruct", "--machine", "h100-sxm", "--engine", "vllm",
                          "--draft-min", "3"], capsys)
    assert rc == 2 and "--draft-min" in err and "Traceback" not in err


def test_persistent_sureness_by_hand():
    # q = 0.875 (above); rho 0.5: after a sure token the next is sure with s = 0.875 + 0.5 x 0.125 = 0.9375
    q, a_hi, a_lo = split(0.75, 0.5, 4.0)
    s = q + 0.5 * (1 - q)
    assert s == pytest.approx(0.9375)
    probs, accepted = round_profile(0.75, 3, Adaptive(0.5, kappa=4.0, persistence=0.5))
    assert probs == pytest.approx((0.125, 0.875 * 0.0625, 0.875 * 0.9375)) and sum(probs) == pytest.approx(1.0)
    last = s * a_hi + (1 - s) * a_lo  # the token at n_max is not checked against p_min: sure with s
    assert accepted == pytest.approx((a_lo, a_hi + a_hi * a_lo, a_hi + a_hi ** 2 + a_hi ** 2 * last))


def test_no_persistence_is_the_independent_law():
    for alpha, p_min, n in ((0.82, 0.75, 16), (0.6, 0.3, 5)):
        q, _, _ = split(alpha, p_min, 1.5)
        probs, _ = round_profile(alpha, n, Adaptive(p_min, kappa=1.5, persistence=0.0))
        assert probs == pytest.approx([q ** (i - 1) * (1 - q) for i in range(1, n)] + [q ** (n - 1)])


def test_persistence_lengthens_rounds():
    drafted = [mean_drafted(0.8, 16, Adaptive(0.75, kappa=1.5, persistence=r)) for r in (0.0, 0.3, 0.6, 0.9)]
    assert drafted == sorted(drafted) and drafted[-1] > 2 * drafted[0]


def test_catalogued_persistence_and_bad_values():
    from planner.speed.adaptive import persistence

    catalog = json.loads((Path(__file__).parents[1] / "catalogs" / "acceptance.json").read_text())
    assert persistence(Adaptive(0.75)) == catalog["confidence"]["persistence"] == 0.0  # not used yet: see its source
    for bad in (-0.1, 1.0):
        with pytest.raises(UsageError, match="persistence"):
            Adaptive(0.75, persistence=bad)
