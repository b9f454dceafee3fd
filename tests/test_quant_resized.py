"""quant.resized and memory.resized_rows: the sums a re-sized inventory gives, without building it (issue #33).

The fleet report prices each rung of an engine's weights ladder from these rows; they must be the bytes,
formats, layers and groups `quant.apply` gives tensor by tensor, on real bundled models (dense, MoE, tied,
vision) and for every one-to-one scheme (float and GGUF block types, k-quant fallbacks included).
"""

from __future__ import annotations

import pytest

from planner import engines
from planner.core import quant
from planner.fits import memory, split
from planner.fits.memory import Settings
from planner.sources import load_spec

MODELS = ("llama-3.1-8b", "gemma-3-270m", "qwen3-30b-a3b", "gemma-3-27b-it")
ONE_TO_ONE = ("bf16", "fp16", "fp32", "q8_0", "q6_k", "q5_k", "q4_k", "q4_0", "q3_k", "q2_k")


@pytest.mark.parametrize("ref", MODELS)
@pytest.mark.parametrize("name", ONE_TO_ONE)
def test_resized_is_apply_tensor_by_tensor(ref: str, name: str) -> None:
    spec = load_spec(ref)
    scheme = quant.parse_scheme(name)
    assert scheme.kind in quant.ONE_TO_ONE_KINDS
    built = quant.apply(spec.weights.tensors, scheme)
    assert len(built) == len(spec.weights.tensors)
    for t, b in zip(spec.weights.tensors, built, strict=True):
        assert b.name == t.name and b.group == t.group
        assert quant.resized(t, scheme) == (b.dtype, b.nbytes)


def test_k_quant_rows_fall_back_as_llama_quantize_does() -> None:
    # Gemma 3 270M: 640-wide rows (640 % 256 = 128), so Q4_K falls back to Q5_0 (22 B per 32 weights);
    # the 1024-wide o_proj rows fill 256-wide Q4_K blocks (144 B per 256)
    spec = load_spec("gemma-3-270m")
    by_name = {t.name: t for t in spec.weights.tensors}
    q = by_name["model.layers.0.self_attn.q_proj.weight"]
    o = by_name["model.layers.0.self_attn.o_proj.weight"]
    norm = by_name["model.layers.0.input_layernorm.weight"]
    q4k = quant.parse_scheme("q4_k")
    assert (q.shape, o.shape) == ((1024, 640), (640, 1024))
    assert quant.resized(q, q4k) == ("Q5_0", 1024 * 640 // 32 * 22)
    assert quant.resized(o, q4k) == ("Q4_K", 640 * 1024 // 256 * 144)
    assert quant.resized(norm, q4k) == ("F32", 640 * 4)  # 1-D tensors stay f32


def test_several_out_kinds_are_refused() -> None:
    spec = load_spec("llama-3.1-8b")
    with pytest.raises(ValueError, match="several"):
        quant.resized(spec.weights.tensors[0], quant.parse_scheme("int4"))


@pytest.mark.parametrize("ref", MODELS)
@pytest.mark.parametrize("name", ("q4_k", "q8_0", "int4", "fp8"))
def test_rows_sums_equal_the_built_inventory(ref: str, name: str) -> None:
    spec = load_spec(ref)
    s = Settings(context=4096, resolved_engine=engines.get("llama.cpp" if name.startswith("q") else "vllm"),
                 weights_dtype=name)
    rows = memory.resized_rows(spec, s)
    built = quant.apply(spec.weights.tensors, quant.parse_scheme(name))
    by_group: dict[str, int] = {}
    by_dtype: dict[str, int] = {}
    for t in built:
        by_group[t.group] = by_group.get(t.group, 0) + t.nbytes
        by_dtype[t.dtype] = by_dtype.get(t.dtype, 0) + t.nbytes
    assert sum(r[3] for r in rows) == sum(t.nbytes for t in built)
    assert memory.bytes_by_group(spec, s) == by_group
    total, dominant, _ = memory.weights(spec, s)
    assert total == sum(by_dtype.values()) and dominant == max(by_dtype, key=by_dtype.__getitem__)


@pytest.mark.parametrize("tp,pp", [(1, 1), (2, 1), (1, 4), (2, 2)])
def test_split_over_buckets_equals_split_over_tensors(tp: int, pp: int) -> None:
    # the reference, tensor by tensor: each built tensor to its layer's stage (vLLM: 80 layers / pp),
    # embedding on the first stage, norm + lm_head on the last; vLLM shards every group over the tp ranks
    # (ceil) but norms and "other", which every rank holds whole (engines/vllm.py tp_unsplit_groups)
    spec = load_spec("llama-3.3-70b-instruct")
    e = engines.get("vllm")
    assert e.tp_unsplit_groups == {"norm", "other"} and not e.tp_main_device_only
    s = Settings(context=4096, resolved_engine=e, weights_dtype="q4_k")
    per_device, host = split.weight_split(spec, s, tp, pp, on_host_ok=True)
    stages = split.stage_ranges(spec.n_layers, pp, e)
    stage_of = {i: st for st, (a, b) in enumerate(stages) for i in range(a, b)}
    sharded, whole = [0] * pp, [0] * pp
    for t in quant.apply(spec.weights.tensors, quant.parse_scheme("q4_k")):
        if t.layer is not None and t.layer < spec.n_layers:
            st = stage_of[t.layer]
        elif t.group in ("lm_head", "norm"):
            st = pp - 1
        else:
            st = 0
        (whole if t.group in ("norm", "other") else sharded)[st] += t.nbytes
    assert host == 0
    assert per_device == [-(-sharded[st] // tp) + whole[st] for st in range(pp) for _ in range(tp)]
