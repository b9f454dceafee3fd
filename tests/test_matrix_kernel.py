"""The tiled matrix kernel past the small-batch range (kernel_model.Matrix, llama.cpp Metal mul_mm), by hand.

seconds = sum count x 2 x rows x depth x 32 x ceil(n/32) / (ALU x 0.70 x min(1, groups / (cores x 2.75))),
groups = ceil(rows / 64) x ceil(n / 32).
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import replace

import pytest

from planner import engines
from planner.core.constants import catalog_dir
from planner.core.errors import MachineError
from planner.fits import machine_catalog
from planner.fits.machine_lookup import get_machine
from planner.fits.memory import Settings
from planner.plan.request import Target, Where, Workload
from planner.sources import load_spec
from planner.speed import kernels
from planner.speed.kernel_model import Matmul, Matrix, shape_matmuls
from planner.speed.matmuls import forward_matmuls
from planner.speed.roofline import (
    Roof,
    format_factor,
    forward_cost,
    forward_flops,
    kernel_ratio,
    matmul_params,
)

MM = Matrix(tile_rows=64, tile_tokens=32, peak_share=0.70, saturation=2.75, calibration=(), source="given")


def metal_matrix() -> Matrix:
    m = kernels._catalog(str(kernels.catalog_dir())).physical["llama.cpp-metal"].matrix
    assert m is not None
    return m


def test_one_matrix_by_hand():
    # 128 rows -> 2 tiles on 4 cores: share 0.7 x 2 / 11; 2 x 128 x 1000 x 32 FLOP of one 32-token tile
    t = MM.seconds([Matmul(128, 1000, 1)], 9, 1e12, 4)
    assert t == pytest.approx(2 * 128 * 1000 * 32 / (1e12 * 0.7 * 2 / 11)) and t == pytest.approx(6.4366e-5, rel=1e-4)
    # 9 and 32 tokens cost the same (one padded tile); 33 tokens: two tiles, twice the FLOPs and twice the
    # threadgroups, so an unfilled GPU takes the same time again
    assert MM.seconds([Matmul(128, 1000, 1)], 32, 1e12, 4) == t
    assert MM.seconds([Matmul(128, 1000, 1)], 33, 1e12, 4) == pytest.approx(t)
    # 44 tiles fill 4 cores x 2.75: the full 0.7 share
    assert MM.seconds([Matmul(64 * 44, 1000, 1)], 9, 1e12, 4) == pytest.approx(2 * 2816 * 1000 * 32 / 0.7e12)


def test_the_catalogued_constants_are_the_least_squares_fit_of_the_published_times():
    m = metal_matrix()
    assert len(m.calibration) >= 10
    grid = ((e / 100, t / 4) for e in range(40, 101, 2) for t in range(2, 40))
    best = min(grid, key=lambda g: sum(math.log(Matrix(64, 32, g[0], g[1], (), "")._modelled(p) / p.seconds) ** 2
                                       for p in m.calibration))
    assert best == (m.peak_share, m.saturation) == (0.70, 2.75)
    lo, hi = m.residuals()
    assert 0.8 < lo <= 1.0 <= hi < 1.25  # every published time within -20%..+25% of the model


def test_a_chip_with_many_cores_needs_large_matrices():
    # the published pair that motivates the occupancy term: 3B on a 76-core M2 Ultra reaches 0.24 of its ALU
    # peak on mul_mm, 13B on a 16-core M1 Pro 0.72 (llama.cpp PRs #10238, #10491); the model reproduces both
    m = metal_matrix()
    llama3b, llama13b = shape_matmuls(3072, 3072, 1024, 8192, 28, 128256), shape_matmuls(5120, 5120, 5120, 13824, 40, 32000)
    flops = [sum(x.count * 2 * x.rows * x.depth * 32 for x in ms) for ms in (llama3b, llama13b)]
    share_m2u = flops[0] / m.seconds(llama3b, 2, 27.199488e12, 76) / 27.199488e12
    share_m1p = flops[1] / m.seconds(llama13b, 2, 5.2e12, 16) / 5.2e12
    assert share_m2u == pytest.approx(0.215, abs=0.01) and share_m1p == pytest.approx(0.70, abs=0.01)


def test_forward_matmuls_carry_the_forward_flops():
    spec = load_spec("qwen2.5-7b-instruct")
    ms = forward_matmuls(spec, 9)
    assert sum(2 * m.rows * m.depth * m.count for m in ms) == pytest.approx(2 * matmul_params(spec), rel=1e-6)
    assert any(m.rows == spec.vocab for m in ms)  # the lm_head: logits for every verified position


def test_the_roofline_switches_to_the_matrix_kernel_past_eight_tokens():
    spec = load_spec("qwen2.5-14b-instruct")
    m4 = get_machine("m4-max-128gb")
    roof = Roof(bandwidth_bytes_per_s=546e9 * 0.85, peak_flops={"fp16": 16.15872e12}, name=m4.name, kind="apple",
                gpu_cores=m4.gpu_cores, gpu_family=m4.gpu_family, gpu_tier=m4.gpu_tier)
    s = Settings(context=4096, resolved_engine=engines.get("llama.cpp"), weights_dtype="q4_k")
    c8, c9 = (forward_cost(spec, roof, n=n, context=4096, settings=s, overhead_s=0.0) for n in (8, 9))
    assert (c8.kernel_basis, c9.kernel_basis) == ("model", "matrix")
    tiles = metal_matrix().seconds(forward_matmuls(spec, 9), 9, 16.15872e12, 40)
    attention = forward_flops(spec, 4096, 9) - 2 * 9 * matmul_params(spec)
    assert c9.compute_s == pytest.approx(tiles + attention / 16.15872e12)
    assert c9.seconds > 2 * c8.seconds  # a 4-bit 14B: mul_mm at 9 tokens costs over twice mul_mv_ext at 8
    # without a core count (a non-Apple machine, an old file) the plain FLOP roof stands
    plain = forward_cost(spec, Roof(546e9 * 0.85, {"fp16": 16.15872e12}, name=m4.name, kind="apple",
                                         gpu_family=m4.gpu_family, gpu_tier=m4.gpu_tier), n=9,
                         context=4096, settings=s, overhead_s=0.0)
    assert plain.compute_s == pytest.approx(forward_flops(spec, 4096, 9) / 16.15872e12)


def test_apple_machines_catalogue_their_gpu_cores():
    assert [get_machine(n).gpu_cores for n in ("m1-pro-32gb", "m2-ultra-192gb", "m4-max-128gb", "m4-pro-48gb")] == \
        [16, 76, 40, 20]
    assert get_machine("h100-sxm").gpu_cores is None


def test_a_bad_gpu_core_count_is_refused():
    _refused_and_sourced("m4-max-128gb", "gpu_cores", (0, -3, 2.5, True, 10**6))


def _refused_and_sourced(machine: str, key: str, bad_values: tuple) -> None:
    """A catalogued machine's `key`: every bad value refused, and the field refused without its source."""
    entry = json.loads((catalog_dir() / "machines" / f"{machine}.json").read_text())
    for bad in bad_values:
        with pytest.raises(MachineError, match=key):
            machine_catalog.validate_entry({**entry, key: bad}, "test")
    missing = {**entry, "sources": {k: v for k, v in entry["sources"].items() if k != key}}
    with pytest.raises(MachineError, match=rf"sources\.{key}"):
        machine_catalog.validate_entry(missing, "test")


