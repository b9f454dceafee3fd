"""Roofline forward costs, hand-computed from public config shapes."""

from __future__ import annotations

import itertools
import statistics
from dataclasses import replace

import pytest

from planner import engines
from planner.core.errors import MachineError, UsageError
from planner.fits.memory import Settings
from planner.sources import load_spec
from planner.speed.model import predict
from planner.speed.roofline import (
    Roof,
    allreduce_s,
    draft_step_s,
    engine_overhead_s,
    expected_experts_touched,
    forward_cost,
    forward_flops,
    kv_bytes_moved,
    peak_flops_for,
    spec_round_overhead_s,
    verify_curve,
    weight_bytes_read,
)

# kind "bare": a machine kind no engine has kernel curves for, so these tests see the roofline alone
GPU_1TB = Roof(bandwidth_bytes_per_s=1e12, peak_flops={"bf16": 1e15, "fp8": 2e15}, name="1 TB/s GPU", kind="bare")

# Llama-3.1-8B (reference README): 16,060,522,496 B resident bf16, 131,072 KV B/token,
# embedding 128256 x 4096 x 2 B = 1,050,673,152 B (untied: a gather of n rows), 32 layers x 32 q heads x 128.
LLAMA8B_RESIDENT = 16_060_522_496
LLAMA8B_EMBED = 128_256 * 4_096 * 2
LLAMA8B_KV_TOKEN = 131_072
# one sampled position: 128256 logits, bf16 from the lm_head (2 B), cast to fp32 (4 B), read by the sampler (4 B)
LOGITS_ROW = 128_256 * (2 + 4 + 4)


@pytest.fixture(scope="module")
def llama8b():
    return load_spec("llama-3.1-8b")


def test_llama8b_bf16_on_1tbs_gpu_by_hand(llama8b):
    c = forward_cost(llama8b, GPU_1TB, n=1, context=1024, overhead_s=0.0)
    weights = LLAMA8B_RESIDENT - LLAMA8B_EMBED + 4_096 * 2  # one gathered embedding row
    kv = 1024 * LLAMA8B_KV_TOKEN + 1 * LLAMA8B_KV_TOKEN  # read the prefix, write one row
    assert c.weight_bytes == weights
    assert c.kv_bytes == kv
    # logits: one row of 128256, bf16 written + fp32 written + fp32 read by the sampler
    logits = LOGITS_ROW
    assert c.logit_bytes == logits
    assert c.seconds == pytest.approx((weights + kv + logits) / 1e12, rel=1e-12)
    assert c.bound == "memory" and c.source.startswith("roofline")
    # the rough figure, 16.06e9 B / 1e12 B/s: within the untied embedding table (6.5%)
    assert c.seconds == pytest.approx(16.06e9 / 1e12, rel=0.07)
    # FLOPs: 2 x (params - embedding params) + 32 layers x 4 n C heads head_dim
    params = 8_030_261_248 - 128_256 * 4_096
    assert c.flops == 2 * params + 32 * 4 * 1 * 1024 * 32 * 128
    assert c.compute_s == pytest.approx(c.flops / 1e15)


