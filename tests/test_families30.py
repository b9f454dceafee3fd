"""Families added for issue #30, each checked against a hand count from its modelling code's shapes
(and a published checkpoint size where one is on record).

tests/fixtures/heldout30/: falcon-40b.json is tiiuae/falcon-40b's original RWConfig (`RefinedWeb`,
n_layer / n_head / n_head_kv); dbrx-instruct.json is databricks/dbrx-instruct's config.json.
"""

from __future__ import annotations

import json
from pathlib import Path

from planner import engines
from planner.fits.memory import Settings, kv_per_token
from planner.sources import load_spec

HERE = Path(__file__).parent / "fixtures" / "heldout30"
VLLM = Settings(context=8192, resolved_engine=engines.get("vllm"))


def _load(tmp_path: Path, name: str, **overrides):
    d = tmp_path / name
    d.mkdir()
    cfg = json.loads((HERE / f"{name}.json").read_text()) if (HERE / f"{name}.json").is_file() else {}
    (d / "config.json").write_text(json.dumps({**cfg, **overrides}))
    return load_spec(str(d))


def test_refinedweb_falcon_40b_matches_its_index_total_size(tmp_path):
    # RWConfig: 60 layers, 128 heads, 8 KV heads, hidden 8192 -> head_dim 64; new decoder architecture
    h, n, v, hd = 8192, 60, 65024, 64
    per_layer = (128 + 2 * 8) * hd * h + h * h + 8 * h * h + 4 * h  # qkv, dense, 4h MLP, ln_attn + ln_mlp (w + b)
    s = _load(tmp_path, "falcon-40b")
    assert s.params_total == n * per_layer + v * h + 2 * h
    # tiiuae/falcon-40b model.safetensors.index.json total_size 83,671,941,120 (quoted in a public deployment
    # note; find_string '83671941120'): the tied params plus the stored lm_head copy, in bf16
    assert s.checkpoint_bytes == 2 * (s.params_total + v * h) == 83_671_941_120
    assert kv_per_token(s, VLLM) == n * 2 * 8 * hd * 2 == 122_880
    assert s.confidence == "high"


def test_dbrx_experts_and_grouped_kv(tmp_path):
    d, n, v, e, ffn, nkv, hd = 6144, 40, 100352, 16, 10752, 8, 128
    per_layer = (d + 2 * nkv * hd) * d + d * d + 2 * d + e * d + 3 * e * ffn * d
    s = _load(tmp_path, "dbrx-instruct")
    assert s.params_total == n * per_layer + 2 * v * d + d
    # 4 of 16 experts per token: active = total - 12/16 of the routed expert weights
    assert s.params_active == s.params_total - n * 3 * 12 * ffn * d
    assert kv_per_token(s, VLLM) == n * 2 * nkv * hd * 2 == 163_840


def _tiny(tmp_path: Path, cfg: dict):
    d = tmp_path / cfg["model_type"]
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"torch_dtype": "bfloat16", **cfg}))
    return load_spec(str(d))


def test_nemotron_plain_relu2_mlp_and_layernorm_bias(tmp_path):
    h, n, v, inter, nq, nkv = 256, 3, 1000, 1024, 8, 2
    s = _tiny(tmp_path, {"model_type": "nemotron", "hidden_size": h, "num_hidden_layers": n, "vocab_size": v,
                         "intermediate_size": inter, "num_attention_heads": nq, "num_key_value_heads": nkv})
    hd = h // nq
    per_layer = h * nq * hd * 2 + 2 * h * nkv * hd + 2 * h * inter + 2 * 2 * h  # q,o + k,v + up,down + 2 LN (w+b)
    assert s.params_total == n * per_layer + 2 * v * h + 2 * h
    assert s.confidence == "high"


def test_gpt_neox_layout_and_old_checkpoint_buffers_are_low(tmp_path):
    h, n, v, inter = 128, 2, 500, 512
    cfg = {"model_type": "gpt_neox", "hidden_size": h, "num_hidden_layers": n, "vocab_size": v,
           "intermediate_size": inter, "num_attention_heads": 4, "transformers_version": "4.40.0"}
    s = _tiny(tmp_path, cfg)
    per_layer = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (inter * h + inter) + (h * inter + h)
    assert s.params_total == n * per_layer + 2 * v * h + 2 * h
    assert kv_per_token(s, VLLM) == n * 2 * h * 2 and s.confidence == "high"
    (tmp_path / "old").mkdir()
    old = _tiny(tmp_path / "old", {**cfg, "transformers_version": "4.24.0"})
    assert old.confidence == "low" and any("attention.bias" in a for a in old.assumptions)


