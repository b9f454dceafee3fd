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