def test_mlx_streams_at_the_one_die_share_and_the_ultra_share_on_two_dies():
    # mlx-engine PR #83 / LM Studio blog (M3 Pro: 0.83-0.90 of 150 GB/s) vs ml-explore/mlx #1861 (M2 Ultra: 0.73)
    from planner.fits.fit import default_layout
    from planner.plan.roof import roofline_machine, share_kinds

    pro, ultra = get_machine("m3-pro-36gb"), get_machine("m2-ultra-192gb")
    most_specific = [share_kinds(m)[0] for m in (pro, ultra, get_machine("h100-sxm"), get_machine("rtx-4090"))]
    assert tuple(most_specific) == ("apple", "apple-ultra", "gpu-hbm", "gpu")
    for m, share in ((pro, 0.85), (ultra, 0.73)):
        roof = roofline_machine(m, default_layout(1, engines.get("mlx")), engines.get("mlx"))
        assert roof.bandwidth_bytes_per_s == pytest.approx(m.bandwidth_bytes_per_s * share)


def _two_point_fits(models: tuple[str, str], kind: str, streamed, runs) -> list[tuple[float, float]]:
    """(share of peak, fixed seconds per forward) per run (t_small, t_large in tok/s, peak B/s) of a small and a
    large model's Q4_K_M decode: t = x / (share x peak) + fixed, x what `streamed` reads off a forward priced at
    1 B/s with no overhead (the bytes this roofline reads, or its seconds with a format factor in them)."""
    bare = Roof(bandwidth_bytes_per_s=1.0, peak_flops={"bf16": 1e15}, kind=kind)
    small, large = (streamed(forward_cost(load_spec(m), bare, n=1, context=512, overhead_s=0.0,
                                          settings=Settings(context=512, resolved_engine=engines.get("llama.cpp"), weights_dtype="q4_k")))
                    for m in models)
    fits = []
    for t_small, t_large, peak in runs:
        bw = (large - small) / (1 / t_large - 1 / t_small)
        fits.append((bw / peak, 1 / t_small - small / bw))
    return fits


