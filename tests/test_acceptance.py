"""Acceptance conventions: hand values, round trips, the published K=1 / K=6 figures, histograms."""

from __future__ import annotations

import itertools
import random

import pytest

from planner.core.errors import UsageError
from planner.speed.acceptance import (
    Acceptance,
    acceptance,
    accepted_per_drafted,
    alpha_from_accepted_per_drafted,
    alpha_from_tau,
    from_histogram,
    per_position_from_histogram,
    to_alpha,
)
from planner.speed.model import expected_accepted

ALPHAS = [0.0, 0.05, 0.3, 0.5, 0.697, 0.73, 0.9, 0.99, 1.0]


def test_accepted_per_drafted_by_hand():
    # a (1 - a^K) / ((1 - a) K) at a = 0.7, K = 6
    assert accepted_per_drafted(0.7, 6) == pytest.approx(0.7 * (1 - 0.7**6) / (0.3 * 6), rel=1e-12)
    assert accepted_per_drafted(0.7, 6) == pytest.approx(0.343137, abs=1e-6)
    assert accepted_per_drafted(0.42, 1) == pytest.approx(0.42)  # K = 1: the rate is alpha
    assert accepted_per_drafted(1.0, 9) == 1.0


def test_accepted_per_drafted_falls_with_k_and_rises_with_alpha():
    for a in (0.3, 0.7, 0.9):
        rates = [accepted_per_drafted(a, k) for k in range(1, 17)]
        assert all(x > y for x, y in itertools.pairwise(rates))
    for k in (1, 4, 16):
        rates = [accepted_per_drafted(a, k) for a in ALPHAS]
        assert all(x <= y for x, y in itertools.pairwise(rates))


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("k", [1, 2, 5, 16])
def test_round_trips(alpha, k):
    assert alpha_from_accepted_per_drafted(accepted_per_drafted(alpha, k), k) == pytest.approx(alpha, abs=1e-9)
    assert alpha_from_tau(expected_accepted(alpha, k), k) == pytest.approx(alpha, abs=1e-9)
    assert to_alpha(alpha, "alpha") == alpha == to_alpha(alpha, "greedy_match")


def test_published_k1_and_k6_figures_fit_alpha_070_to_073():
    # "69.7% accepted at K=1 -> 37.8% at K=6" (arXiv 2607.17283): one alpha, two conventions' worth of K
    a1 = acceptance(0.697, "accepted_per_drafted", k=1).alpha
    a6 = acceptance(0.378, "accepted_per_drafted", k=6).alpha
    assert a1 == pytest.approx(0.697)
    assert 0.72 < a6 < 0.73
    assert min(a1, a6) >= 0.69 and max(a1, a6) <= 0.74
    # and the fall is what a constant alpha predicts: r(6) at alpha(K=1) is 0.34, not 0.697
    assert accepted_per_drafted(a1, 6) == pytest.approx(0.338, abs=0.002)


def test_tau_includes_bonus_token():
    # Spec-Bench Vicuna-7B + vicuna-68m: tau 2.28 at K=5 -> 1 + a + ... + a^5 = 2.28
    a = to_alpha(2.28, "tau", k=5)
    assert sum(a**j for j in range(6)) == pytest.approx(2.28, abs=1e-9)
    assert 0.57 < a < 0.59
    with pytest.raises(UsageError):
        to_alpha(0.9, "tau", k=5)  # tau < 1 is a rate without the bonus token, not tau
    with pytest.raises(UsageError):
        to_alpha(6.5, "tau", k=5)


def test_interval_converts_end_by_end_and_says_what_was_given():
    acc = acceptance(0.5, "accepted_per_drafted", k=4, low=0.4, high=0.6, source="bench")
    assert acc.low == pytest.approx(alpha_from_accepted_per_drafted(0.4, 4))
    assert acc.high == pytest.approx(alpha_from_accepted_per_drafted(0.6, 4))
    assert acc.low < acc.alpha < acc.high
    assert acc.given == "accepted_per_drafted = 0.5 at K=4 [0.4, 0.6]"
    assert acc.source == "bench"


@pytest.mark.parametrize(("value", "convention", "k"), [
    (72.1, "accepted_per_drafted", 5),   # a percentage, not a fraction
    (0.7, "accepted_per_drafted", None),  # K missing
    (0.7, "accepted_per_drafted", 0),
    (0.7, "acceptance", None),            # unknown convention
    (-0.1, "alpha", None),
])
def test_bad_conversions_raise(value, convention, k):
    with pytest.raises(UsageError):
        to_alpha(value, convention, k)


def test_acceptance_dataclass_validates_interval():
    with pytest.raises(UsageError):
        Acceptance(alpha=0.5, low=0.6, high=0.7, given="x", source="y")
    with pytest.raises(UsageError):
        acceptance(0.5, "alpha", low=0.6)


def test_histogram_mle_by_hand():
    # counts[j] = rounds with j of K=3 accepted: S = 1*20 + 2*30 + 3*40 = 200, F = 10 + 20 + 30 = 60
    acc = from_histogram([10, 20, 30, 40], source="bench run")
    assert acc.alpha == pytest.approx(200 / 260)
    assert acc.low < acc.alpha < acc.high
    assert "K=3" in acc.given and acc.source == "bench run"
    # a_i = N(>=i) / N(>=i-1): 90/100, 70/90, 40/70
    assert per_position_from_histogram([10, 20, 30, 40]) == pytest.approx((0.9, 70 / 90, 40 / 70))


def test_histogram_recovers_simulated_alpha():
    rng, alpha, k = random.Random(1234), 0.75, 4
    counts = [0] * (k + 1)
    for _ in range(20_000):
        j = 0
        while j < k and rng.random() < alpha:
            j += 1
        counts[j] += 1
    acc = from_histogram(counts)
    assert acc.alpha == pytest.approx(alpha, abs=0.01)
    assert acc.low <= alpha <= acc.high
    assert per_position_from_histogram(counts) == pytest.approx([alpha] * k, abs=0.02)


@pytest.mark.parametrize("counts", [[5], [0, 0, 0], [1, -1, 2]])
def test_bad_histograms(counts):
    with pytest.raises(UsageError):
        from_histogram(counts)