def test_engine_overhead_defaults_are_added(llama8b):
    bare = forward_cost(llama8b, GPU_1TB, n=1, context=1024, overhead_s=0.0).seconds
    hf = forward_cost(llama8b, GPU_1TB, n=1, context=1024, settings=Settings(context=1024, resolved_engine=engines.get("transformers")))
    # eager PyTorch: (1/25.5 - 1/107) s over 32 layers, per layer, times Llama-8B's 32 layers
    assert hf.overhead_s == pytest.approx(1 / 25.5 - 1 / 107)
    assert hf.seconds == pytest.approx(bare + hf.overhead_s)
    assert "GPT, Fast" in hf.source
    # vLLM: the median of three batch-1 TPOTs above their weight streams (0.68, 1.13, 1.9 ms)
    assert engine_overhead_s(engines.get("vllm"), 32)[0] == pytest.approx(statistics.median([0.68e-3, 1.13e-3, 1.9e-3]), rel=0.03)
    # a vLLM draft step in the proposer loop: #20780 round 4.05 ms x 3.08 less verify 7.07 ms x 1.127
    # (cuda-serving float curve at n = 5), machinery 0.775 ms and 4 head reads of 0.32 ms, per step
    per_step = (4.05e-3 * 3.08 - 7.07e-3 * 1.127 - 0.775e-3) / 4 - 0.32e-3
    assert engine_overhead_s(engines.get("vllm"), 32, draft=True)[0] == pytest.approx(per_step, rel=0.05)
    # SGLang's overlap scheduler: no per-step cost; its CUDA-graphed draft loop: (14.24 - 12.94) ms / 3 - 0.32
    assert engine_overhead_s(engines.get("sglang"), 32)[0] == 0.0
    assert engine_overhead_s(engines.get("sglang"), 32, draft=True)[0] == pytest.approx(
        (5.39 / 378.57 - 4.68 / 361.70) / 3 - 0.32e-3, rel=0.05)
    # llama.cpp on HBM GPUs: a fixed cost per forward (two-point fits, tests/test_matrix_kernel.py) replaces the
    # per-layer launches; nothing else has one
    assert engine_overhead_s(engines.get("llama.cpp"), 32, share_kind="gpu-hbm")[0] == pytest.approx(2.81e-3)
    assert engine_overhead_s(engines.get("vllm"), 32, share_kind="gpu-hbm") == engine_overhead_s(engines.get("vllm"), 32)
    with pytest.raises(UsageError):
        engine_overhead_s(engines.get("tgi"), 32)


def test_kv_read_and_write_by_hand(llama8b):
    s = Settings(context=4096)
    assert kv_bytes_moved(llama8b, s, 4096, 3) == 4096 * LLAMA8B_KV_TOKEN + 3 * LLAMA8B_KV_TOKEN
    # llama.cpp pads the cache to 256 cells and stores f16: 1000 -> 1024 cells read
    assert kv_bytes_moved(llama8b, Settings(context=1000, resolved_engine=engines.get("llama.cpp")), 1000, 1) == \
        1024 * LLAMA8B_KV_TOKEN + LLAMA8B_KV_TOKEN


def test_sliding_window_layers_read_only_their_window():
    gemma = load_spec("gemma-3-270m")  # 18 layers: 15 sliding (window 512), 3 full; 1 KV head x 256, bf16
    row = 1 * (256 + 256) * 2
    read = (15 * 512 + 3 * 4096) * row
    assert kv_bytes_moved(gemma, Settings(context=4096), 4096, 1) == read + 18 * row
    # attention FLOPs: 2 n C_eff q_heads (dk + dv), q_heads = 4
    params = gemma.params_active  # tied embeddings: the lm_head matmul reads the whole table
    assert forward_flops(gemma, 4096, 2) == 2 * params * 2 + 2 * 2 * (15 * 512 + 3 * 4096) * 4 * 512


def test_moe_reads_only_touched_experts():
    assert expected_experts_touched(128, 8, 1) == pytest.approx(8)
    assert expected_experts_touched(128, 8, 2) == pytest.approx(128 * (1 - (120 / 128) ** 2))  # 15.5
    assert expected_experts_touched(128, 8, 10_000) == pytest.approx(128)
    q = load_spec("qwen3-30b-a3b")
    experts, embed, resident = 57_982_058_496, 622_329_856, 61_064_245_248
    s = Settings(context=1024)
    one = resident - embed + 2048 * 2 - round(experts * (1 - 8 / 128))
    assert weight_bytes_read(q, s, 1) == one
    eight = resident - embed + 8 * 2048 * 2 - round(experts * (1 - 128 * (1 - (120 / 128) ** 8) / 128))
    assert weight_bytes_read(q, s, 8) == eight
    curve = verify_curve(q, GPU_1TB, context=1024, n_max=16, overhead_s=0.0)
    assert all(a < b for a, b in itertools.pairwise(curve))  # more tokens touch more experts
    assert curve[7] / curve[0] > 3  # MoE verification is far from flat


