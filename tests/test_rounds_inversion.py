"""alpha_for_expected's inlined bisection against the generic one it replaced (issue #33: same bits)."""

from __future__ import annotations

import pytest

from planner.speed import rounds


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 16])
def test_the_inlined_inversion_gives_the_generic_bisections_bits(k):
    targets = [1.0, k + 1.0, *(1.0 + k * i / 97 for i in range(1, 97)), k + 1.0 - 1e-9, 1.0 + 1e-12]
    for t in targets:
        got = rounds.alpha_for_expected.__wrapped__(t, k)
        assert got == rounds.bisect_increasing(lambda a: rounds._expected_float(a, k), t)
        assert rounds.expected_accepted(got, k) == pytest.approx(t, rel=1e-9, abs=1e-9)


def _break_even_every_k(verify_s, draft_s, overhead_s, k_top):
    """break_even_alpha as first written: invert E(K) at every feasible K, keep the smallest root."""
    best = (None, None)
    for k in range(1, k_top + 1):
        need = rounds.round_time_s(k, verify_s, draft_s, overhead_s) / verify_s[0]
        if need > k + 1:
            continue
        a = 0.0 if need <= 1.0 else rounds.alpha_for_expected(need, k)
        if best[0] is None or a < best[0]:
            best = (a, k)
    return best


@pytest.mark.parametrize("slope", [0.0, 0.02, 0.1, 0.4, 1.0])
@pytest.mark.parametrize("draft_share", [0.01, 0.05, 0.2, 0.6])
@pytest.mark.parametrize("overhead_share", [0.0, 0.1, 0.5])
def test_break_even_skips_only_ks_that_cannot_win(slope, draft_share, overhead_share):
    # t_v(n) = t1 (1 + slope (n - 1)): flat to serial verification; the skip (a lower bound on each K's root
    # above the best so far) must leave the answer exactly as inverting every K gives it
    t1 = 0.02
    verify = [t1 * (1.0 + slope * (n - 1)) for n in range(1, 18)]
    got = rounds.break_even_alpha(verify, draft_share * t1, overhead_share * t1, 16)
    assert got == _break_even_every_k(verify, draft_share * t1, overhead_share * t1, 16)


@pytest.mark.parametrize("k", [2, 3, 8])
def test_the_floor_is_below_the_root(k):
    for i in range(1, 60):
        need = 1.0 + k * i / 60
        assert rounds._floor_alpha(need, k) <= rounds.alpha_for_expected(need, k)