def test_llamacpp_on_hbm_streams_at_its_own_share_and_pays_a_fixed_cost_per_forward():
    # XiongjieDai May 2024 tg512 of 8B and 70B Q4_K_M: t = bytes / (share x peak) + fixed, fitted by hand on the
    # bytes this roofline reads for the two models (a forward at peak bandwidth and no overhead)
    from planner.fits.fit import default_layout
    from planner.plan.roof import roofline_machine

    fits = _two_point_fits(("meta-llama-3-8b", "llama-3.1-70b-instruct"), "gpu", lambda c: c.bytes_moved,
                           ((145.55, 25.03, 2.0e12), (135.04, 24.61, 2.039e12), (140.62, 22.31, 1.935e12)))
    shares, fixed = sorted(f[0] for f in fits), sorted(f[1] for f in fits)
    a100 = get_machine("a100-80gb")
    roof = roofline_machine(a100, default_layout(1, engines.get("llama.cpp")), engines.get("llama.cpp"))
    assert roof.bandwidth_bytes_per_s == pytest.approx(a100.bandwidth_bytes_per_s * shares[1], rel=0.01)
    c = forward_cost(load_spec("llama-3.1-8b-instruct"), roof, n=1, context=512,
                     settings=Settings(context=512, resolved_engine=engines.get("llama.cpp")))
    assert c.overhead_s == pytest.approx(fixed[1], rel=0.01)
    # vLLM's share does not change on HBM (its Marlin figure is an A100's); a GDDR card keeps the GPU share
    assert roofline_machine(a100, default_layout(1, engines.get("vllm")), engines.get("vllm")).bandwidth_bytes_per_s == \
        pytest.approx(a100.bandwidth_bytes_per_s * 0.75)
    assert roofline_machine(get_machine("rtx-4090"), default_layout(1, engines.get("llama.cpp")), engines.get("llama.cpp")).share_kind == "gpu"


