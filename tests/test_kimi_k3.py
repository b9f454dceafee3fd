"""Kimi K3 (issue #30: latent-dimension experts, Attention Residuals, output gates, MXFP4 experts).

The tiny text config is the one a public K3 port builds its test checkpoint from (moonshotai/Kimi-K3
modeling_kimi_linear.py tensor names: `routed_expert_down_proj` [L, h], `routed_expert_up_proj` [h, L],
`routed_expert_norm` [L], experts `w1`/`w3` [moe_inter, L] and `w2` [L, moe_inter], per-layer
`self_attention_res_norm` / `mlp_res_norm` [h] and `*_res_proj` [1, h], model-level `output_attn_res_*`, KDA
`g_proj` [heads hd, h] for the full-rank gate, MLA `g_proj` [heads v_head_dim, h]); the quantization_config is the
released checkpoint's (compressed-tensors mxfp4-pack-quantized, group 32, uint8 E8M0 scales, ignore regexes for
attention, shared experts, dense MLPs, the head and the vision side). The full-size config is K3's published text
config as public ports pin it (93 layers, 896 experts of 3,072 at latent 3,584, 24 MLA layers).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner import engines
from planner.core.errors import ConfigError
from planner.fits.memory import Settings, kv_per_token
from planner.sources import load_spec

VLLM = Settings(context=8192, resolved_engine=engines.get("vllm"))
TINY = {"model_type": "kimi_linear", "architectures": ["KimiLinearForCausalLM"], "dtype": "bfloat16",
        "vocab_size": 8192, "hidden_size": 1024, "num_hidden_layers": 9, "num_attention_heads": 8,
        "num_key_value_heads": 8, "intermediate_size": 4096, "attn_res_block_size": 4, "first_k_dense_replace": 1,
        "moe_layer_freq": 1, "num_experts": 32, "num_experts_per_token": 4, "num_shared_experts": 1,
        "moe_intermediate_size": 384, "routed_expert_hidden_size": 512, "latent_moe_use_norm": True,
        "q_lora_rank": 256, "kv_lora_rank": 128, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "v_head_dim": 128, "mla_use_nope": True, "mla_use_output_gate": True, "num_nextn_predict_layers": 0,
        "linear_attn_config": {"full_attn_layers": [4, 8, 9], "kda_layers": [1, 2, 3, 5, 6, 7], "head_dim": 128,
                               "num_heads": 8, "short_conv_kernel_size": 4, "gate_lower_bound": -5.0,
                               "use_full_rank_gate": True},
        "max_position_embeddings": 4096, "tie_word_embeddings": False}
MXFP4 = {"quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized", "quantization_status": "compressed",
         "config_groups": {"group_0": {"format": "mxfp4-pack-quantized", "targets": ["Linear"],
                                       "input_activations": None,
                                       "weights": {"num_bits": 4, "group_size": 32, "strategy": "group",
                                                   "symmetric": True, "type": "float", "scale_dtype": "torch.uint8"}}},
         "ignore": ["re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*",
                    "re:.*lm_head.*", "re:.*vision_tower.*", "re:.*mm_projector.*"]}


def _load(tmp_path: Path, cfg: dict):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return load_spec(str(tmp_path))


def _hand() -> tuple[int, int]:
    """(all parameters, routed-expert parameters) of TINY, counted tensor by tensor."""
    h, v, w, hd, heads = 1024, 8192, 8 * 128, 128, 8
    kda = 3 * h * w + 3 * w * 4 + h * hd + hd * w + h * w + h * heads + heads + w + hd + w * h
    # q/k/v, three short convs [w, 1, 4], f_a, f_b, full-rank g_proj, b_proj, A_log, dt_bias, o_norm, o_proj
    mla = h * 256 + 256 + 256 * heads * 192 + h * (128 + 64) + 128 + 128 * heads * 256 + heads * 128 * h \
        + h * heads * 128  # q_a, q_a_layernorm, q_b, kv_a_proj_with_mqa, kv_a_layernorm, kv_b, o_proj, g_proj
    residuals = 2 * h + 2 * h  # self_attention_res_norm, mlp_res_norm, two [1, h] projections
    experts = 32 * 3 * 384 * 512  # w1, w3 [384, 512] and w2 [512, 384], at the latent width
    moe = 32 * h + 32 + experts + 3 * h * 384 + 512 * h + h * 512 + 512  # router + bias, shared, latent down/up/norm
    layers = 6 * kda + 3 * mla + 9 * (2 * h + residuals) + 3 * h * 4096 + 8 * moe
    return 2 * v * h + h + 2 * h + layers, 8 * experts  # embed + untied head, norm, output_attn_res norm + proj


def test_tiny_k3_by_hand(tmp_path):
    params, _ = _hand()
    s = _load(tmp_path, TINY)
    assert s.params_total == params == 241_300_656
    assert s.checkpoint_bytes == 2 * params and s.confidence == "high"
    assert kv_per_token(s, VLLM) == 3 * (128 + 64) * 2  # the 3 MLA layers' latent + rope key, bf16


def test_latent_experts_are_counted_active_at_their_width(tmp_path):
    params, experts = _hand()
    s = _load(tmp_path, TINY)
    assert s.params_active == params - experts * (32 - 4) // 32  # 4 of 32 routed experts per token


def test_released_mxfp4_format_packs_only_the_routed_experts(tmp_path):
    params, experts = _hand()
    s = _load(tmp_path, {**TINY, "quantization_config": MXFP4})
    # each expert matrix [out, in]: weight_packed uint8 [out, in / 2] + weight_scale uint8 [out, in / 32]
    packed = 8 * 32 * (2 * (384 * 512 // 2 + 384 * 512 // 32) + (512 * 384 // 2 + 512 * 384 // 32))
    assert s.checkpoint_bytes == 2 * (params - experts) + packed


def test_without_a_latent_width_the_experts_run_at_hidden(tmp_path):
    base = _load(tmp_path / "a", {**TINY, "routed_expert_hidden_size": 0})
    params, experts = _hand()
    at_hidden = experts * 1024 // 512
    assert base.params_total == params - experts + at_hidden - 8 * (2 * 512 * 1024 + 512)


def test_bad_latent_width_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="routed_expert_hidden_size"):
        _load(tmp_path, {**TINY, "routed_expert_hidden_size": 4096})


def test_published_k3_text_config(tmp_path):
    lac = {"full_attn_layers": [*range(4, 94, 4), 93], "kda_layers": [i for i in range(1, 92) if i % 4],
           "head_dim": 128, "num_heads": 96, "short_conv_kernel_size": 4, "use_full_rank_gate": True}
    cfg = {**TINY, "vocab_size": 163_840, "hidden_size": 7168, "num_hidden_layers": 93, "num_attention_heads": 96,
           "num_key_value_heads": 96, "intermediate_size": 33_792, "num_experts": 896, "num_experts_per_token": 16,
           "num_shared_experts": 2, "moe_intermediate_size": 3072, "routed_expert_hidden_size": 3584,
           "q_lora_rank": 1536, "kv_lora_rank": 512, "attn_res_block_size": 12, "linear_attn_config": lac,
           "quantization_config": MXFP4}
    s = _load(tmp_path, cfg)
    assert sum(layer.attention == "mla" for layer in s.layers) == 24 and len(s.layers) == 93
    assert kv_per_token(s, VLLM) == 24 * (512 + 64) * 2 == 27_648
    # 92 MoE layers x 896 experts x 3 matrices of 3,072 x 3,584 at 4.25 bits: 1.45 of its 1.56 TB
    expert_bytes = 92 * 896 * 3 * (3072 * 3584 // 2 + 3072 * 3584 // 32)
    assert expert_bytes == 1_446_456_066_048
    assert 1.5e12 < s.checkpoint_bytes < 1.6e12 and s.confidence == "high"


def test_the_kimi_k3_wrapper_sizes_its_text_config(tmp_path):
    params, _ = _hand()
    s = _load(tmp_path, {"model_type": "kimi_k3", "architectures": ["KimiK3ForConditionalGeneration"],
                         "text_config": TINY})
    assert s.params_total == params