def test_cohere2_three_sliding_then_one_full(tmp_path):
    cfg = {"model_type": "cohere2", "hidden_size": 256, "num_hidden_layers": 8, "vocab_size": 1000,
           "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2, "sliding_window": 4096,
           "max_position_embeddings": 131072}
    s = _tiny(tmp_path, cfg)
    # layers 3 and 7 are full: 2 layers x K+V x 2 heads x 64 x 2 B grow with context
    assert kv_per_token(s, VLLM) == 2 * 2 * 2 * 64 * 2
    assert [lay.attention for lay in s.layers].count("full") == 2


def _deci_count(cfg: dict) -> tuple[int, int]:
    """Hand count of a DeciLM checkpoint from its block_configs (vLLM nemotron_nas.py's layer rules):
    (parameters, K+V bf16 bytes per token)."""
    h, nq, v = cfg["hidden_size"], cfg["num_attention_heads"], cfg["vocab_size"]
    hd = h // nq
    params, kv = 2 * v * h + h, 0  # embed + untied lm_head + final norm
    for b in cfg["block_configs"]:
        if not b["attention"]["no_op"]:
            nkv = nq // b["attention"]["n_heads_in_group"]
            params += 2 * h * nq * hd + 2 * h * nkv * hd + h  # q, o; k, v; input_layernorm
            kv += 2 * nkv * hd * 2
        if not b["ffn"]["no_op"]:
            inter = int(2 * b["ffn"]["ffn_mult"] * h / 3)
            inter += -inter % 256  # up to a multiple of 256
            params += 3 * h * inter + h  # gate, up, down; post_attention_layernorm
    return params, kv


def test_nemotron_nas_super_49b_block_configs(tmp_path):
    # nvidia/Llama-3_3-Nemotron-Super-49B-v1 config.json (copied in NVIDIA-NeMo/Megatron-Bridge
    # llama_nemotron_config.py @ 2cec89e): 80 blocks, 49 with attention (8 KV heads), 31 no-op attention
    cfg = json.loads((HERE / "Llama-3_3-Nemotron-Super-49B-v1.json").read_text())
    params, kv = _deci_count(cfg)
    assert (params, kv) == (49_867_145_216, 200_704)  # the model card's "49.9B" parameters
    s = _load(tmp_path, "Llama-3_3-Nemotron-Super-49B-v1")
    assert s.params_total == params and s.weights.resident_bytes == s.checkpoint_bytes == 2 * params
    assert kv_per_token(s, VLLM) == kv == 49 * 2 * 8 * 128 * 2  # was 80 Llama layers: 327,680
    assert s.confidence == "high"
    assert sum(1 for layer in s.layers if not layer.has_kv) == 31


def test_nemotron_nas_ultra_253b_ffn_no_op_blocks(tmp_path):
    # nvidia/Llama-3_1-Nemotron-Ultra-253B-v1 (same source): 162 blocks, 81 with neither attention nor FFN,
    # FFN widths from ffn_mult 0.4875 to 39.0
    cfg = json.loads((HERE / "Llama-3_1-Nemotron-Ultra-253B-v1.json").read_text())
    params, kv = _deci_count(cfg)
    assert (params, kv) == (253_401_268_224, 262_144)  # the card's "253B"
    s = _load(tmp_path, "Llama-3_1-Nemotron-Ultra-253B-v1")
    assert s.params_total == params and kv_per_token(s, VLLM) == kv
    assert s.confidence == "high"


def test_nemotron_nas_bad_block_plan_is_one_line(tmp_path):
    import pytest

    from planner.core.errors import ConfigError

    cfg = {"model_type": "nemotron-nas", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "vocab_size": 100, "block_configs": [{"attention": {"n_heads_in_group": 3}, "ffn": {"ffn_mult": 1.0}}] * 2}
    with pytest.raises(ConfigError, match="n_heads_in_group"):
        _tiny(tmp_path, cfg)
    (tmp_path / "b").mkdir()
    with pytest.raises(ConfigError, match="one block per layer"):
        _tiny(tmp_path / "b", {**cfg, "block_configs": cfg["block_configs"][:1]})