def test_llamacpp_on_an_ultra_streams_at_its_own_share_and_pays_a_fixed_cost_per_forward():
    # geerlingguy's llama.cpp (build 7825) decodes of Llama-3.2-3B and Llama-3.1-70B Q4_K_M on an M1 Ultra
    # (127.6 / 9.84 t/s, 800 GB/s) and an M3 Ultra (154.6 / 14.1, 819 GB/s): t = streamed / (share x peak) + fixed,
    # fitted by hand on what this roofline streams for each (k-quant factor included: a forward at 1 B/s)
    from planner.fits.fit import default_layout
    from planner.plan.roof import roofline_machine

    fits = _two_point_fits(("llama-3.2-3b-instruct", "llama-3.1-70b-instruct"), "apple", lambda c: c.memory_s,
                           ((127.6, 9.84, 800e9), (154.6, 14.1, 819e9)))
    share, fixed = statistics.mean(f[0] for f in fits), statistics.mean(f[1] for f in fits)
    m3u = get_machine("m3-ultra-256gb")
    roof = roofline_machine(m3u, default_layout(1, engines.get("llama.cpp")), engines.get("llama.cpp"))
    assert roof.share_kind == "apple-ultra"
    assert roof.bandwidth_bytes_per_s == pytest.approx(m3u.bandwidth_bytes_per_s * share, rel=0.01)
    c = forward_cost(load_spec("llama-3.1-8b-instruct"), roof, n=1, context=512,
                     settings=Settings(context=512, resolved_engine=engines.get("llama.cpp"), weights_dtype="q4_k"))
    assert c.overhead_s == pytest.approx(fixed, rel=0.01)
    # the single-die chips keep the Apple share and no fixed cost; the Metal kernel model sees an Ultra at the
    # Apple share it was calibrated at, so the Ultra's t_v(n)/t_v(1) does not flatten with its lower stream
    pro = roofline_machine(get_machine("m4-max-128gb"), default_layout(1, engines.get("llama.cpp")), engines.get("llama.cpp"))
    assert pro.share_kind == "apple" and pro.bandwidth_bytes_per_s == pytest.approx(546e9 * 0.85)
    spec, s = load_spec("qwen2.5-7b-instruct"), Settings(context=512, resolved_engine=engines.get("llama.cpp"), weights_dtype="q8_0")
    at_apple_share = replace(roof, bandwidth_bytes_per_s=m3u.bandwidth_bytes_per_s * 0.85, share_kind="apple")
    assert kernel_ratio(spec, s, "apple", 4, chip_class="apple-m3/ultra", machine=roof).central == pytest.approx(
        kernel_ratio(spec, s, "apple", 4, chip_class="apple-m3/ultra", machine=at_apple_share).central)


def test_llamacpp_on_amd_streams_at_its_own_share_fitted_on_published_rocm_decodes():
    # llama.cpp issue #20934 (RX 7900 XTX, ROCm, March 2026): Llama-2-7B Q4_0 tg128 ~129-144 t/s (136.5 taken);
    # PR #26284: Llama-3-8B Q4_K_M 105.75 t/s. share = streamed bytes / (peak x (1/t - overhead)), by hand
    from planner.fits.fit import default_layout
    from planner.plan.roof import roofline_machine, share_kinds

    def streamed(model: str, dtype: str) -> tuple[float, float]:
        bare = Roof(bandwidth_bytes_per_s=1.0, peak_flops={"bf16": 1e30, "fp16": 1e30}, kind="gpu")
        c = forward_cost(load_spec(model), bare, n=1, context=128,
                         settings=Settings(context=128, resolved_engine=engines.get("llama.cpp"), weights_dtype=dtype))
        return c.memory_s, c.overhead_s

    xtx = get_machine("rx-7900-xtx")
    assert share_kinds(xtx)[0] == "gpu-amd" and share_kinds(get_machine("mi300x"))[0] == "gpu-hbm"
    e0, o0 = streamed("llama-2-7b", "q4_0")
    share = e0 / (xtx.bandwidth_bytes_per_s * (1 / 136.5 - o0))
    e1, o1 = streamed("meta-llama-3-8b", "q4_k")  # streamed at the GDDR k-quant factor 0.777: take it out
    factor = e1 * 0.777 / (xtx.bandwidth_bytes_per_s * (1 / 105.75 - o1)) / share
    roof = roofline_machine(xtx, default_layout(1, engines.get("llama.cpp")), engines.get("llama.cpp"))
    assert roof.share_kind == "gpu-amd"
    assert roof.bandwidth_bytes_per_s == pytest.approx(xtx.bandwidth_bytes_per_s * share, rel=0.01)
    assert format_factor(load_spec("meta-llama-3-8b"), Settings(context=128, resolved_engine=engines.get("llama.cpp"), weights_dtype="q4_k"),
                         roof)[0] == pytest.approx(factor, rel=0.01)
    # engines that catalogue no AMD share keep their GPU one
    assert roofline_machine(xtx, default_layout(1, engines.get("vllm")), engines.get("vllm")).share_kind == "gpu"


def test_memory_type_is_one_of_the_known_kinds_and_sourced():
    assert get_machine("h100-sxm").memory_type == "hbm" and get_machine("rtx-4090").memory_type is None
    _refused_and_sourced("h100-sxm", "memory_type", ("HBM", "sram", 3))