def test_dense_verification_is_nearly_flat_until_compute_bound(llama8b):
    curve = verify_curve(llama8b, GPU_1TB, context=1024, n_max=9, overhead_s=0.0)
    assert curve[8] / curve[0] < 1.01  # memory-bound: 9 tokens read the same weights
    slow = Roof(1e12, {"bf16": 2e13}, kind="bare")
    big = forward_cost(llama8b, slow, n=512, context=1024, overhead_s=0.0)
    assert big.bound == "compute" and big.seconds == pytest.approx(big.flops / 2e13)


def test_quantised_override_and_fp8_peak(llama8b):
    q4 = weight_bytes_read(llama8b, Settings(context=1024, weights_dtype="q4_0"), 1)
    # q4_0 (18 B per 32 weights) on attention 32 x (2 x 4096^2 + 2 x 4096 x 1024) and FFN 32 x 3 x 4096 x 14336;
    # llama-quantize also quantises lm_head and the embedding (one gathered q4_0 row is read); norms stay F32
    attention = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024) * 18 // 32
    ffn = 32 * 3 * 4096 * 14336 * 18 // 32
    norms, lm_head, row = (32 * 2 + 1) * 4096 * 4, 128_256 * 4096 * 18 // 32, 4096 * 18 // 32
    assert q4 == attention + ffn + norms + lm_head + row
    ds = load_spec("deepseek-v3")  # fp8 checkpoint
    assert peak_flops_for(ds, Settings(context=1024), GPU_1TB) == (2e15, "fp8")
    assert peak_flops_for(llama8b, Settings(context=1024), GPU_1TB) == (1e15, "bf16")


def test_bad_inputs(llama8b):
    with pytest.raises(UsageError):
        forward_cost(llama8b, GPU_1TB, n=0, context=10)
    with pytest.raises(MachineError, match="no peak FLOP/s"):
        forward_cost(llama8b, Roof(1e12, {"int8": 1e15}), n=1, context=10)
    with pytest.raises(MachineError, match="bandwidth"):
        forward_cost(llama8b, Roof(0, {"bf16": 1e15}), n=1, context=10)


def test_roofline_feeds_predict(llama8b):
    draft = load_spec("llama-3.2-1b-instruct")
    s = Settings(context=4096, resolved_engine=engines.get("vllm"))
    verify = verify_curve(llama8b, GPU_1TB, context=4096, n_max=9, settings=s)
    t_d = draft_step_s(draft, GPU_1TB, context=4096, settings=s)
    assert t_d / verify[0] == pytest.approx(
        (weight_bytes_read(draft, s, 1) / 1e12 + kv_bytes_moved(draft, s, 4096, 1) / 1e12 + LOGITS_ROW / 1e12
         + engine_overhead_s(engines.get("vllm"), 16, draft=True)[0])
        / verify[0])
    p = predict(verify, t_d, 0.8)
    assert p.verdict == "faster" and 1 <= p.k_best <= 8
    # a 2.5 GB draft plus vLLM's 0.61 ms per draft step costs ~0.2 target steps
    assert 0.12 < p.draft_ratio < 0.3


