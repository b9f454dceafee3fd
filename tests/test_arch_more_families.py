"""nanochat, Aria's text model, OLMo Hybrid, LFM3, JetMoE and Mamba-2 sized by their own rules.

Before these rules Mamba-2 was refused (exit 2) and the others went through the standard decoder rule, low:
nanochat +29%, Aria -17%, OLMo Hybrid -9.6%, LFM3 -4.8%, JetMoE -14% at transformers' config defaults, and the
hybrids' caches grew on every layer. Each count below is worked from the modeling file's shapes; transformers
5.24 builds the same models on the meta device with these parameter counts, tensor by tensor.
"""

from __future__ import annotations

import json

from planner import engines
from planner.fits.memory import Settings, kv_per_token
from planner.sources import load_spec

VLLM = Settings(context=4096, resolved_engine=engines.get("vllm"))


def _spec(tmp_path, cfg):
    d = tmp_path / cfg["model_type"]
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"torch_dtype": "bfloat16", **cfg}))
    return load_spec(str(d), inventory="analytic")


def test_nanochat_weightless_norms_and_ungated_mlp(tmp_path):
    v, h, inter, n = 50304, 768, 8192, 12
    s = _spec(tmp_path, {"model_type": "nanochat", "architectures": ["NanoChatForCausalLM"], "vocab_size": v,
                         "hidden_size": h, "intermediate_size": inter, "num_hidden_layers": n,
                         "num_attention_heads": 6, "tie_word_embeddings": False})
    # embed + untied head, q/k/v/o 4 h^2 (6 heads of 128, MHA), fc1 + fc2; no norm has a weight
    assert s.architecture == "nanochat" and s.confidence == "high"
    assert s.params_total == 2 * v * h + n * (4 * h * h + 2 * h * inter) == 256_573_440
    assert not [t for t in s.weights.tensors if "norm" in t.name]


def test_aria_text_routed_and_shared_experts(tmp_path):
    v, h, inter, n, e = 32000, 4096, 4096, 32, 8
    s = _spec(tmp_path, {"model_type": "aria_text", "architectures": ["AriaTextForCausalLM"], "vocab_size": v,
                         "hidden_size": h, "intermediate_size": inter, "num_hidden_layers": n,
                         "num_attention_heads": 32, "moe_num_experts": e, "moe_topk": 2, "moe_num_shared_experts": 2})
    # per layer: q/k/v/o 4 h^2, router e h, e experts x 3 h inter, shared gated MLP 3 h (2 inter), two norms
    layer = 4 * h * h + e * h + e * 3 * h * inter + 3 * h * 2 * inter + 2 * h
    assert s.architecture == "aria_text" and s.confidence == "high"
    assert s.params_total == 2 * v * h + n * layer + h == 18_517_069_824
    assert s.moe is not None and (s.moe.experts, s.moe.shared_intermediate) == (8, 8192)


def test_olmo_hybrid_plan_deltanet_layers_and_cache(tmp_path):
    v, h, inter, n = 100352, 3840, 11008, 32
    s = _spec(tmp_path, {"model_type": "olmo_hybrid", "architectures": ["OlmoHybridForCausalLM"], "vocab_size": v,
                         "hidden_size": h, "intermediate_size": inter, "num_hidden_layers": n,
                         "num_attention_heads": 30})
    # defaults: 30 key/value heads, key head int(0.75 x 3840 / 30) = 96, value head 192
    kd, vd, heads = 96, 192, 30
    key, val = heads * kd, heads * vd
    mlp = 3 * h * inter
    linear = (2 * key * h + val * h + 2 * heads * h + val * h + val * h  # q, k, v, a, b, g
              + (2 * key + val) * 4 + 2 * heads + vd + 2 * h + mlp)      # conv, A_log + dt_bias, o_norm, norms
    full = 4 * h * h + 2 * h + 2 * h + mlp                               # q/k/v/o, full-width q/k norms, post-norms
    assert s.architecture == "olmo_hybrid" and s.confidence == "high"
    assert s.params_total == 2 * v * h + 24 * linear + 8 * full + h == 7_430_870_688
    assert [x.recurrent for x in s.layers[:4]] == ["linear_attention"] * 3 + [None]
    assert kv_per_token(s, VLLM) == 8 * 2 * 30 * 128 * 2  # only every 4th layer caches per token


