"""Every reference config sizes to its published numbers (shared/reference/models.json, copied to fixtures)."""

from __future__ import annotations

import json

import pytest

from planner import engines
from planner.core.spec import FULL, MLA, NONE, SLIDING
from planner.fits.memory import Settings, kv_cache, kv_per_token, ledger
from planner.sources import load_spec

from .conftest import FIXTURES

REFERENCE = json.loads((FIXTURES / "reference_models.json").read_text())
FIXTURE_NAME = {m["model"]: m["config"].split("/")[-1].replace(".config.json", "") for m in REFERENCE}


def _ref(name: str) -> dict:
    return next(m for m in REFERENCE if m["model"] == name)


@pytest.mark.parametrize("entry", [m for m in REFERENCE if m.get("resident_weights_bytes_bf16")],
                         ids=lambda m: m["model"])
def test_weights_from_config_within_0_1_percent(entry, make_model_dir):
    spec = load_spec(str(make_model_dir(FIXTURE_NAME[entry["model"]])))
    got = ledger(spec, Settings(weights_dtype="bf16")).models[0].weights_bytes
    want = entry["resident_weights_bytes_bf16"]
    assert abs(got - want) / want < 1e-3, (got, want)
    assert spec.provenance["weights"].startswith("config shapes")


def _all_full(spec) -> bool:
    return all(layer.attention == FULL for layer in spec.layers)


@pytest.mark.parametrize("entry", REFERENCE, ids=lambda m: m["model"])
def test_kv_bytes_per_token_matches_reference(entry, make_model_dir):
    spec = load_spec(str(make_model_dir(FIXTURE_NAME[entry["model"]])))
    want = entry["kv_bytes_per_token_bf16_full_attention_layers"]
    engine = "vllm" if any(layer.attention == MLA for layer in spec.layers) else "transformers"
    got = kv_per_token(spec, Settings(resolved_engine=engines.get(engine), kv_dtype="bf16"))
    if _all_full(spec) or any(k in entry["notes"] for k in ("sliding", "MLA", "linear", "Mamba", "hybrid")):
        if "sliding_window=4096 on all layers" in entry["notes"]:
            # Mistral v0.1: every layer slides, so no layer grows once the window is full ...
            assert got == 0
            # ... except in llama.cpp, which runs Mistral as full attention.
            assert kv_per_token(spec, Settings(resolved_engine=engines.get("llama.cpp"), kv_dtype="bf16")) == want
        else:
            assert got == want


