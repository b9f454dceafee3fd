"""Published small-batch kernel curves (catalogs/kernels/verify_curves.json) and how they are read."""

from __future__ import annotations

import json

import pytest

from planner.core.errors import ConfigError
from planner.speed import kernels


def test_interpolates_between_published_points():
    # llama.cpp CUDA Q4_0 (RTX 3090, PR #15802): 4 -> 1.322, 5 -> 1.507 measured; 8 -> 2.173
    r = kernels.ratio("llama.cpp-cuda", "legacy", 5)
    assert (r.central, r.low, r.high, r.basis) == (1.507, 1.507, 1.507, "measured")
    assert kernels.ratio("llama.cpp-cuda", "legacy", 8).central == 2.173
    assert kernels.ratio("llama.cpp-cuda", "legacy", 1) == kernels.FLAT


def test_several_curves_give_the_interval_and_the_median():
    # IQ3_XXS measured on an RTX 3090 (2.177 at 8) and an RTX 4090 (1.621 at 8), PR #8215
    r = kernels.ratio("llama.cpp-cuda", "iquant", 8)
    assert (r.low, r.high) == (1.621, 2.177) and r.central == pytest.approx((1.621 + 2.177) / 2)
    # 6 tokens: 3090 interpolates 1.561 + (2.177 - 1.561) / 2, 4090 1.288 + (1.621 - 1.288) / 2
    r6 = kernels.ratio("llama.cpp-cuda", "iquant", 6)
    assert (r6.low, r6.high) == pytest.approx((1.288 + 0.333 / 2, 1.561 + 0.616 / 2))


def test_a_stand_in_runs_from_flat_to_the_borrowed_curve():
    # Q8_0 takes the same mul_mat_vec_q kernel as Q4_0 on CUDA: borrowed, interval from flat
    r = kernels.ratio("llama.cpp-cuda", "q8", 8)
    assert r.basis == "analog" and (r.low, r.central, r.high) == (1.0, 2.173, 2.173)


def test_past_the_published_points_is_a_labelled_guess():
    r = kernels.ratio("llama.cpp-cuda", "legacy", 12)  # MMQ past n = 8: no published whole-model point
    assert r.basis == "extrapolated" and (r.low, r.central, r.high) == (1.0, 2.173, 2.173)


def test_metal_k_quants_switch_kernels_at_four():
    """k-quants take plain mul_mv (weights streamed per token) at n = 2, 3 and mul_mv_ext at 4..8
    (ggml-metal-ops.cpp:2452-2551): verification of 4 tokens is cheaper than of 3."""
    three, four = kernels.ratio("llama.cpp-metal", "kquant", 3), kernels.ratio("llama.cpp-metal", "kquant", 4)
    assert three.central == 2.544 and four.central == 1.405


def test_float_on_metal_leaves_the_borrowed_curve_past_eight():
    assert kernels.ratio("llama.cpp-metal", "float", 8).basis == "analog"
    assert kernels.ratio("llama.cpp-metal", "float", 9) == kernels.FLAT  # mul_mm: a float GEMM, the roofline prices it


def test_families_from_dtypes_and_schemes():
    assert kernels.family("Q4_K") == "kquant" and kernels.family("Q5_0") == "legacy"
    assert kernels.family("BF16") == "float" and kernels.family("I32", "int4") == "int4"
    assert kernels.family("U8", "nf4") == "nf4" and kernels.family("XYZ") is None
    # MLX quantises int4 as its own affine format
    assert kernels.ratio("mlx-metal", "int4", 8).basis == "measured"


def test_unknown_backend_or_family_is_flat():
    assert kernels.ratio("llama.cpp-cuda", "nf4", 8) == kernels.FLAT
    assert kernels.ratio(None, "legacy", 8) == kernels.FLAT


def test_every_catalogued_curve_names_its_source():
    for c in kernels.curves_for("llama.cpp-cuda", "legacy") + kernels.curves_for("mlx-metal", "affine"):
        assert c.source and c.points[0][0] >= 1


def test_bad_catalog_is_one_clear_error(tmp_path, monkeypatch):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "verify_curves.json").write_text(json.dumps(
        {"curves": [{"backend": "x", "families": ["legacy"], "scope": "model", "points": {"1": 1.0, "2": 99},
                     "source": "s"}]}))
    monkeypatch.setenv("SPEC_PLANNER_CATALOG", str(tmp_path))
    kernels._catalog.cache_clear()
    try:
        with pytest.raises(ConfigError, match="ratios in"):
            kernels.ratio("x", "legacy", 2)
    finally:
        kernels._catalog.cache_clear()


def test_mlx_on_m1_m2_takes_the_per_row_qmv_curves_of_its_die_class():
    """MLX's fast small-batch qmv_wide runs on GPU family g15+ (quantized.cpp:537-540); M1/M2 keep the
    per-row qmv, measured on Ultras (M1 Ultra whole-model, M3 Ultra op-level, mlx#4265) and on a single-die
    chip under mlx 0.31.2 (M4 Pro: vllm-metal#503, mlx#3839). The machine's catalogued GPU class (gpu_family /
    gpu_tier, never its name) picks the kernels; the most specific class wins."""
    from planner.fits.machine_lookup import get_machine

    for name, backend in (("m1-ultra-64gb", "mlx-metal-pre-g15-ultra"), ("m2-ultra-192gb", "mlx-metal-pre-g15-ultra"),
                          ("m1-pro-32gb", "mlx-metal-pre-g15"), ("m2-8gb", "mlx-metal-pre-g15"),
                          ("m3-ultra-256gb", "mlx-metal"), ("m4-max-128gb", "mlx-metal")):
        assert kernels.backend_for_machine("mlx-metal", kernels.gpu_class(get_machine(name))) == backend, name
    # a name alone decides nothing: a machine called 'm1-ultra' with no class fields keeps the generic kernels
    assert kernels.backend_for_machine("mlx-metal", kernels.gpu_class(object())) == "mlx-metal"
    ultra = kernels.ratio("mlx-metal-pre-g15-ultra", "int4", 4)
    # whole-model curves 135.5 / 43.6 = 3.11 and 4 x 86.8 / 31.1 = 2.79 -> median 2.95; M3 Ultra op 3.26 on top
    assert ultra.basis == "measured"
    assert (ultra.low, ultra.central, ultra.high) == pytest.approx((2.79, (3.11 + 2.79) / 2, 3.26))
    single = kernels.ratio("mlx-metal-pre-g15", "int4", 3)
    # linear between the published points: 1 + (2.55 - 1) * 2 / 3 whole verify, 1 + (1.89 - 1) * 2 / 3 op-level
    assert single.central == pytest.approx(1 + 1.55 * 2 / 3)
    assert single.low == pytest.approx(1 + 0.89 * 2 / 3)