def test_lfm3_conv_sliding_full_plan(tmp_path):
    v, h, inter, n = 128000, 2048, 7680, 24
    s = _spec(tmp_path, {"model_type": "lfm3", "architectures": ["Lfm3ForCausalLM"], "vocab_size": v,
                         "hidden_size": h, "intermediate_size": inter, "num_hidden_layers": n,
                         "num_attention_heads": 16, "num_key_value_heads": 4})
    kinds = [x.attention for x in s.layers]
    assert kinds.count("full") == 6 and kinds.count("sliding") == 5 and kinds.count("none") == 13
    attn = 2 * h * 16 * 128 + 2 * h * 4 * 128 + 2 * 128 + 16 * h   # q/o, k/v, per-head q/k norms, output gate
    conv = 3 * h * h + h * 7 + h * h
    per = 4 * h + 3 * h * inter                                    # four norms (sandwich), SwiGLU
    assert s.confidence == "high"
    assert s.params_total == v * h + h + 11 * (attn + per) + 13 * (conv + per) == 1_728_801_536
    assert kv_per_token(s, VLLM) == 6 * 2 * 4 * 128 * 2  # the sliding layers hold 256 tokens


def test_jetmoe_mixture_of_attention(tmp_path):
    v, h, inter, n, e = 32000, 2048, 5632, 12, 8
    s = _spec(tmp_path, {"model_type": "jetmoe", "architectures": ["JetMoeForCausalLM"], "vocab_size": v,
                         "hidden_size": h, "intermediate_size": inter, "num_hidden_layers": n,
                         "num_key_value_heads": 16, "kv_channels": 128, "num_local_experts": e,
                         "num_experts_per_tok": 2})
    kv = 16 * 128
    attn = h * 2 * kv + 2 * e * kv * h + e * h + h     # kv_proj, MoA q/o experts, router, bias
    mlp = e * 3 * inter * h + e * h + h                 # gated experts, router, bias
    assert s.architecture == "jetmoe" and s.confidence == "high"
    assert s.params_total == v * h + n * (attn + mlp + 2 * h) + h == 4_293_888_000
    assert kv_per_token(s, VLLM) == 12 * 2 * kv * 2


def test_mamba2_codestral_shape(tmp_path):
    v, h, n, heads, hd, state, groups = 32768, 4096, 64, 128, 64, 128, 8
    s = _spec(tmp_path, {"model_type": "mamba2", "architectures": ["Mamba2ForCausalLM"], "vocab_size": v,
                         "hidden_size": h, "num_hidden_layers": n, "num_heads": heads, "head_dim": hd,
                         "state_size": state, "n_groups": groups, "conv_kernel": 4})
    d = heads * hd
    conv = d + 2 * groups * state
    layer = h * (d + conv + heads) + conv * 4 + conv + 3 * heads + d + d * h + h
    assert s.architecture == "mamba2" and s.confidence == "high"
    assert s.params_total == 2 * v * h + n * layer + h == 7_285_403_648
    assert kv_per_token(s, VLLM) == 0 and all(x.recurrent == "mamba2" for x in s.layers)


def test_recurrent_gemma_griffin_plan(tmp_path):
    v, h, n, heads = 256000, 2560, 26, 10
    s = _spec(tmp_path, {"model_type": "recurrent_gemma", "architectures": ["RecurrentGemmaForCausalLM"],
                         "vocab_size": v, "hidden_size": h, "num_hidden_layers": n, "num_attention_heads": heads,
                         "intermediate_size": 3 * h, "attention_window_size": 2048})
    mlp = 2 * (h * 3840 + 3840) + (3840 * h + h)  # gate / up / down of intermediate_size / 2, all biased
    block = h // heads
    recurrent = 3 * (h * h + h) + h * 4 + h + h + 2 * (heads * block * block + heads * block)
    attention = 4 * h * h + h                     # q/k/v/o (MHA), o_proj's bias
    # 26 layers of (recurrent, recurrent, attention): 18 recurrent, 8 local-attention blocks
    assert [x.recurrent for x in s.layers[:3]] == ["rg_lru", "rg_lru", None]
    assert s.layers[2].attention == "sliding" and s.layers[2].window == 2048
    assert s.architecture == "recurrent_gemma" and s.confidence == "high"
    assert s.params_total == v * h + 18 * recurrent + 8 * attention + n * (2 * h + mlp) + h == 2_010_263_040
    assert kv_per_token(s, VLLM) == 0  # windows and state only