def test_llama31_8b_golden_values(make_model_dir):
    spec = load_spec(str(make_model_dir("Llama-3.1-8B")))
    assert spec.weights.resident_bytes == 16_060_522_496
    assert spec.params_total == 8_030_261_248
    # 2 (K,V) x 32 layers x 8 kv heads x 128 head_dim x 2 B
    assert kv_per_token(spec, Settings()) == 2 * 32 * 8 * 128 * 2 == 131_072
    # q8_0: each 1024-wide K or V row is 32 blocks of 34 B -> 2 x 32 x 32 x 34
    assert kv_per_token(spec, Settings(kv_dtype="q8_0", resolved_engine=engines.get("llama.cpp"))) == 2 * 32 * (1024 // 32) * 34 == 69_632


def test_deepseek_v3_latent_vs_expanded(make_model_dir):
    spec = load_spec(str(make_model_dir("DeepSeek-V3")))
    for engine in ("vllm", "sglang", "llama.cpp"):
        # latent: (kv_lora_rank 512 + rope 64) x 61 layers x 2 B
        assert kv_per_token(spec, Settings(resolved_engine=engines.get(engine), kv_dtype="bf16")) == 576 * 61 * 2 == 70_272
    # transformers expands: 128 heads x (192 + 128) x 61 x 2 B
    assert kv_per_token(spec, Settings(resolved_engine=engines.get("transformers"))) == 128 * 320 * 61 * 2 == 4_997_120


def test_deepseek_v3_fp8_checkpoint_from_config(make_model_dir):
    spec = load_spec(str(make_model_dir("DeepSeek-V3")))
    # FP8 e4m3 weights with 128x128 fp32 block scales: far below 2 B/param, above 1 B/param.
    assert spec.params_total == 671_026_419_200  # published 671B (MTP layer excluded)
    ratio = spec.weights.resident_bytes / spec.params_total
    assert 1.0 < ratio < 1.01
    assert "F8_E4M3" in spec.weights.bytes_by_dtype


def test_gpt_oss_sliding_layers_capped_and_mxfp4(make_model_dir):
    spec = load_spec(str(make_model_dir("gpt-oss-20b")))
    kinds = [layer.attention for layer in spec.layers]
    assert kinds.count(SLIDING) == 12 and kinds.count(FULL) == 12
    s_short, s_long = Settings(context=64), Settings(context=100_000)
    per_layer = 8 * 64 * 2 * 2  # kv heads x head_dim x (K,V) x bf16
    # below the 128-token window every layer grows; beyond it only the 12 full layers do
    assert kv_cache(spec, s_short, 64)[0] == 24 * per_layer * 64
    assert kv_cache(spec, s_long, 100_000)[0] == 12 * per_layer * 100_000 + 12 * per_layer * 128
    # MXFP4 experts (17 B per 32 weights), bf16 elsewhere: the published 13,761,264,768-byte checkpoint
    assert spec.weights.resident_bytes == 13_761_264_768
    assert spec.params_total == 20_914_757_184


@pytest.mark.parametrize("name,window,n_sliding,n_full", [
    ("gemma-2-9b-it", 4096, 21, 21), ("gemma-2-2b-it", 4096, 13, 13),
    ("gemma-3-1b-it", 512, 22, 4), ("gemma-3-270m.partial", 512, 15, 3)])
def test_gemma_sliding_pattern(name, window, n_sliding, n_full, make_model_dir):
    spec = load_spec(str(make_model_dir(name)))
    kinds = [layer.attention for layer in spec.layers]
    assert (kinds.count(SLIDING), kinds.count(FULL)) == (n_sliding, n_full)
    assert {layer.window for layer in spec.layers if layer.attention == SLIDING} == {window}
    per_token = {layer.kv_heads * (layer.head_dim_k + layer.head_dim_v) * 2 for layer in spec.layers}.pop()
    ctx = 32_768
    got, _ = kv_cache(spec, Settings(context=ctx), ctx)
    assert got == per_token * (n_full * ctx + n_sliding * window)


@pytest.mark.parametrize("name", ["Qwen3.5-35B-A3B", "Qwen3-Next-80B-A3B-Thinking",
                                  "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "Falcon-H1-0.5B"])
def test_hybrid_state_does_not_grow(name, make_model_dir):
    spec = load_spec(str(make_model_dir(name)))
    s = Settings(resolved_engine=engines.get("vllm"))
    kv1, state1 = kv_cache(spec, s, 4096)
    kv2, state2 = kv_cache(spec, s, 8192)
    assert state1 == state2 > 0
    # only attention layers grow: exactly kv_per_token per extra token (16-token pages, multiples of 16)
    assert kv2 - kv1 == kv_per_token(spec, s) * 4096


def test_nemotron_state_hand_computed(make_model_dir):
    spec = load_spec(str(make_model_dir("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")))
    mamba = [layer for layer in spec.layers if layer.recurrent]
    assert len(mamba) == 23 and sum(layer.attention != NONE for layer in spec.layers) == 6
    # conv: (64 heads x 64 + 2 x 8 groups x 128) x (kernel 4 - 1) in bf16; SSM: 64 x 64 x 128 in float32
    per_layer = (4096 + 2048) * 3 * 2 + 64 * 64 * 128 * 4
    _, state = kv_cache(spec, Settings(resolved_engine=engines.get("vllm")), 1024)
    assert state == 23 * per_layer
    # llama.cpp keeps both in f32
    _, state_cpp = kv_cache(spec, Settings(resolved_engine=engines.get("llama.cpp")), 1024)
    assert state_cpp == 23 * ((4096 + 2048) * 3 * 4 + 64 * 64 * 128 * 4)


def test_moe_keeps_all_experts_resident(make_model_dir):
    spec = load_spec(str(make_model_dir("Qwen3-30B-A3B")))
    assert spec.weights.resident_bytes == _ref("Qwen3-30B-A3B")["resident_weights_bytes_bf16"]
    # active: 48 layers x 120 of 128 experts x 3 x 2048 x 768 not read per token
    inactive = 48 * (128 - 8) * 3 * 2048 * 768
    assert spec.params_active == spec.params_total - inactive
    assert 3.2e9 < spec.params_active < 3.4e9  # published "A3B": 3.3B active


def test_multimodal_text_config_and_vision(make_model_dir):
    spec = load_spec(str(make_model_dir("Qwen3.5-35B-A3B")))
    assert spec.model_type == "qwen3_5_moe_text"
    assert spec.weights.bytes_by_group.get("vision", 0) > 0
    assert sum(layer.attention == FULL for layer in spec.layers) == 10


def test_qwen35_tower_and_text_are_the_published_parameter_count(make_model_dir):
    # 35,107,181,936: keras-hub's qwen3_5_moe_35b_a3b preset metadata (keras-team/keras-hub @ 71453d08, named in
    # ../shared/reference/models.json), text tower + vision, no MTP layer (before Qwen3.5's own tower rule:
    # -28,319,360 and low, the SigLIP-shaped guess). The vision part is Qwen3-VL's tower
    # without deepstack (27 blocks x 1152, fc 4304, 2304 positions, patch 16 x 16 x 2, merger into 2048):
    h, inter, merge_in = 1152, 4304, 1152 * 4
    block = 4 * h + 3 * h * h + 3 * h + h * h + h + 2 * h * inter + inter + h
    tower = h * 3 * 2 * 16 * 16 + h + 2304 * h + 27 * block + 2 * h + merge_in * merge_in + merge_in \
        + 2048 * merge_in + 2048
    spec = load_spec(str(make_model_dir("Qwen3.5-35B-A3B")))
    assert sum(t.numel for t in spec.weights.tensors if t.group == "vision") == tower == 446_571_248
    assert spec.params_total == 35_107_181_936
    assert spec.confidence == "high"


def test_v5_dtype_key_and_rope_parameters(make_model_dir):
    import json as _json

    cfg = _json.loads((FIXTURES / "configs" / "Llama-3.2-1B-Instruct.json").read_text())
    cfg["dtype"] = cfg.pop("torch_dtype")
    cfg["rope_parameters"] = cfg.pop("rope_scaling")
    d = make_model_dir("Llama-3.2-1B-Instruct")
    (d / "config.json").write_text(_json.dumps(cfg))
    spec = load_spec(str(d))
    assert spec.dtype == "BF16" and spec.provenance["dtype"].startswith("config")
    assert spec.weights.resident_bytes == 2_471_628_800


def test_unknown_model_type_falls_back_with_warning(make_model_dir):
    d = make_model_dir("Llama-3.1-8B", model_type="my_new_llama")
    spec = load_spec(str(d))
    assert spec.architecture == "generic"
    assert any("not a supported architecture" in w for w in spec.warnings)
    assert spec.weights.resident_bytes == 16_060_522_496