def test_gemma4_moe_block_keeps_the_dense_mlp_beside_the_experts(tmp_path):
    # google/gemma-4-26B-A4B-it text_config (gemma-4-26B-A4B-it.text.json: the keys its loaders read, as
    # mlx-community/gemma-4-26b-a4b-it-4bit @ 0d77464 and the model card's config.json agree; vision dropped)
    h, n, v, nq, kv, gkv, hd, ghd, inter, mi, e = 2816, 30, 262144, 16, 8, 2, 256, 512, 2112, 704, 128
    full = [(i + 1) % 6 == 0 for i in range(n)]
    sliding_attn = 2 * h * nq * hd + 2 * h * kv * hd + 2 * hd  # q, o; k, v; q/k norms
    global_attn = 2 * h * nq * ghd + h * gkv * ghd + 2 * ghd  # q, o; k only (attention_k_eq_v)
    dense = 4 * h + 1 + 3 * h * inter  # four norms, layer_scalar, gated MLP
    moe = e * h + h + e + e * 2 * mi * h + e * h * mi + 3 * h  # router proj/scale/per_expert_scale, experts, 3 norms
    params = v * h + h + sum((global_attn if f else sliding_attn) + dense + moe for f in full)
    assert params == 25_233_141_790
    s = _load(tmp_path, "gemma-4-26B-A4B-it.text")
    assert s.params_total == params and s.checkpoint_bytes == 2 * params  # was 2.9e9: the experts missing
    assert s.confidence == "high"
    # 8 of 128 experts per token; the dense MLP is always on
    assert s.params_active == params - n * 3 * mi * h * (e - 8)
    # K+V of the 5 full layers (2 kv x 512, V written from K); sliding layers hold their 1024-token window
    assert kv_per_token(s, VLLM) == 5 * 2 * gkv * ghd * 2


def test_hunyuan_a13b_per_layer_moe_lists_answer_instead_of_refusing(tmp_path):
    # tencent/Hunyuan-A13B-Instruct config.json (as a public test fixture transcribes it: HunYuanMoEV1ForCausalLM,
    # moe_intermediate_size / moe_topk / num_shared_expert one per layer); was exit 2 ('must be an integer')
    h, n, v, nq, nkv, hd, e, mi, shared = 4096, 32, 128167, 32, 8, 128, 64, 3072, 3072
    attn = 2 * h * nq * hd + 2 * h * nkv * hd + 2 * hd  # q, o; k, v; query/key_layernorm
    layer = attn + 2 * h + e * h + e * 3 * mi * h + 3 * h * shared  # 2 norms, gate wg, 64 experts, shared_mlp
    params = n * layer + v * h + h  # tied embeddings, final norm
    assert params == 80_393_183_232  # Tencent: "80B total parameters, 13B active"
    s = _load(tmp_path, "Hunyuan-A13B-Instruct")
    assert s.params_total == params and s.checkpoint_bytes == 2 * params
    assert s.params_active == params - n * 3 * mi * h * (e - 8) == 12_747_448_320  # 8 of 64 experts: "13B"
    assert kv_per_token(s, VLLM) == n * 2 * nkv * hd * 2
    assert s.confidence == "high"


def test_hunyuan_list_of_the_wrong_length_is_one_line(tmp_path):
    import pytest

    from planner.core.errors import ConfigError

    cfg = {"model_type": "hunyuan_v1_moe", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "vocab_size": 100, "intermediate_size": 32, "num_experts": 4, "moe_topk": [2, 2],
           "moe_intermediate_size": [16, 16, 16]}
    with pytest.raises(ConfigError, match="one per layer"):
        _tiny(tmp_path, cfg)


