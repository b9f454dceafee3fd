"""The physical small-batch verification model (speed/kernel_model.py), held against hand-worked values.

r(n) = 1 + ((n - 1) F + (passes(n) - 1) P) x bw / (ALU x issue x bpw), passes = ceil(n / r1ptg(n)),
r1ptg 2, 3, 4, 5, 3, 4, 4 at n = 2..8 (ggml-metal-ops.cpp ggml_metal_op_mul_mat).
"""

from __future__ import annotations

import json

import pytest

from planner import engines
from planner.core.errors import ConfigError
from planner.fits import memory
from planner.fits.memory import Settings
from planner.sources import load_spec
from planner.speed import kernel_model, kernels
from planner.speed.kernel_model import Chip, Fit, Weights
from planner.speed.roofline import Roof, forward_cost, kv_bytes_moved, logit_bytes, weight_bytes_read

# the catalogue's figures (catalogs/machines/*.json) x llama.cpp's Apple bandwidth share 0.85
M4_MAX = Chip("m4-max-128gb", 546e9 * 0.85, {"fp16": 16.15872e12}, gpu_class="apple-m4/max")  # M4: dual issue (x2)
M2_ULTRA = Chip("m2-ultra-192gb", 800e9 * 0.85, {"fp16": 27.199488e12}, gpu_class="apple-m2/ultra")  # M2: single issue
Q8_0, F16, Q4_0 = 34 / 32, 2.0, 18 / 32  # bytes per weight of one GGUF block
FIT = Fit(6.0, 12.0, "given")


def metal() -> kernel_model.Physical:
    return kernels._catalog(str(kernels.catalog_dir())).physical["llama.cpp-metal"]


def test_passes_follow_the_dispatch_switch():
    assert [metal().passes(n) for n in range(2, 9)] == [1, 1, 1, 1, 2, 2, 2]


def test_q8_and_f16_on_an_m4_max_by_hand():
    # M4 Max Q8_0, n = 5 (one pass): 4 x 6 FLOP x 464.1e9 / (16.15872e12 x 2 x 1.0625) = 24 x 0.0135164
    r = metal().ratio(5, "q8", M4_MAX, Weights(Q8_0, 14_000_000_000), FIT)
    assert r == pytest.approx(1 + 24 * 464.1e9 / (32.31744e12 * 1.0625)) and r == pytest.approx(1.3244, abs=1e-4)
    # M4 Max F16, n = 7 (two passes): (6 x 6 + 12) FLOP x 464.1e9 / (32.31744e12 x 2) = 48 x 0.0071804
    r = metal().ratio(7, "float", M4_MAX, Weights(F16, 14_000_000_000), FIT)
    assert r == pytest.approx(1.34466, abs=1e-4)
    # the nominal (single-issue) rate doubles the extra
    one = metal().ratio(7, "float", M4_MAX, Weights(F16, 14_000_000_000), FIT, single_issue=True)
    assert one - 1 == pytest.approx(2 * (r - 1))


def test_four_bit_on_an_m2_ultra_by_hand_and_held_past_the_switch():
    # M2 Ultra Q4_0, n = 8 (two passes): (7 x 6 + 12) x 680e9 / (27.199488e12 x 0.5625) = 54 x 0.0444453
    w = Weights(Q4_0, 70_000_000_000)
    r8 = metal().ratio(8, "legacy", M2_ULTRA, w, FIT)
    assert r8 == pytest.approx(1 + 54 * 680e9 / (27.199488e12 * 0.5625)) and r8 == pytest.approx(3.4000, abs=1e-3)
    # Physical.ratio itself holds the vector kernels' level past 8; kernels.ratio hands n > 8 to mul_mm
    assert metal().ratio(12, "legacy", M2_ULTRA, w, FIT) == r8


def test_the_same_work_per_weight_costs_twice_per_byte_at_four_bits():
    """The dot product runs per dequantised element: the extra scales with 1 / bytes per weight."""
    q8 = metal().ratio(4, "q8", M2_ULTRA, Weights(Q8_0, 7_000_000_000), FIT) - 1
    q4 = metal().ratio(4, "legacy", M2_ULTRA, Weights(Q4_0, 7_000_000_000), FIT) - 1
    assert q4 / q8 == pytest.approx(Q8_0 / Q4_0)


def test_k_quants_below_four_are_outside_the_model():
    # plain mul_mv at n = 2, 3 for k-quants (weights streamed per token): the published curve answers
    assert metal().ratio(3, "kquant", M4_MAX, Weights(0.6, 14_000_000_000), FIT) is None
    r = kernels.ratio("llama.cpp-metal", "kquant", 3, chip=M4_MAX, weights=Weights(0.6, 14_000_000_000))
    assert r.central == 2.544 and r.basis == "measured"


def test_least_squares_recovers_known_constants():
    rows = [(x1, x2, 5.0 * x1 + 3.0 * x2) for x1, x2 in ((0.1, 0.0), (0.2, 0.0), (0.3, 0.1), (0.4, 0.1))]
    fit = kernel_model._least_squares(rows, "synthetic")
    assert (fit.flop_per_weight, fit.pass_flop) == pytest.approx((5.0, 3.0))
    only = kernel_model._least_squares([(0.1, 0.0, 0.5), (0.2, 0.0, 1.0)], "no second pass")
    assert (only.flop_per_weight, only.pass_flop) == pytest.approx((5.0, 0.0))