def test_longcat_flash_two_mla_sublayers_and_no_weights_for_zero_experts(tmp_path):
    """LongCat-Flash's release shape (LongcatFlashConfig defaults: 28 layers of 6144, 512 routed + 256 zero
    experts of 2048, top-12): 560,664,980,480 params, the published "560B". transformers' meta build says
    741B because it shapes gate_up_proj over the zero experts too (they are nn.Identity in the forward)."""
    h, v, n = 6144, 131072, 28
    s = _spec(tmp_path, {"model_type": "longcat_flash", "architectures": ["LongcatFlashForCausalLM"],
                         "hidden_size": h, "num_layers": n, "num_attention_heads": 64, "vocab_size": v,
                         "ffn_hidden_size": 12288, "expert_ffn_hidden_size": 2048, "n_routed_experts": 512,
                         "zero_expert_num": 256, "moe_topk": 12, "q_lora_rank": 1536, "kv_lora_rank": 512,
                         "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128})
    mla = (h * 1536 + 1536 + 1536 * 64 * 192) + (h * 576 + 512) + 512 * 64 * 256 + 64 * 128 * h
    layer = 2 * mla + 2 * 3 * h * 12288 + 4 * h + (768 * h + 768) + 512 * 3 * 2048 * h
    assert s.architecture == "longcat_flash" and s.confidence == "high"
    assert s.params_total == n * layer + 2 * v * h + h == 560_664_980_480
    assert len(s.layers) == 56 and all(x.attention == "mla" for x in s.layers)
    assert kv_per_token(s, VLLM) == 56 * (512 + 64) * 2  # vLLM caches the latent + rope key per sublayer


def test_bailing_hybrid_delta_and_gated_mla_layers_with_fp32_parts(tmp_path):
    """Ling 3 hybrid at BailingHybridConfig's defaults, in the spelling a saved config uses (attribute_map:
    num_experts, num_experts_per_token, num_shared_experts, num_nextn_predict_layers, and a head_dim that
    __post_init__ overwrote with the rope width beside linear_head_dim)."""
    h, v, n, heads, hd = 2560, 157184, 42, 32, 128
    cfg = {"model_type": "bailing_hybrid", "architectures": ["BailingHybridForCausalLM"], "hidden_size": h,
           "vocab_size": v, "num_hidden_layers": n, "num_attention_heads": heads, "intermediate_size": 6144,
           "moe_intermediate_size": 768, "num_experts": 512, "num_experts_per_token": 8, "num_shared_experts": 1,
           "first_k_dense_replace": 2, "kv_lora_rank": 512, "q_lora_rank": None, "qk_rope_head_dim": 64,
           "qk_nope_head_dim": 128, "v_head_dim": 128, "head_dim": 64, "linear_head_dim": hd,
           "short_conv_kernel_size": 4, "layer_group_size": 6, "num_nextn_predict_layers": 1}
    s = _spec(tmp_path, cfg)
    qkv = heads * hd
    f32_linear = 3 * qkv * 4 + heads + qkv                      # conv1d, A_log, dt_bias
    # q/k/v, the float32 parts, f_proj, b_proj, o_norm, o_proj, g_proj
    linear = 3 * qkv * h + f32_linear + qkv * h + heads * h + hd + qkv * h + qkv * h
    mla = heads * 192 * h + 576 * h + 512 + 512 * heads * 256 + heads * 128 * h + heads * h
    f32_router = 512 * h + 512
    sparse = f32_router + 512 * 3 * 768 * h + 3 * 768 * h
    dense = 3 * h * 6144
    # 7 full layers ((i + 1) % 6 == 0), 35 linear; 2 dense MLPs then 40 sparse
    total = 2 * v * h + h + 35 * linear + 7 * mla + n * 2 * h + 2 * dense + 40 * sparse
    assert s.architecture == "bailing_hybrid"
    assert s.params_total == total == 124_414_211_552
    # float32 where _keep_in_fp32_modules_strict keeps them: 2 more bytes per element than bf16
    assert s.weights.resident_bytes == 2 * total + 2 * (35 * f32_linear + 40 * f32_router)
    assert s.layers[5].attention == "mla" and s.layers[0].recurrent == "linear_attention"
    assert kv_per_token(s, VLLM) == 7 * (512 + 64) * 2
    # the MTP layer the checkpoint stores is named as a doubt, not guessed
    assert s.confidence == "low" and any("MTP layer" in a for a in s.assumptions)


def test_sarvam_families_read_as_the_layers_they_reuse(tmp_path):
    """Sarvam's MLA MoE is DeepSeek-V3's layer under its keys; Sarvam's GQA MoE is GLM-4.5's (per-head q/k norms
    under use_qk_norm, a correction bias per router). SarvamMlaConfig's defaults: 32 layers of 4096, 64 heads,
    q_proj (no q LoRA) 64 x 192, kv_a 512 + 64, kv_b 64 x 256, o 64 x 128; one dense layer of 16384, then 128
    routed experts of 2048 + one shared, a router with its correction bias."""
    h, v = 4096, 262144
    s = _spec(tmp_path, {"model_type": "sarvam_mla", "architectures": ["SarvamMlaForCausalLM"], "hidden_size": h,
                         "vocab_size": v, "num_hidden_layers": 32, "num_attention_heads": 64, "intermediate_size": 16384,
                         "moe_intermediate_size": 2048, "n_routed_experts": 128, "n_shared_experts": 1,
                         "num_experts_per_tok": 8, "first_k_dense_replace": 1, "kv_lora_rank": 512,
                         "q_lora_rank": None, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
                         "n_group": 1, "topk_group": 1, "topk_method": "noaux_tc"})
    attn = h * 64 * 192 + h * 576 + 512 + 512 * 64 * 256 + 64 * 128 * h + 2 * h
    moe = 128 * h + 128 + 128 * 3 * 2048 * h + 3 * 2048 * h
    assert s.architecture == "deepseek_v3"
    assert s.params_total == 2 * v * h + h + 32 * attn + 3 * 16384 * h + 31 * moe == 106_031_767_424


def test_gemma3_tower_is_siglip_with_its_projector(tmp_path):
    """MedGemma 27B (google/medgemma-27b-it, a Gemma 3 27B; its config and index copied in tests/fixtures/fresh_r9):
    the index's total_size 54,864,813,280 B. Gemma 3's tower is SigLIP without the pooling head (vision_use_head
    false) and its projector mm_input_projection_weight [1152, 5376] + mm_soft_emb_norm [1152]; sized before by
    the SigLIP-shaped fallback (approximated, `low`)."""
    from pathlib import Path
    cfg = json.loads((Path(__file__).parent / "fixtures" / "fresh_r9" / "google__medgemma-27b-it.json").read_text())
    d = tmp_path / "medgemma"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    s = load_spec(str(d), inventory="analytic")
    vh, inter, depth, positions = 1152, 4304, 27, (896 // 14) ** 2
    block = 4 * vh + 4 * (vh * vh + vh) + (inter * vh + inter) + (vh * inter + vh)
    tower = vh * 3 * 14 * 14 + vh + positions * vh + depth * block + 2 * vh
    names = {t.name for t in s.weights.tensors}
    assert "multi_modal_projector.mm_input_projection_weight" in names
    assert sum(t.numel for t in s.weights.tensors if t.group == "vision") == tower + vh * 5376 + vh
    assert s.checkpoint_bytes == 54_864_813_280 and s.confidence == "high"


def test_gemma4_per_layer_embeddings_and_shared_kv(tmp_path):
    """Gemma 4 E2B-style text model, small: 6 layers (every 3rd full), PLE width 32, the last 2 layers sharing KV.
    PLE adds embed_tokens_per_layer [vocab, 6 x 32], per_layer_model_projection [6 x 32, h], a norm [32], and per
    layer a gate [32, h], a projection [h, 32] and a norm [h]. Shared layers build no k/v projections or k_norm
    and cache nothing; the checkpoint stores their k/v (transformers ignores them on load)."""
    h, v, n, ple, nq, nkv, hd, ghd, inter = 256, 1000, 6, 32, 4, 1, 64, 128, 512
    types = ["sliding_attention", "sliding_attention", "full_attention"] * 2
    s = _spec(tmp_path, {"model_type": "gemma4_text", "architectures": ["Gemma4ForCausalLM"], "hidden_size": h,
                         "vocab_size": v, "num_hidden_layers": n, "num_attention_heads": nq, "num_key_value_heads": nkv,
                         "head_dim": hd, "global_head_dim": ghd, "intermediate_size": inter, "layer_types": types,
                         "sliding_window": 512, "hidden_size_per_layer_input": ple, "vocab_size_per_layer_input": v,
                         "num_kv_shared_layers": 2, "tie_word_embeddings": True, "max_position_embeddings": 8192})

    def layer(d, shared):
        kv = 0 if shared else 2 * h * nkv * d + d   # k/v projections and k_norm
        return (h * nq * d + kv + nq * d * h + d      # q, (k, v, k_norm), o, q_norm
                + 4 * h + 1 + 3 * h * inter           # four norms, layer_scalar, MLP
                + 2 * h * ple + h)                    # PLE gate, projection, norm
    dims = [hd, hd, ghd, hd, hd, ghd]
    total = v * h + h + v * n * ple + h * n * ple + ple + sum(layer(d, i >= 4) for i, d in enumerate(dims))
    assert s.params_total == total and s.confidence == "high"
    assert [x.attention for x in s.layers] == ["sliding", "sliding", "full", "sliding", "none", "none"]
    stored = (2 * h * nkv * hd + hd) + (2 * h * nkv * ghd + ghd)  # layers 4 (sliding) and 5 (full)
    assert s.checkpoint_bytes == 2 * (total + stored)
    assert kv_per_token(s, VLLM) == 2 * nkv * ghd * 2  # the one full layer that keeps its own cache


def test_gemma3n_text_altup_laurel_ple_and_per_layer_widths(tmp_path):
    """Gemma 3n's text model, small: 5 layers (every 5th full), per-layer MLP widths, AltUp with 3 inputs,
    LAuReL rank 8, PLE width 16, the last 2 layers sharing KV. Refused before (intermediate_size is a list)."""
    h, v, n, nq, nkv, hd, alt, rank, ple = 128, 500, 5, 4, 1, 32, 3, 8, 16
    mlp = [256, 512, 256, 512, 256]
    s = _spec(tmp_path, {"model_type": "gemma3n_text", "architectures": ["Gemma3nForCausalLM"], "hidden_size": h,
                         "vocab_size": v, "num_hidden_layers": n, "num_attention_heads": nq, "num_key_value_heads": nkv,
                         "head_dim": hd, "intermediate_size": mlp, "altup_num_inputs": alt, "laurel_rank": rank,
                         "hidden_size_per_layer_input": ple, "vocab_size_per_layer_input": v,
                         "num_kv_shared_layers": 2, "sliding_window": 64, "max_position_embeddings": 4096,
                         "layer_types": ["sliding_attention"] * 4 + ["full_attention"]})
    kv = 2 * h * nkv * hd + hd
    per = (2 * h * nq * hd + hd + 4 * h + h + alt * alt + alt ** 3 + alt * h + h
           + 2 * h * rank + h + 2 * h * ple + h)
    model = v * h + h + v * n * ple + h * n * ple + ple + 2 * (alt - 1) * h * h
    total = model + n * per + sum(3 * h * w for w in mlp) + 3 * kv
    assert s.architecture == "gemma3n_text" and s.confidence == "high"
    assert s.params_total == total
    assert s.checkpoint_bytes == 2 * (total + 2 * kv)
    assert [x.attention for x in s.layers] == ["sliding"] * 3 + ["none", "none"]
    assert kv_per_token(s, VLLM) == 0  # the only full layer is a shared one; the sliding ones hold 64 tokens


def test_llama_3_2_vision_cross_attention_layers_and_tower(tmp_path):
    """Llama-3.2-11B-Vision's shapes (MllamaConfig defaults with the release's 560-pixel tiles): 40 text layers,
    8 of them gated cross-attention layers; the MllamaVisionModel tower (32 + 8 gated blocks, tile and position
    embeddings) and a projector from 7680 to 4096. 10,670,220,835 params, as transformers builds
    MllamaForConditionalGeneration from the same config. Before: the standard rule, +6.5% on the text model,
    the tower a SigLIP-shaped guess."""
    h, v, n, inter, vh, vi = 4096, 128256, 40, 14336, 1280, 5120
    cfg = {"model_type": "mllama", "architectures": ["MllamaForConditionalGeneration"], "torch_dtype": "bfloat16",
           "text_config": {"model_type": "mllama_text_model", "hidden_size": h, "vocab_size": v,
                           "num_hidden_layers": n, "num_attention_heads": 32, "num_key_value_heads": 8,
                           "intermediate_size": inter, "cross_attention_layers": [3, 8, 13, 18, 23, 28, 33, 38]},
           "vision_config": {"model_type": "mllama_vision_model", "hidden_size": vh, "intermediate_size": vi,
                             "num_hidden_layers": 32, "num_global_layers": 8, "image_size": 560, "patch_size": 14,
                             "max_num_tiles": 4, "vision_output_dim": 7680}}
    d = tmp_path / "mllama"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    s = load_spec(str(d), inventory="analytic")
    attn = 2 * h * h + 2 * 1024 * h
    self_layer = attn + 2 * h + 3 * h * inter
    cross_layer = attn + 2 * 128 + 2 + 2 * h + 3 * h * inter
    text = (v + 8) * h + h + 32 * self_layer + 8 * cross_layer + v * h
    pos = (560 // 14) ** 2 + 1
    block = 4 * vh * vh + (vi * vh + vi) + (vh * vi + vh) + 4 * vh
    tower = (vh + vh * 3 * 14 * 14 + 1 + pos * vh + 9 * 4 * pos * vh + 2 * (1 + 9 * 4 * vh) + 4 * vh
             + 32 * block + 8 * (block + 2) + 7680 * h + h)
    assert s.params_total == text + tower == 10_670_220_835
    assert s.confidence == "high"
    assert kv_per_token(s, VLLM) == 32 * 2 * 1024 * 2  # only the self-attention layers grow with the text


def test_dots1_qwen3_attention_over_deepseek_experts(tmp_path):
    """dots.llm1's release shape (62 layers of 4096, 32 heads of 128 with per-head q/k norms, one dense layer of
    10944, then 128 routed experts of 1408 + 2 shared, top-6): the published "142B total" by hand."""
    h, v, n = 4096, 152064, 62
    s = _spec(tmp_path, {"model_type": "dots1", "architectures": ["Dots1ForCausalLM"], "hidden_size": h,
                         "vocab_size": v, "num_hidden_layers": n, "num_attention_heads": 32,
                         "num_key_value_heads": 32, "intermediate_size": 10944, "moe_intermediate_size": 1408,
                         "n_routed_experts": 128, "n_shared_experts": 2, "num_experts_per_tok": 6,
                         "first_k_dense_replace": 1, "attention_bias": False})
    attn = 4 * h * h + 2 * 128 + 2 * h
    moe = 128 * h + 128 + 128 * 3 * 1408 * h + 3 * 2816 * h
    total = 2 * v * h + h + n * attn + 3 * 10944 * h + (n - 1) * moe
    assert s.architecture == "dots1" and s.confidence == "high"
    assert s.params_total == total and total // 10**9 == 142
