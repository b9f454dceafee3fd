"""Keys a recent transformers writes back into a saved config.json (derived in the config class's __post_init__)
are read, so a re-saved checkpoint is not `low` for them; where they carry structure, the structure is used.

Found by sizing every registered family at its config class's `to_dict()` (what `save_pretrained` writes):
DeepSeek-V3's head_dim (= qk_rope_head_dim), DeepSeek-V3.2 / GLM-5's layer_types (all "indexed_attention"),
DBRX's num_key_value_heads, Qwen2-MoE's qkv_bias, and transformers' own Kimi-Linear layout (flat keys, no
linear_attn_config) each made an exact figure say `low`, or, for Kimi-Linear, planned every layer as MLA.
"""

from __future__ import annotations

import json

from planner.sources import load_spec


def _spec(tmp_path, cfg, name="m"):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"torch_dtype": "bfloat16", **cfg}))
    return load_spec(str(d), inventory="analytic")


_DSV3 = {"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 1024,
         "num_hidden_layers": 3, "num_attention_heads": 8, "vocab_size": 1000, "intermediate_size": 2048,
         "moe_intermediate_size": 256, "n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2,
         "first_k_dense_replace": 1, "kv_lora_rank": 128, "q_lora_rank": 256, "qk_rope_head_dim": 32,
         "qk_nope_head_dim": 64, "v_head_dim": 64, "num_nextn_predict_layers": 0}


def test_deepseek_v3_head_dim_written_as_the_rope_width_is_explained(tmp_path):
    plain = _spec(tmp_path, _DSV3, "a")
    resaved = _spec(tmp_path, {**_DSV3, "head_dim": 32, "qk_head_dim": 96}, "b")
    assert resaved.params_total == plain.params_total
    assert resaved.confidence == plain.confidence == "high"
    odd = _spec(tmp_path, {**_DSV3, "head_dim": 48}, "c")  # a width no config class writes: still a doubt
    assert odd.confidence == "low"


def test_qwen2_moe_reads_qkv_bias(tmp_path):
    cfg = {"model_type": "qwen2_moe", "architectures": ["Qwen2MoeForCausalLM"], "hidden_size": 256,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000,
           "intermediate_size": 512, "moe_intermediate_size": 128, "shared_expert_intermediate_size": 512,
           "num_experts": 4, "num_experts_per_tok": 2}
    biased = _spec(tmp_path, {**cfg, "qkv_bias": True}, "a")
    plain = _spec(tmp_path, {**cfg, "qkv_bias": False}, "b")
    # q (4 x 64) + k and v (2 x 64 each) biases per layer
    assert biased.params_total - plain.params_total == 2 * (256 + 128 + 128)
    assert plain.confidence == "high"


def test_kimi_linear_native_layout_plans_from_layer_types(tmp_path):
    """transformers' KimiLinearConfig writes layer_types / mlp_layer_types / linear_num_heads / linear_head_dim /
    linear_conv_kernel_dim and linear_attn_config null: the same model as the remote layout below."""
    base = {"model_type": "kimi_linear", "architectures": ["KimiLinearForCausalLM"], "hidden_size": 512,
            "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 1000, "intermediate_size": 1024,
            "moe_intermediate_size": 128, "num_experts": 4, "num_experts_per_token": 2, "num_shared_experts": 1,
            "first_k_dense_replace": 1, "kv_lora_rank": 64, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16,
            "v_head_dim": 32}
    remote = _spec(tmp_path, {**base, "linear_attn_config": {
        "kda_layers": [1, 2, 3], "full_attn_layers": [4], "num_heads": 4, "head_dim": 32,
        "short_conv_kernel_size": 4}}, "remote")
    native = _spec(tmp_path, {**base, "linear_attn_config": None,
                              "layer_types": ["linear_attention"] * 3 + ["full_attention"],
                              "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"], "linear_num_heads": 4,
                              "linear_head_dim": 32, "linear_conv_kernel_dim": 4, "qk_head_dim": 48}, "native")
    assert [x.recurrent for x in native.layers] == [x.recurrent for x in remote.layers] == \
        ["linear_attention"] * 3 + [None]
    assert native.params_total == remote.params_total
    assert native.confidence == "high"


def test_dbrx_and_dsa_derived_keys_are_read(tmp_path):
    dbrx = {"model_type": "dbrx", "architectures": ["DbrxForCausalLM"], "d_model": 256, "n_heads": 4, "n_layers": 2,
            "vocab_size": 1000, "attn_config": {"kv_n_heads": 1}, "ffn_config": {"ffn_hidden_size": 512,
                                                                                 "moe_num_experts": 4, "moe_top_k": 2}}
    a, b = _spec(tmp_path, dbrx, "a"), _spec(tmp_path, {**dbrx, "num_key_value_heads": 1}, "b")
    assert a.params_total == b.params_total and b.confidence == "high"
    v32 = {**_DSV3, "model_type": "deepseek_v32", "architectures": ["DeepseekV32ForCausalLM"], "index_n_heads": 4,
           "index_head_dim": 32, "index_topk": 64}
    c, d = _spec(tmp_path, v32, "c"), _spec(tmp_path, {**v32, "layer_types": ["indexed_attention"] * 3}, "d")
    assert c.params_total == d.params_total and d.confidence == "high"
