"""llama.cpp Metal's routed experts (speed/moe_dispatch.py), by hand: mul_mv_id below 32 tokens, mul_mm_id from 32.

#31 item 8: Qwen3-30B-A3B on an M4 Max printed t_v(9) = 548 ms (98x t_v(1)) for bf16 and q4_k alike, a dip
t_v(3) > t_v(4), and "4.31 per extra token" next to t_v(4)/t_v(1) = 2.90. The curve over n = 1..33 is now
non-decreasing, continuous through the expert kernel's switch, and the printed slope is the curve's own.
"""

from __future__ import annotations

from itertools import pairwise

import pytest

from planner import engines
from planner.fits import memory
from planner.fits.machine_lookup import get_machine
from planner.fits.memory import Settings
from planner.sources import load_spec
from planner.speed import model as speed
from planner.speed import moe_dispatch, roofline

CONTEXT = 4096


def curve(dtype: str, n_max: int = 33) -> tuple[roofline.ForwardCost, ...]:
    s = Settings(resolved_engine=engines.get("llama.cpp"), weights_dtype=dtype, context=CONTEXT)
    return roofline.verify_costs(load_spec("qwen3-30b-a3b"), get_machine("m4-max-64gb"), context=CONTEXT,
                                 n_max=n_max, settings=s)


def test_the_expert_switch_is_the_engine_constant():
    d = moe_dispatch.dispatch("llama.cpp-metal")
    assert d is not None and d.matrix_from == 32 and "ne21_mm_id_min" in d.source
    assert moe_dispatch.dispatch("llama.cpp-cuda") is None  # CUDA's experts: the stock roofline


def test_expert_params_by_hand():
    # Qwen3-30B-A3B: 48 MoE layers, hidden 2048, expert width 768: 3 x 2048 x 768 x 48 = 226,492,416 per expert
    spec = load_spec("qwen3-30b-a3b")
    assert moe_dispatch.moe_layers(spec) == 48
    assert moe_dispatch.expert_params(spec) == 3 * 2048 * 768 * 48 == 226_492_416


def test_below_the_switch_every_token_expert_pair_streams_its_expert():
    # mul_mv_id: n x k matvecs, each expert read per pair -> bytes = n x k/E x all experts' bytes
    spec = load_spec("qwen3-30b-a3b")
    s = Settings(resolved_engine=engines.get("llama.cpp"), weights_dtype="q4_k", context=CONTEXT)
    experts = float(memory.bytes_by_group(spec, s)["experts"])
    d = moe_dispatch.dispatch("llama.cpp-metal")
    assert d is not None
    bw = 400e9
    for n in (1, 5, 31):
        ex = moe_dispatch.expert_cost(spec, d, experts, n, bw, None, 1e13, 40)
        assert ex.kernel == "per-pair"
        assert ex.bytes_streamed == pytest.approx(n * 8 / 128 * experts)
        assert ex.seconds == pytest.approx(n * 8 / 128 * experts / bw)
        # fast end: the touched experts once, E (1 - (1 - k/E)^n) of them
        assert ex.seconds_low == pytest.approx(experts * (1 - (1 - 8 / 128) ** n) / bw)


@pytest.mark.parametrize("dtype", ["bf16", "q4_k"])
def test_curve_is_monotone_and_has_no_cliff(dtype):
    c = curve(dtype)
    t = [x.seconds for x in c]
    assert all(b >= a for a, b in pairwise(t)), [round(x * 1e3, 2) for x in t]
    assert all(b.seconds_low >= a.seconds_low and b.seconds_high >= a.seconds_high for a, b in pairwise(c))
    # no 98x cliff at 9: the experts cost at most n x one token's experts (per pair), the dense part its kernels;
    # a forward of 9 tokens costs at most 9 forwards of one plus the dense part's matrix kernel past 8
    assert t[8] / t[0] < 9 + c[8].compute_s / t[0]
    # continuous through the expert switch at 32: the step 31 -> 32 is no larger than a few per-token steps
    assert t[31] - t[30] <= 3 * (t[30] - t[29]) + 1e-12


def test_printed_slope_is_the_curves_own():
    c = curve("q4_k", 17)
    v = tuple(x.seconds for x in c)
    reasons = speed.slower_reasons(v, 0.39 * v[0], 0.5, 0.0, 16)
    line = next(r for r in reasons if r.startswith("verification not batch-parallel"))
    k = int(line.split(" at K=")[1].split(";")[0])
    ratio = float(line.split(f"t_v({k + 1})/t_v(1) = ")[1].split()[0])
    slope = float(line.split("each extra verified token costs ")[1].split()[0])
    assert slope == pytest.approx((ratio - 1) / k, abs=0.011)  # both printed to 2 decimals
