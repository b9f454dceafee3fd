"""Ledger formulas, hand-computed per engine."""

from __future__ import annotations

import pytest

from planner import engines
from planner.core import dtypes, quant
from planner.core.errors import UsageError
from planner.core.spec import FULL, SLIDING, LayerSpec
from planner.fits.memory import (
    Settings,
    activations,
    kv_cache,
    kv_per_token,
    layer_tokens_held,
    ledger,
    model_ledger,
)
from planner.sources import load_spec


@pytest.fixture
def llama8b(make_model_dir):
    return load_spec(str(make_model_dir("Llama-3.1-8B")))


def test_llamacpp_pads_context_to_256(llama8b):
    s = Settings(resolved_engine=engines.get("llama.cpp"), context=1000)
    kv, _ = kv_cache(llama8b, s, 1000)
    assert kv == 131_072 * 1024  # f16 default, 1000 -> 1024 cells


def test_vllm_pages_of_16(llama8b):
    s = Settings(resolved_engine=engines.get("vllm"), context=1000, batch=3)
    kv, _ = kv_cache(llama8b, s, 1000)
    assert kv == 131_072 * 1008 * 3  # ceil(1000/16) = 63 blocks of 16 per sequence


def test_llamacpp_swa_sizing():
    layer = LayerSpec(attention=SLIDING, kv_heads=1, head_dim_k=256, head_dim_v=256, window=512)
    # min(pad(ctx*n_seq, 256), pad(window*n_seq + n_ubatch, 256)) = min(32768, pad(1024, 256))
    assert layer_tokens_held(layer, Settings(resolved_engine=engines.get("llama.cpp"), context=32768), 32768) == 1024
    assert layer_tokens_held(layer, Settings(resolved_engine=engines.get("llama.cpp"), context=300), 300) == 512
    # parallel 4 sequences: pad(512*4 + 512, 256) = 2560
    assert layer_tokens_held(layer, Settings(resolved_engine=engines.get("llama.cpp"), context=8192, batch=4), 8192) == 2560


def test_vllm_swa_slack():
    layer = LayerSpec(attention=SLIDING, kv_heads=1, head_dim_k=256, head_dim_v=256, window=512)
    # cdiv(min(512 - 1 + 2048, 32768), 16) + 1 = 160 + 1 blocks
    assert layer_tokens_held(layer, Settings(resolved_engine=engines.get("vllm"), context=32768), 32768) == 161 * 16
    full = LayerSpec(attention=FULL, kv_heads=1, head_dim_k=256, head_dim_v=256)
    assert layer_tokens_held(full, Settings(resolved_engine=engines.get("transformers"), context=777), 777) == 777


def test_kv_quantised_types_exact(llama8b):
    # q4_0: 18 B per 32; per layer K and V rows of 1024 elements
    assert kv_per_token(llama8b, Settings(kv_dtype="q4_0", resolved_engine=engines.get("llama.cpp"))) == 32 * 2 * (1024 // 32) * 18
    assert kv_per_token(llama8b, Settings(kv_dtype="fp8")) == 131_072 // 2
    with pytest.raises(UsageError):
        Settings(kv_dtype="q3_z")


def test_weights_override_int4_gptq_layout(llama8b):
    s = Settings(weights_dtype="int4", group_size=128)
    got = model_ledger(llama8b, s).weights_bytes
    # hand: every attention/MLP matrix [out, in]: in*out/2 + (in/128)*out*2 (fp16 scales) + (in/128)*out/2 (zeros)
    mats = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096), (14336, 4096), (4096, 14336)]
    per_layer = sum(o * i // 2 + (i // 128) * o * 2 + (i // 128) * o // 2 for o, i in mats)
    norms = 2 * 4096 * 2
    embed_head = 2 * 128256 * 4096 * 2  # kept fp16
    assert got == 32 * (per_layer + norms) + embed_head + 4096 * 2


def test_weights_override_nf4_and_ggml():
    from planner.core.spec import make_tensor
    t = make_tensor("model.layers.0.mlp.up_proj.weight", (256, 512), "BF16", "ffn")
    nf4 = quant.apply([t], quant.parse_scheme("nf4"))
    assert sum(x.nbytes for x in nf4) == 256 * 512 // 2 + (256 * 512 // 64) * 4 + 16 * 4
    q8 = quant.apply([t], quant.parse_scheme("q8_0"))
    assert sum(x.nbytes for x in q8) == 256 * 512 // 32 * 34
    assert dtypes.nbytes("Q4_K", 256 * 512) == 256 * 512 // 256 * 144


def test_draft_rows_and_overhead_once(llama8b, make_model_dir):
    draft = load_spec(str(make_model_dir("Llama-3.2-1B-Instruct")))
    one = ledger(llama8b, Settings(resolved_engine=engines.get("vllm")))
    two = ledger(llama8b, Settings(resolved_engine=engines.get("vllm")), draft)
    assert [m.role for m in two.models] == ["target", "draft"]
    assert two.overhead_bytes == one.overhead_bytes
    assert two.total_bytes - one.total_bytes == two.models[1].total_bytes
    assert two.models[1].weights_bytes == 2_471_628_800


def test_activations_llamacpp_logits_buffer(make_model_dir):
    spec = load_spec(str(make_model_dir("gemma-3-270m.partial")))
    act = activations(spec, Settings(resolved_engine=engines.get("llama.cpp")), 4096)
    logits = 512 * 262_144 * 4  # n_ubatch rows x vocab x f32: 512 MiB
    assert act > logits > spec.weights.resident_bytes * 0.9


def test_settings_validation():
    with pytest.raises(UsageError):
        Settings(context=0)
    with pytest.raises(UsageError):
        Settings(resolved_engine=engines.get("tensorflow"))
    assert Settings(resolved_engine=engines.get("llamacpp")).engine == "llama.cpp"
