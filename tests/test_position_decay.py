"""MTP layers reused past their depth (speed/position_decay.py): per-position rates, tokens per round, the
inversion of a published run, and a best K that the decay makes interior. Every figure worked by hand."""

from __future__ import annotations

import math

import pytest

from planner.core.errors import UsageError
from planner.drafting import priors
from planner.speed import position_decay as pd
from planner.speed.model import Acceptance, predict

D = pd.PositionDecay(depth=1, factor=0.9, source="test")


def test_rates_keep_alpha_within_the_depth_and_fall_geometrically_past_it():
    # a_i = 0.8 for i <= 2; 0.8 * 0.9**(i-2) after: 0.8, 0.8, 0.72, 0.648
    two = pd.PositionDecay(depth=2, factor=0.9, source="test")
    assert pd.rates(0.8, two, 4) == pytest.approx((0.8, 0.8, 0.72, 0.648))


def test_tokens_per_round_under_the_decay_by_hand():
    # a = 0.8, 0.72, 0.648: E(3) = 1 + 0.8 + 0.8*0.72 + 0.8*0.72*0.648 = 1 + 0.8 + 0.576 + 0.373248
    assert pd.expected(0.8, D, 3) == pytest.approx(2.749248)
    assert pd.alpha_at(2.749248, 3, D) == pytest.approx(0.8, abs=1e-9)


def test_a_value_the_decay_cannot_reach_inverts_to_one_and_a_bad_one_is_refused():
    # alpha = 1: E(2) = 1 + 1 + 0.9 = 2.9 < K+1 = 3, so E = 2.95 asks for more than any alpha gives
    assert pd.alpha_at(2.95, 2, D) == 1.0
    with pytest.raises(UsageError):
        pd.alpha_at(0.5, 2, D)
    with pytest.raises(UsageError):
        pd.PositionDecay(depth=0, factor=0.9, source="test")


def test_the_catalogued_factor_reproduces_its_own_run_first_position():
    # club-3090 #105 (Qwen3.6-27B, one MTP layer, K = 6): mean acceptance length 4.74; the run's own
    # first-position rate is 0.917. Inverting 4.74 under the catalogued factor must land near it.
    d = pd.reused_layer(1)
    assert d.factor == pytest.approx(0.967)
    a = pd.alpha_at(4.74, 6, d)
    assert abs(a - 0.917) < 0.01
    # a constant alpha would put the same run at a lower first-position rate (the decay counted into alpha)
    m = next(m for m in priors.measurements() if m.id == "club3090-105-qwen3.6-27b-mtp-vllm")
    assert m.mtp_layers == 1 and m.acceptance().alpha == pytest.approx(a)
    constant = next(x for x in (i / 10000 for i in range(10000)) if sum(x ** j for j in range(7)) >= 4.74)
    assert constant < a - 0.02


def test_the_decay_makes_the_best_k_interior_where_one_alpha_climbs():
    # flat verify (t_v(n) = 1), t_d = 0.02, alpha 0.95: S(K) = E(K) / (1 + 0.02 K)
    verify, t_d = [1.0] * 13, 0.02

    def s(rates: list[float]) -> list[float]:
        out = []
        for k in range(1, 13):
            e, prod = 1.0, 1.0
            for a in rates[:k]:
                prod *= a
                e += prod
            out.append(e / (1 + t_d * k))
        return out
    flat = s([0.95] * 12)
    decayed = s([0.95 * 0.9 ** max(0, i - 1) for i in range(1, 13)])
    k_flat = flat.index(max(flat)) + 1
    k_dec = decayed.index(max(decayed)) + 1
    assert k_flat == 12 and 1 < k_dec < 12
    p = predict(verify, t_d, Acceptance(0.95, 0.9, 0.97, given="test", source="test", decay=D))
    assert p.k_best == k_dec and p.speedup == pytest.approx(max(decayed))
    assert predict(verify, t_d, 0.95).k_best == k_flat
    assert p.alpha_low == pytest.approx(0.9) and p.alpha_high == pytest.approx(0.97)
    assert math.isclose(p.tokens_per_round, decayed[k_dec - 1] * (1 + t_d * k_dec))