def test_an_moe_target_on_the_roofline_says_its_baseline_is_low_confidence():
    from planner.engines import get as engine
    from planner.plan.recommend import recommend

    dense = recommend(Target(load_spec("qwen3-4b"), "qwen3-4b", candidates=[]),
                      Where(get_machine("rtx-4090"), engines.get("llama.cpp")),
                      Workload(context=4096))
    moe = recommend(Target(load_spec("qwen3-30b-a3b"), "qwen3-30b-a3b", candidates=[]),
                    Where(get_machine("rtx-4090"), engines.get("llama.cpp")),
                    Workload(context=4096))
    caveat = engine("llama.cpp").moe_baseline_caveat
    assert caveat in moe.notes and caveat not in dense.notes and "Qwen3-30B-A3B 0.54-0.58" in caveat
    # the serving engines carry their own published figures (SGLang inherits vLLM's)
    assert engine("sglang").moe_baseline_caveat == engine("vllm").moe_baseline_caveat != caveat


def test_a_tensor_parallel_group_streams_at_its_own_share_where_the_engine_catalogues_one():
    # SGLang TP 8, Llama-3.x-70B bf16 batch 1: 88.61 tok/s on 8 x H100, TPOT 18.63 ms on 8 x A100; less the
    # modelled all-reduces (2 x 80 x 10.1 us) each rank streams its shard at this share of peak
    from planner.fits.fit import default_layout
    from planner.plan.roof import roofline_machine, share_key

    spec = load_spec("llama-3.1-70b-instruct")
    shares = []
    for name, tpot in (("8x-h100-sxm", 1 / 88.61), ("8x-a100-80gb", 18.63e-3)):
        m = get_machine(name)
        bare = Roof(bandwidth_bytes_per_s=m.bandwidth_bytes_per_s * 8, peak_flops={"bf16": 1e18}, kind="gpu", tp=8,
                    link_bytes_per_s=m.interconnect[0], link_latency_s=m.interconnect[1])
        c = forward_cost(spec, bare, n=1, context=2048, overhead_s=0.0,
                         settings=Settings(context=2048, resolved_engine=engines.get("sglang"), weights_dtype="bf16"))
        shares.append(c.memory_s / (tpot - c.comm_s))
    h100 = get_machine("8x-h100-sxm")
    assert share_key(engines.get("sglang"), h100, 8) == "gpu-tp" and share_key(engines.get("sglang"), h100, 1) == "gpu"
    roof = roofline_machine(h100, default_layout(8, engines.get("sglang")), engines.get("sglang"))
    assert roof.bandwidth_bytes_per_s == pytest.approx(h100.bandwidth_bytes_per_s * 8 * sum(shares) / 2, rel=0.01)
    # llama.cpp catalogues no tensor-parallel share: on HBM GPUs it keeps its HBM one (and its fixed cost)
    a100 = get_machine("8x-a100-80gb")
    assert share_key(engines.get("llama.cpp"), a100, 8) == "gpu-hbm" and share_key(engines.get("llama.cpp"), get_machine("2x-rtx-4090"), 2) == "gpu"


def test_gpu_class_fields_are_known_kinds_and_sourced():
    m2u = get_machine("m2-ultra-192gb")
    assert (m2u.gpu_family, m2u.gpu_tier, m2u.dies) == ("apple-m2", "ultra", 2)
    assert (get_machine("m3-pro-36gb").dies, get_machine("rtx-4090").gpu_family) == (1, None)
    _refused_and_sourced("m2-ultra-192gb", "gpu_family", ("Apple M2", "", 2))
    _refused_and_sourced("m2-ultra-192gb", "gpu_tier", ("Ultra", "mega", 1))
    _refused_and_sourced("m2-ultra-192gb", "dies", (0, 9, "2", True))


def test_a_machine_class_comes_from_its_fields_never_its_name():
    from planner.plan.roof import share_kinds

    ultra = get_machine("m2-ultra-192gb")
    # an Ultra by its dies, whatever it is called; a one-die chip called 'ultra' is not one
    assert share_kinds(replace(ultra, name="studio", display_name="my mac"))[0] == "apple-ultra"
    assert share_kinds(replace(get_machine("m3-max-128gb"), name="m3-ultra-x", display_name="Ultra"))[0] == "apple"
    # the MLX per-row kernels of M1/M2 follow gpu_family: a detected machine (named 'detected') keeps them
    assert kernels.gpu_class(replace(ultra, name="detected")) == "apple-m2/ultra"