def test_mimo_v2_hybrid_layer_pattern_swa_heads_v_head_dim_and_mtp(tmp_path):
    # XiaomiMiMo/MiMo-V2.6-Flash config.json text keys (MiMo-V2.6-Flash.text.json; as a public test header
    # transcribes it, quantization_config left out here): 48 layers, hybrid_layer_pattern 1 = sliding
    h, v, inter, e, mi = 4096, 152576, 16384, 256, 2048
    cfg = json.loads((HERE / "MiMo-V2.6-Flash.text.json").read_text())
    sliding = [x == 1 for x in cfg["hybrid_layer_pattern"]]
    assert sum(sliding) == 39
    full_attn = h * (64 * 192 + 4 * 192 + 4 * 128) + 64 * 128 * h  # fused qkv (q, k at 192; v at 128) + o
    swa_attn = h * (64 * 192 + 8 * 192 + 8 * 128) + 64 * 128 * h + 64  # + attention_sink_bias [heads]
    moe = e * h + e + e * 3 * mi * h  # gate (fp32), e_score_correction_bias (fp32), 256 experts
    dense = 3 * h * inter
    params = 2 * v * h + h + sum((swa_attn if s else full_attn) + 2 * h + (moe if i else dense)
                                 for i, s in enumerate(sliding))
    assert params == 308_778_780_864  # Xiaomi: "309B total parameters, 15B active"
    s = _load(tmp_path, "MiMo-V2.6-Flash.text")
    assert s.params_total == params and s.confidence == "high"
    assert s.weights.resident_bytes == 2 * params + 47 * 2 * (e * h + e)  # the 47 routers are kept in fp32
    # only the 9 full layers grow: 4 kv heads x (192 K + 128 V) x 2 B; was 6.4x with one kind for all
    assert kv_per_token(s, VLLM) == 9 * 4 * (192 + 128) * 2 == 23_040
    # 3 MTP layers (enorm, hnorm, eh_proj, a sliding attention with sinks, a dense MLP, 3 more norms)
    mtp = 3 * (5 * h + 2 * h * h + swa_attn + dense)
    assert s.mtp is not None and s.mtp.params == mtp and s.checkpoint_bytes == s.weights.resident_bytes + 2 * mtp


def test_fp8_store_dtype_other_than_fp8_is_a_guess_and_ignored_layers_stay_16_bit(tmp_path):
    base = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 2,
            "vocab_size": 1000, "intermediate_size": 512, "torch_dtype": "bfloat16"}
    fp8 = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    plain = _tiny(tmp_path, {**base, "quantization_config": fp8})
    (tmp_path / "i").mkdir()
    kept = _tiny(tmp_path / "i", {**base, "quantization_config": {
        **fp8, "ignored_layers": ["model.layers.0.self_attn.o_proj"]}})
    # o_proj [256, 256]: fp8 1 B + a 2x2 fp32 scale_inv grid -> bf16 2 B, no scale (vLLM Fp8Config ignored_layers)
    assert kept.checkpoint_bytes - plain.checkpoint_bytes == 256 * 256 * (2 - 1) - 2 * 2 * 4
    (tmp_path / "m").mkdir()
    mx = _tiny(tmp_path / "m", {**base, "quantization_config": {**fp8, "store_dtype": "mxfp4"}})
    assert mx.confidence == "low" and any("not modelled" in a for a in mx.assumptions)