def test_quantised_small_batch_kernels_scale_the_weight_read(llama8b):
    """llama.cpp CUDA Q4_0: mul_mat_vec_q redoes the dequantising dot product per token up to n = 8
    (published t_v(8)/t_v(1) = 2.173, RTX 3090, PR #15802): the weight-read time is scaled by it."""
    gpu = Roof(bandwidth_bytes_per_s=1e12, peak_flops={"bf16": 1e15}, name="gpu", kind="gpu")
    s = Settings(context=1024, resolved_engine=engines.get("llama.cpp"), weights_dtype="q4_0")
    one = forward_cost(llama8b, gpu, n=1, context=1024, settings=s, overhead_s=0.0)
    eight = forward_cost(llama8b, gpu, n=8, context=1024, settings=s, overhead_s=0.0)
    w8, kv8 = weight_bytes_read(llama8b, s, 8), kv_bytes_moved(llama8b, s, 1024, 8)
    assert eight.memory_s == pytest.approx((w8 * 2.173 + kv8 + 8 * LOGITS_ROW) / 1e12)
    assert one.memory_s == pytest.approx((weight_bytes_read(llama8b, s, 1) + kv_bytes_moved(llama8b, s, 1024, 1)
                                          + LOGITS_ROW) / 1e12)
    # 5 tokens interpolate between the measured 4 (1.322) and 6 (1.757) points: 1.507 is itself measured
    five = forward_cost(llama8b, gpu, n=5, context=1024, settings=s, overhead_s=0.0)
    w5, kv5 = weight_bytes_read(llama8b, s, 5), kv_bytes_moved(llama8b, s, 1024, 5)
    assert five.memory_s == pytest.approx((w5 * 1.507 + kv5 + 5 * LOGITS_ROW) / 1e12) and five.kernel_basis == "measured"
    # past the MMVQ switch (n >= 9, MMQ) the source names a matrix kernel: the last level is held
    nine = forward_cost(llama8b, gpu, n=9, context=1024, settings=s, overhead_s=0.0)
    w9, kv9 = weight_bytes_read(llama8b, s, 9), kv_bytes_moved(llama8b, s, 1024, 9)
    assert nine.memory_s == pytest.approx((w9 * 2.173 + kv9 + 9 * LOGITS_ROW) / 1e12)


def test_float_weights_on_a_backend_without_curves_stay_flat(llama8b):
    gpu = Roof(bandwidth_bytes_per_s=1e12, peak_flops={"bf16": 1e15}, name="gpu", kind="gpu")
    s = Settings(context=1024, resolved_engine=engines.get("llama.cpp"), weights_dtype="int4")  # GPTQ int4: no llama.cpp kernel curve
    c = forward_cost(llama8b, gpu, n=8, context=1024, settings=s, overhead_s=0.0)
    assert c.kernel_basis == "none" and c.seconds_low == c.seconds == c.seconds_high


@pytest.mark.parametrize("batch", [4, 256])
def test_a_batch_reads_the_weights_once_and_every_sequences_cache(llama8b, batch):
    """B sequences of n tokens: weights once (n x B rows of an untied embedding gathered), B caches, B x FLOPs."""
    s = Settings(context=512, resolved_engine=engines.get("vllm"), kv_dtype="fp8", batch=batch)
    c = forward_cost(llama8b, GPU_1TB, n=3, context=512, settings=s, overhead_s=0.0)
    w = weight_bytes_read(llama8b, s, 3 * batch)
    kv = batch * kv_bytes_moved(llama8b, s, 512, 3)
    flops = batch * forward_flops(llama8b, 512, 3)
    assert (c.weight_bytes, c.kv_bytes, c.flops) == (w, kv, flops)
    # fp8 KV: 32 layers x 8 heads x 128 x (K + V) x 1 B = 65,536 B per token; 515 tokens held per sequence
    assert kv == batch * (65_536 * 512 + 65_536 * 3)
    # every one of the 3 x B verified rows is sampled: 3 B vocabulary-wide logit rows
    assert c.logit_bytes == 3 * batch * LOGITS_ROW
    assert c.seconds == pytest.approx(max((w + kv + 3 * batch * LOGITS_ROW) / 1e12, flops / 1e15))


