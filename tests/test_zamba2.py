"""Zyphra Zamba2 (issue #30): a Mamba2 backbone with shared transformer blocks at its "hybrid" layers.

Weights against a hand count and against transformers' own Zamba2ForCausalLM built on the meta device; KV and
recurrent state by hand. The configs are shaped as Zamba2Config's docstring and defaults describe the family
(no published Zamba2 config.json or index is in the project: the meta-device model is the independent truth,
and the tool's output for them is `high`, not `exact`).

KV per token: only the hybrid layers attend (each use of a shared block keeps its own cache), K and V of
num_key_value_heads x attention_head_dim (= 2 x hidden / heads: the attention reads [hidden, embeddings]).
State per sequence and layer (every layer has a Mamba2 mixer): conv (inner + 2 groups x d_state) x (kernel - 1)
plus heads x head_dim x d_state, vLLM's mamba2_state_shape (tests/test_hybrids30.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner import engines
from planner.core.errors import ConfigError
from planner.fits.memory import Settings, kv_cache, kv_per_token
from planner.sources import load_spec

VLLM = Settings(context=8192, resolved_engine=engines.get("vllm"))

# a small Zamba2: 4 layers, hybrid at 1 and 3, two shared blocks (one hybrid layer each), attention adapters on
TINY = {"model_type": "zamba2", "architectures": ["Zamba2ForCausalLM"], "torch_dtype": "bfloat16",
        "vocab_size": 256, "hidden_size": 64, "num_hidden_layers": 4,
        "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid"], "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 128, "n_mamba_heads": 4, "mamba_d_state": 16,
        "mamba_ngroups": 1, "mamba_d_conv": 4, "mamba_expand": 2, "num_mem_blocks": 2, "adapter_rank": 8,
        "use_shared_attention_adapter": True}
SHAPED = {  # Zamba2Config keyword arguments: the sizes Zyphra's 1.2B / 2.7B / 7B models are described with
    "1.2B-shaped": {"hidden_size": 2048, "num_hidden_layers": 38, "n_mamba_heads": 64, "mamba_d_state": 128,
                    "layers_block_type": (["mamba"] * 5 + ["hybrid"]) * 6 + ["mamba"] * 2,
                    "intermediate_size": 8192, "use_shared_attention_adapter": True},
    "2.7B-shaped": {"n_mamba_heads": 80, "num_mem_blocks": 2},  # the default 54-layer plan
    "7B-shaped": {"hidden_size": 3584, "num_hidden_layers": 81, "n_mamba_heads": 112, "mamba_ngroups": 2,
                  "layers_block_type": (["mamba"] * 2 + ["hybrid"] + ["mamba"] * 3) * 13 + ["mamba"] * 3,
                  "num_mem_blocks": 2, "intermediate_size": 14336, "num_key_value_heads": 8},
}


def _load(tmp_path: Path, cfg: dict):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return load_spec(str(tmp_path))


def test_tiny_zamba2_by_hand(tmp_path):
    h, v, ff, rank, k = 64, 256, 128, 8, 4
    inner, heads, ds = 2 * h, 4, 16
    conv_dim = inner + 2 * ds  # 160
    mixer = h * (inner + conv_dim + heads) + conv_dim * k + conv_dim + 3 * heads + inner + h * inner  # 27,820
    mamba_layer = mixer + h  # + input_layernorm
    attn_in, hd = 2 * h, 2 * h // 4  # 128, 32
    attention = attn_in * 4 * hd + 2 * attn_in * 2 * hd + 4 * hd * h  # q, k, v, o: 40,960
    mlp = h * 2 * ff + ff * h  # gate_up, down: 24,576
    adapters = (h * rank + rank * 2 * ff) + 3 * (attn_in * rank + rank * attn_in)  # one hybrid layer each: 8,704
    block = attention + mlp + attn_in + h + adapters  # + input_layernorm (2h), pre_ff_layernorm (h)
    params = v * h + 4 * mamba_layer + 2 * h * h + 2 * block + h  # embed, layers, hybrid `linear`s, blocks, norm
    assert params == 285_040
    s = _load(tmp_path, TINY)
    assert s.params_total == params and s.checkpoint_bytes == 2 * params  # tied head: stored once
    assert kv_per_token(s, VLLM) == 2 * 2 * 2 * hd * 2 == 512  # 2 hybrid layers, K+V, 2 KV heads, bf16
    assert s.confidence == "high"


def test_one_shared_block_serves_every_hybrid_layer(tmp_path):
    # num_mem_blocks 1: one block stored once with an adapter per hybrid layer (2 here), no attention adapters
    one = _load(tmp_path / "one", {**TINY, "num_mem_blocks": 1, "use_shared_attention_adapter": False})
    two = _load(tmp_path / "two", {**TINY, "use_shared_attention_adapter": False})
    block_without_adapters = 40_960 + 24_576 + 128 + 64
    assert two.params_total - one.params_total == block_without_adapters


@pytest.mark.parametrize("name", sorted(SHAPED))
def test_transformers_meta_device_agrees(name, tmp_path):
    torch = pytest.importorskip("torch", reason="the meta-device count needs torch (extra 'real')")
    transformers = pytest.importorskip("transformers", reason="the meta-device count needs transformers")
    if not hasattr(transformers, "Zamba2Config"):
        pytest.skip(f"transformers {transformers.__version__} has no Zamba2")
    config = transformers.Zamba2Config(**SHAPED[name])
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    meta = sum(p.numel() for p in model.parameters())  # shared blocks and the tied head counted once
    cfg = {**config.to_dict(), "architectures": ["Zamba2ForCausalLM"], "torch_dtype": "bfloat16"}
    s = _load(tmp_path, cfg)  # the derived keys to_dict writes are read and agree
    assert s.params_total == meta
    hybrid = sum(x == "hybrid" for x in config.layers_block_type)
    assert kv_per_token(s, VLLM) == hybrid * 2 * config.num_key_value_heads * config.attention_head_dim * 2
    assert s.confidence == "high"


def test_recurrent_state_of_every_layer(tmp_path):
    s = _load(tmp_path, TINY)
    conv_dim, ssm = 160, 4 * 32 * 16  # heads x head_dim x d_state
    _, state = kv_cache(s, VLLM, 8192)
    assert state == 4 * (conv_dim * 3 * 2 + ssm * 2) == 20_224  # bf16, kernel - 1 conv columns
    _, state = kv_cache(s, Settings(context=8192, resolved_engine=engines.get("llamacpp")), 8192)
    assert state == 4 * (conv_dim * 3 * 4 + ssm * 4)  # llama.cpp keeps both in f32


@pytest.mark.parametrize(("override", "key"), [
    ({"layers_block_type": ["mamba", "hybrid", "mamba"]}, "layers_block_type"),
    ({"layers_block_type": ["mamba", "attention", "mamba", "hybrid"]}, "layers_block_type"),
    ({"attention_head_dim": 16}, "attention_head_dim"),
    ({"hybrid_layer_ids": [1, 2]}, "hybrid_layer_ids"),
    ({"n_mamba_heads": 3}, "n_mamba_heads"),
])
def test_bad_plans_are_one_line(override, key, tmp_path):
    with pytest.raises(ConfigError, match=key):
        _load(tmp_path, {**TINY, **override})
    r = subprocess.run([sys.executable, "-m", "planner", "memory", str(tmp_path), "--json"], capture_output=True,
                       text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


# Zamba (v1, Zamba-7B-v1's family): one shared block, multi-head Mamba-1 mixers, hybrid layers by period/offset
ZAMBA = {"model_type": "zamba", "architectures": ["ZambaForCausalLM"], "torch_dtype": "bfloat16", "vocab_size": 256,
         "hidden_size": 64, "num_hidden_layers": 9, "num_attention_heads": 4, "num_key_value_heads": 4,
         "intermediate_size": 128, "n_mamba_heads": 2, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
         "attn_layer_period": 6, "attn_layer_offset": 4}


def test_tiny_zamba_by_hand(tmp_path):
    h, inner, ds, k, dt = 64, 128, 16, 4, 4  # dt_rank "auto" = ceil(64 / 16)
    heads, head = 2, 64
    mixer = (h * 2 * inner + inner * k + inner + heads * (dt + 2 * ds) * head + heads * head * dt + inner
             + heads * head * ds + inner + inner * h)  # in_proj, conv + bias, x_proj, dt_proj + bias, A_log, D, out
    assert mixer == 32_640
    attn_in, hd = 2 * h, 2 * h // 4
    block = 3 * attn_in * 4 * hd + 4 * hd * h + 3 * h * 128 + attn_in + h  # q/k/v, o, gate/up/down, two norms
    # the default plan for 9 layers: [m, m, hybrid] + hybrid where i % 6 == 4 over the other 6 -> layers 2 and 7
    params = 256 * h + 9 * (mixer + h) + 2 * h * h + block + h
    assert params == 401_088
    s = _load(tmp_path, ZAMBA)
    assert s.params_total == params and s.confidence == "high"
    assert [i for i, layer in enumerate(s.layers) if layer.kv_heads] == [2, 7]
    assert kv_per_token(s, VLLM) == 2 * 2 * 4 * hd * 2 == 1024
    _, state = kv_cache(s, VLLM, 8192)
    assert state == 9 * (inner * (k - 1) * 2 + inner * ds * 2) == 43_776  # conv (kernel - 1 columns) + SSM, bf16


def test_zamba_7b_shaped_matches_transformers_on_the_meta_device(tmp_path):
    torch = pytest.importorskip("torch", reason="the meta-device count needs torch (extra 'real')")
    transformers = pytest.importorskip("transformers", reason="the meta-device count needs transformers")
    if not hasattr(transformers, "ZambaConfig"):
        pytest.skip(f"transformers {transformers.__version__} has no Zamba")
    config = transformers.ZambaConfig()  # the defaults: Zamba-7B-v1's sizes
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    meta = sum(p.numel() for p in model.parameters())
    s = _load(tmp_path, {**config.to_dict(), "architectures": ["ZambaForCausalLM"], "torch_dtype": "bfloat16"})
    assert s.params_total == meta
    hybrid = sum(x == "hybrid" for x in config.layers_block_type)
    assert hybrid == 13 and kv_per_token(s, VLLM) == hybrid * 2 * 16 * (2 * 3712 // 16) * 2 == 386_048


def test_1_2b_shaped_tensors_are_the_checkpoints(tmp_path):
    # names and shapes of Zyphra/Zamba2-1.2B's model.safetensors as a public test module lists them
    listed = {"model.layers.0.mamba.in_proj.weight": (8512, 2048), "model.layers.37.mamba.out_proj.weight": (2048, 4096),
              "model.layers.15.mamba.conv1d.weight": (4352, 1, 4), "model.layers.0.mamba.norm.weight": (4096,),
              "model.layers.0.mamba.A_log": (64,), "model.layers.0.input_layernorm.weight": (2048,),
              "model.layers.5.shared_transformer.feed_forward.gate_up_proj.weight": (16384, 2048),
              "model.layers.5.shared_transformer.feed_forward.down_proj.weight": (2048, 8192),
              "model.layers.5.shared_transformer.feed_forward.gate_up_proj_adapter_list.0.0.weight": (128, 2048),
              "model.layers.5.shared_transformer.feed_forward.gate_up_proj_adapter_list.0.1.weight": (16384, 128),
              "model.layers.5.shared_transformer.self_attn.q_proj_adapter_list.0.0.weight": (128, 4096),
              "model.layers.5.linear.weight": (2048, 2048), "model.embed_tokens.weight": (32000, 2048)}
    kw = SHAPED["1.2B-shaped"]
    cfg = {**TINY, "num_key_value_heads": None, "intermediate_size": None, "num_attention_heads": 32,
           "vocab_size": 32000, "num_mem_blocks": 1, "mamba_d_state": 128, "adapter_rank": 128,
           **{k: v for k, v in kw.items() if k != "layers_block_type"}, "layers_block_type": kw["layers_block_type"]}
    shapes = {t.name: tuple(t.shape) for t in _load(tmp_path, cfg).weights.tensors}
    assert {n: shapes.get(n) for n in listed} == listed
    hybrid = [i for i, x in enumerate(kw["layers_block_type"]) if x == "hybrid"]
    assert hybrid == [5, 11, 17, 23, 29, 35]  # "appears in hybrid layers 5,11,17,23,29,35"
    adapters = [n for n in shapes if "adapter_list" in n]
    assert len(adapters) == 6 * 8  # "6 hybrid layers x 8 adapters": gate_up and q/k/v, two matrices each