def test_calibration_reproduces_the_curves_it_was_fitted_on():
    """Each catalogued Q8_0 curve (PR #10581) against the model on its own chip: within 0.2 at every n."""
    pooled, _ = kernels._fits(str(kernels.catalog_dir()), "llama.cpp-metal")
    for name, fam, points, _src in metal().calibration:
        chip = kernel_model.calibration_chip(name, engines.get("llama.cpp"), "apple", "fp16")
        for n, published in points:
            assert metal().ratio(n, fam, chip, Weights(Q8_0, 7_000_000_000), pooled) == pytest.approx(published, abs=0.2)


def test_a_published_curve_stands_only_for_its_own_chip_and_size_class():
    seven, seventy = Weights(Q8_0, 7_600_000_000), Weights(Q8_0, 72_000_000_000)
    same = kernels.ratio("llama.cpp-metal", "q8", 5, chip=M2_ULTRA, weights=seven)
    assert (same.central, same.basis) == (1.699, "measured")  # M2 Ultra Qwen2 7B Q8_0, as published
    other = kernels.ratio("llama.cpp-metal", "q8", 5, chip=M2_ULTRA, weights=seventy)
    assert other.basis == "model" and other.low <= other.central <= other.high
    m4 = kernels.ratio("llama.cpp-metal", "q8", 5, chip=M4_MAX, weights=seven)
    assert m4.basis == "model" and "x2 issue" in m4.sources[0]


def test_past_the_switch_the_weights_stream_once_and_the_matrix_kernel_prices_the_rest():
    # n = 9 runs mul_mm (kernel_model.Matrix): kernels.ratio says "read once", the roofline adds the tiles' FLOPs
    for fam, w in (("float", F16), ("kquant", 0.606)):
        r = kernels.ratio("llama.cpp-metal", fam, 9, chip=M4_MAX, weights=Weights(w, 14_000_000_000))
        assert (r.central, r.low, r.high, r.basis) == (1.0, 1.0, 1.0, "matrix")
        assert kernels.matrix_kernel("llama.cpp-metal", fam, 9) is metal().matrix
        assert kernels.matrix_kernel("llama.cpp-metal", fam, 8) is None


def test_the_roofline_scales_the_weight_read_by_the_model():
    spec = load_spec("qwen2.5-14b-instruct")
    roof = Roof(bandwidth_bytes_per_s=M4_MAX.bytes_per_s, peak_flops=M4_MAX.flops, name="m4-max-128gb", kind="apple",
                gpu_family="apple-m4", gpu_tier="max")
    s = Settings(context=4096, resolved_engine=engines.get("llama.cpp"), weights_dtype="q8_0")
    cost = forward_cost(spec, roof, n=4, context=4096, settings=s, overhead_s=0.0)
    bpw = memory.weights(spec, s)[0] / spec.params_total  # resident bytes per parameter
    assert bpw == pytest.approx(Q8_0, rel=0.05)
    r = kernels.ratio("llama.cpp-metal", "q8", 4, chip=M4_MAX, weights=Weights(bpw, spec.params_total))
    w, kv, lg = weight_bytes_read(spec, s, 4), kv_bytes_moved(spec, s, 4096, 4), logit_bytes(spec, 4)
    assert cost.kernel_basis == "model" and "mul_mv_ext" in cost.source
    assert cost.memory_s == pytest.approx((w * r.central + kv + lg) / M4_MAX.bytes_per_s)
    assert cost.seconds_high == pytest.approx((w * r.high + kv + lg) / M4_MAX.bytes_per_s)


def _physical(**change):
    return {"backend": "llama.cpp-metal", "engine": "llama.cpp", "kind": "apple", "alu_key": "fp16",
            "ranges": {"q8": [2, 8]}, "r1ptg": {}, "source": "s",
            "calibration": [{"machine": "m2-ultra-192gb", "family": "q8", "points": {"2": 1.1}, "source": "s"}],
            **change}


@pytest.mark.parametrize("change, message", [
    ({"ranges": {"q8": [1, 8]}}, "2 <= first <= last"),
    # the entry's engine is the one whose verify_backend runs it on that kind of machine (engines.running)
    ({"engine": "mlx"}, "names engine 'mlx', but llama.cpp runs llama.cpp-metal on apple machines"),
    ({"backend": "x"}, "Cannot find the engine of kernel backend 'x' on apple machines"),
])
def test_a_bad_physical_entry_is_one_clear_error(tmp_path, monkeypatch, change, message):
    (tmp_path / "kernels").mkdir()
    bad = _physical(**change)
    (tmp_path / "kernels" / "verify_curves.json").write_text(json.dumps({"curves": [], "physical": [bad]}))
    monkeypatch.setenv("SPEC_PLANNER_CATALOG", str(tmp_path))
    kernels._catalog.cache_clear()
    try:
        with pytest.raises(ConfigError, match=message):
            kernels.ratio(bad["backend"], "q8", 2, chip=M2_ULTRA, weights=Weights(Q8_0, 7_000_000_000))
    finally:
        kernels._catalog.cache_clear()


def test_the_catalogue_holds_its_calibration_engine_resolved():
    assert metal().engine is engines.get("llama.cpp")  # resolved once at load: calibration_chip looks nothing up