def test_at_large_batch_verification_turns_compute_bound(llama8b):
    """At 1024 sequences one verify forward of 4 tokens each is 4096 token rows: past the ridge point."""
    s = Settings(context=512, resolved_engine=engines.get("vllm"), kv_dtype="fp8", batch=1024)
    one = forward_cost(llama8b, GPU_1TB, n=1, context=512, settings=s, overhead_s=0.0)
    four = forward_cost(llama8b, GPU_1TB, n=4, context=512, settings=s, overhead_s=0.0)
    assert one.bound == "memory" and four.bound == "compute"
    assert four.seconds == pytest.approx(1024 * forward_flops(llama8b, 512, 4) / 1e15)
    assert four.seconds > one.seconds


# --- serving terms: rows past the kernel curve, speculation overhead, tensor-parallel all-reduce --------

H100_VLLM = Roof(bandwidth_bytes_per_s=3.35e12 * 0.75, peak_flops={"bf16": 989.5e12 * 0.75}, name="h100-sxm",
                 kind="gpu")


def test_rows_past_the_published_curve_add_their_matmul_time(llama8b):
    """vLLM bf16 on CUDA: the whole-model curve (vLLM PR #23197) is published to 16 token rows and held past
    it. A batch of 32 sequences x 5 tokens is 160 rows: the 144 rows past 16 add their FLOPs, not overlapped."""
    s = Settings(context=512, resolved_engine=engines.get("vllm"), kv_dtype="fp8", batch=32)
    c = forward_cost(llama8b, H100_VLLM, n=5, context=512, settings=s, overhead_s=0.0)
    comp = 32 * forward_flops(llama8b, 512, 5) / (989.5e12 * 0.75)
    mem = (weight_bytes_read(llama8b, s, 160) * 1.424 + 32 * kv_bytes_moved(llama8b, s, 512, 5)
           + 160 * LOGITS_ROW) / (3.35e12 * 0.75)
    assert c.compute_s == pytest.approx(comp) and c.memory_s == pytest.approx(mem)
    assert c.seconds == pytest.approx(mem + comp * (160 - 16) / 160)
    assert c.seconds_low == pytest.approx(max(mem, comp))  # the overlapped roofline is the optimistic end
    # one sequence stays on the curve: nothing added
    one = forward_cost(llama8b, H100_VLLM, n=5, context=512, settings=replace(s, batch=1), overhead_s=0.0)
    assert one.seconds == pytest.approx(max(one.memory_s, one.compute_s))


def test_speculation_overhead_grows_with_the_batch():
    """vLLM issue #49548: 0.775 ms + 84 us per sequence per round (K = 0 speculation vs none)."""
    for batch in (1, 256):
        central, optimistic, source = spec_round_overhead_s(engines.get("vllm"), batch)
        assert central == pytest.approx(0.775e-3 + batch * 84e-6)
        assert optimistic == pytest.approx(0.775e-3) and "#49548" in source
    assert spec_round_overhead_s(engines.get("llama.cpp"), 64)[:2] == (0.0, 0.0)  # not modelled there: none added


def test_tensor_parallel_all_reduce_by_hand():
    """Llama-3.3-70B at TP 8: 80 layers x 2 all-reduces of n x B x 8192 x 2 B, ring over 8 ranks."""
    spec = load_spec("llama-3.3-70b-instruct")
    roof = Roof(bandwidth_bytes_per_s=8 * 3.35e12, peak_flops={"bf16": 8 * 989.5e12}, name="8x", kind="bare",
                tp=8, link_bytes_per_s=450e9, link_latency_s=10.1e-6)
    for tokens in (1, 5 * 256):
        want = 2 * 80 * (10.1e-6 + 2 * 7 / 8 * tokens * 8192 * 2 / 450e9)
        assert allreduce_s(spec, roof, tokens) == pytest.approx(want)
    c = forward_cost(spec, roof, n=1, context=512, overhead_s=0.0)
    assert c.comm_s == pytest.approx(2 * 80 * (10.1e-6 + 2 * 7 / 8 * 8192 * 2 / 450e9))
    assert c.seconds == pytest.approx(max(c.memory_s, c.compute_s) + c.comm_s)
    assert allreduce_s(spec, replace(roof, tp=1), 64) == 0.0  # one rank: nothing to reduce