def test_molmo_7b_d_bnb_nf4_matches_its_index_total_size(tmp_path):
    # reubzdubz/Molmo7B_D_NF4Quant config.json (tests/fixtures/unseen; truth: its index total_size)
    cfg = json.loads((Path(__file__).parent / "fixtures/unseen/models/Molmo-7B-D-bnb-nf4/config.json").read_text())
    d = tmp_path / "molmo"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    s = load_spec(str(d))
    h, n, v, half = 3584, 28, 152064, 18944
    shapes = [(4608, h), (h, h), (2 * half, h), (h, half)]  # att_proj, attn_out, ff_proj (gate + up), ff_out
    nf4 = sum(r * c // 2 + r * c // 64 * 4 + 16 * 4 for r, c in shapes)  # packed, fp32 absmax per 64, code
    state = sum(len(json.dumps({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [r, c]}))
                for r, c in shapes)  # bitsandbytes pack_dict_to_tensor(json) beside each weight
    llm_fp16 = (v + 128) * h + v * h + h + n * (4608 + 2 * h)  # wte (+128 new), skipped ff_out head, ln_f; biases, norms
    w = 1024
    vit = 23 * (4 * (w * w + w) + 2 * 4096 * w + 4096 + w + 4 * w) + w + 577 * w + w * 588 + 2 * w
    vision = vit + 3 * (w * 2 * w + w) + w * w + w + 2 * half * w + h * half + 2 * 2 * w  # pooling, projector, pad
    assert n * (nf4 + state) + 2 * (llm_fp16 + vision) == 6_661_964_712  # the index total_size, exact
    assert s.checkpoint_bytes == 6_661_964_712  # was 9,058,938,112 (+36%, generic ff_proj as a gated MLP)
    assert kv_per_token(s, VLLM) == n * 2 * 4 * 128 * 2 == 57_344
    assert s.confidence == "high"


def test_dflash_draft_has_fc_over_target_layers_and_no_embedding_or_head(tmp_path):
    # z-lab/Qwen3.5-122B-A10B-DFlash config.json (as a public test fixture trims it: the keys a loader reads);
    # read as the qwen3 its model_type says it would gain a 248,320 x 3072 embedding and head it does not ship
    h, n, nq, nkv, hd, inter, taps = 3072, 6, 32, 8, 128, 9216, 8
    layer = 2 * h * nq * hd + 2 * h * nkv * hd + 2 * hd + 3 * h * inter + 2 * h  # attn, q/k norms, MLP, 2 norms
    params = n * layer + taps * h * h + 2 * h  # fc over 8 target layers; hidden_norm, norm
    s = _load(tmp_path, "Qwen3.5-122B-A10B-DFlash")
    assert s.params_total == params and s.checkpoint_bytes == 2 * params
    assert not any(t.name.endswith(("embed_tokens.weight", "lm_head.weight")) for t in s.weights.tensors)
    assert kv_per_token(s, VLLM) == n * 2 * nkv * hd * 2
    assert s.confidence == "high" and not s.assumptions


def test_chatglm_6b_v1_layout_sized_and_the_head_question_said(tmp_path):
    # THUDM/chatglm-6b config.json (three public copies of it agree): inner_hidden_size, vocab_size, no padded_vocab_size.
    # Before: read with ChatGLM2's defaults (padded vocab 65,024, SwiGLU 13,696, RMSNorm), silently 'high'
    h, n, v, inner = 4096, 28, 130528, 16384
    layer = (3 * h * h + 3 * h) + (h * h + h) + (inner * h + inner) + (h * inner + h) + 2 * 2 * h
    params = n * layer + 2 * v * h + 2 * h  # word_embeddings, lm_head, final LayerNorm (w + b)
    s = _load(tmp_path, "chatglm-6b")
    assert s.params_total == params == 6_707_929_088
    assert kv_per_token(s, VLLM) == n * 2 * h * 2  # no grouping: 32 heads x 128
    assert s.confidence == "low" and any("lm_head" in a for a in s.assumptions)


def test_deepseek_v32_indexer_weights_and_its_key_cache(tmp_path):
    # DeepSeek-V3.2's config.json is V3's with model_type deepseek_v32 and the DSA keys index_n_heads 64,
    # index_head_dim 128, index_topk 2048 (as published configs quote it); V3's own config is the reference copy
    v3 = json.loads((Path(__file__).parent / "fixtures/configs/DeepSeek-V3.json").read_text())
    v32 = {**v3, "model_type": "deepseek_v32", "architectures": ["DeepseekV32ForCausalLM"],
           "index_n_heads": 64, "index_head_dim": 128, "index_topk": 2048}
    for name, cfg in (("v3", v3), ("v32", v32)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(cfg))
    a, b = load_spec(str(tmp_path / "v3")), load_spec(str(tmp_path / "v32"))
    h, q_lora, n, d = 7168, 1536, 64, 128
    params = n * d * q_lora + d * h + 2 * d + n * h  # wq_b, wk, k_norm (w + b), weights_proj
    # fp8 e4m3 wq_b / wk with fp32 scales per 128 x 128 block; k_norm and weights_proj stay bf16
    stored = n * d * q_lora + (n * d // 128) * (q_lora // 128) * 4 + d * h + (h // 128) * 4 + 2 * d * 2 + n * h * 2
    assert b.params_total - a.params_total == 61 * params
    assert b.weights.resident_bytes - a.weights.resident_bytes == 61 * stored
    assert b.checkpoint_bytes - a.checkpoint_bytes == 62 * stored  # the MTP layer has an indexer too
    # one more key per token and layer: vLLM fp8 + an fp32 scale per 128 (132 B); transformers in bf16 (256 B)
    assert kv_per_token(b, VLLM) - kv_per_token(a, VLLM) == 61 * (d + 4)
    hf = Settings(context=8192, resolved_engine=engines.get("transformers"))
    assert kv_per_token(b, hf) - kv_per_token(a, hf) == 61 * d * 2
    assert b.confidence == a.confidence == "high"
