"""GPT-era families still used as drafts and targets (StarCoder, OPT, GPT-J, CodeGen, GPT-Neo, MPT), sized by
their own rules.

Before these rules every one of them was refused (exit 2: their configs spell sizes n_embd / d_model / ffn_dim,
not the standard decoder keys) or, for OPT, sized by the standard decoder rule at -47% (low). Hand counts
below from each transformers modeling file's shapes; transformers 5.24 builds the same models on the meta
device with the same parameter counts (checked tensor by tensor, benchmarks/bench_meta_defaults.py).
"""

from __future__ import annotations

import json

import pytest

from planner import engines
from planner.fits.memory import Settings, kv_per_token
from planner.sources import load_spec

VLLM = Settings(context=4096, resolved_engine=engines.get("vllm"))


def _spec(tmp_path, cfg):
    d = tmp_path / cfg["model_type"]
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    return load_spec(str(d), inventory="analytic")


def _opt(h, layers, heads, ffn, wepd, before):
    return {"model_type": "opt", "architectures": ["OPTForCausalLM"], "hidden_size": h, "num_hidden_layers": layers,
            "num_attention_heads": heads, "ffn_dim": ffn, "max_position_embeddings": 2048, "vocab_size": 50272,
            "word_embed_proj_dim": wepd, "do_layer_norm_before": before, "torch_dtype": "float16",
            "activation_function": "relu", "enable_bias": True}


def test_opt_125m(tmp_path):
    """facebook/opt-125m: embed 50272 x 768, positions (2048 + 2) x 768, per layer q/k/v/out 4(d^2 + d),
    two LayerNorms 4d, fc1 3072 d + 3072, fc2 3072 d + d = 7,087,872 x 12, final LayerNorm 2d. Another project's
    test (inference_profile opt_assets) states its fp16 weights as 250,478,592 B: the same figure."""
    s = _spec(tmp_path, _opt(768, 12, 12, 3072, 768, True))
    d = 768
    layer = 4 * (d * d + d) + 4 * d + (3072 * d + 3072) + (3072 * d + d)
    assert layer == 7_087_872
    assert s.architecture == "opt" and s.confidence == "high"
    assert s.params_total == 50272 * d + 2050 * d + 12 * layer + 2 * d == 125_239_296
    assert s.weights.resident_bytes == 250_478_592
    assert kv_per_token(s, VLLM) == 12 * 2 * d * 2  # MHA


def test_opt_350m_projects_between_widths_and_has_no_final_norm(tmp_path):
    """facebook/opt-350m: 512-wide embeddings projected to 1024 (project_in / project_out, no bias), post-norm
    layers (do_layer_norm_before false: no decoder final_layer_norm), head [50272, 512] tied to embed_tokens.
    The same project states 662,392,832 B at fp16."""
    s = _spec(tmp_path, _opt(1024, 24, 16, 4096, 512, False))
    d = 1024
    layer = 4 * (d * d + d) + 4 * d + (4096 * d + 4096) + (4096 * d + d)
    assert s.params_total == 50272 * 512 + 2050 * d + 2 * 512 * d + 24 * layer == 331_196_416
    assert s.weights.resident_bytes == 662_392_832
    names = {t.name for t in s.weights.tensors}
    assert "model.decoder.project_in.weight" in names and "model.decoder.final_layer_norm.weight" not in names


def test_starcoder_multi_query(tmp_path):
    """bigcode/starcoder (config as the Hub ships it: n_embd 6144, 48 heads, 40 layers, n_inner 24576,
    8192 positions, vocab 49152, multi_query, tied, float32): c_attn [6144 + 2 x 128, 6144] + bias, c_proj,
    two LayerNorms, c_fc / c_proj with biases; wte + wpe + ln_f. 15,517,456,384 params (the "15.5B").
    KV per token: one K and one V head of 128 per layer (MQA) = 40 x 2 x 128 x 2 B at fp16 = 20,480 B,
    where an MHA reading would say 983,040."""
    cfg = {"model_type": "gpt_bigcode", "architectures": ["GPTBigCodeForCausalLM"], "n_embd": 6144, "n_head": 48,
           "n_layer": 40, "n_inner": 24576, "n_positions": 8192, "vocab_size": 49152, "multi_query": True,
           "tie_word_embeddings": True, "torch_dtype": "float32", "transformers_version": "4.28.1"}
    s = _spec(tmp_path, cfg)
    d = 6144
    layer = (d * (d + 256) + d + 256) + (d * d + d) + 4 * d + (24576 * d + 24576) + (24576 * d + d)
    assert layer == 379_128_064
    assert s.architecture == "gpt_bigcode" and s.confidence == "high"
    assert s.params_total == 49152 * d + 8192 * d + 40 * layer + 2 * d == 15_517_456_384
    assert s.weights.resident_bytes == 4 * 15_517_456_384
    assert kv_per_token(s, Settings(context=4096, kv_dtype="f16", resolved_engine=engines.get("vllm"))) == 20_480


def test_codegen_350m_fuses_qkv(tmp_path):
    """Salesforce/codegen-350M-mono: GPT-J's block with qkv_proj [3d, d] (no bias), fc_in/fc_out with biases,
    one LayerNorm per block, untied lm_head with a bias."""
    cfg = {"model_type": "codegen", "architectures": ["CodeGenForCausalLM"], "n_embd": 1024, "n_layer": 20,
           "n_head": 16, "n_positions": 2048, "rotary_dim": 32, "vocab_size": 51200, "tie_word_embeddings": False,
           "torch_dtype": "float16", "transformers_version": "4.21.0.dev0"}
    s = _spec(tmp_path, cfg)
    d = 1024
    layer = 2 * d + 3 * d * d + d * d + (4 * d * d + 4 * d) + (4 * d * d + d)
    assert s.params_total == 51200 * d + 20 * layer + 2 * d + (51200 * d + 51200) == 356_712_448
    assert "transformer.h.0.attn.qkv_proj.weight" in {t.name for t in s.weights.tensors}
    # saved by transformers < 4.31: the causal-mask buffers it may store are named, not guessed silently
    assert s.confidence == "low" and any("attention.bias" in a for a in s.assumptions)


def test_gpt_neo_local_layers_cache_a_window(tmp_path):
    """EleutherAI/gpt-neo-1.3B: attention_types [[["global", "local"], 12]], window 256. Separate q/k/v
    without bias, out_proj with one, learned positions, tied head: 1,315,575,808 params. Only the 12 global
    layers grow with context: 12 x 2 x 2048 x 2 B = 98,304 B per token; the local ones hold 256 tokens."""
    cfg = {"model_type": "gpt_neo", "architectures": ["GPTNeoForCausalLM"], "hidden_size": 2048, "num_layers": 24,
           "num_heads": 16, "max_position_embeddings": 2048, "vocab_size": 50257, "window_size": 256,
           "attention_types": [[["global", "local"], 12]], "torch_dtype": "float16",
           "transformers_version": "4.31.0"}
    s = _spec(tmp_path, cfg)
    d = 2048
    layer = 4 * d + 3 * d * d + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d)
    assert s.confidence == "high"
    assert s.params_total == 50257 * d + 2048 * d + 24 * layer + 2 * d == 1_315_575_808
    assert [x.attention for x in s.layers[:2]] == ["full", "sliding"] and s.layers[1].window == 256
    assert kv_per_token(s, VLLM) == 98_304


def test_gpt_neo_rejects_a_plan_of_the_wrong_length(tmp_path):
    cfg = {"model_type": "gpt_neo", "hidden_size": 64, "num_layers": 4, "num_heads": 4, "vocab_size": 100,
           "attention_types": [[["global", "local"], 3]]}
    with pytest.raises(Exception, match="expands to 6 layers"):
        _spec(tmp_path, cfg)


def test_mpt_7b_and_a_grouped_query_variant(tmp_path):
    """mosaicml/mpt-7b: d_model 4096, 32 heads, 32 layers, expansion 4, vocab 50432, no biases (norms keep
    their weight only), ALiBi (no position table), tied: 6,649,286,656 params. llm-foundry's grouped-query
    configs (attn_config attn_type grouped_query_attention, kv_n_heads 8) narrow Wqkv to d + 2 x 8 x 128."""
    base = {"model_type": "mpt", "architectures": ["MPTForCausalLM"], "d_model": 4096, "n_heads": 32,
            "n_layers": 32, "expansion_ratio": 4, "max_seq_len": 2048, "vocab_size": 50432, "no_bias": True,
            "attn_config": {"alibi": True, "attn_type": "multihead_attention"}, "torch_dtype": "bfloat16"}
    s = _spec(tmp_path, base)
    d = 4096
    layer = 2 * d + 3 * d * d + d * d + 2 * 4 * d * d
    assert s.architecture == "mpt" and s.confidence == "high"
    assert s.params_total == 50432 * d + 32 * layer + d == 6_649_286_656
    gqa = dict(base, model_type="mpt", attn_config={"alibi": True, "attn_type": "grouped_query_attention",
                                                    "kv_n_heads": 8})
    (tmp_path / "g").mkdir()
    g = _spec(tmp_path / "g", gqa)
    assert s.params_total - g.params_total == 32 * d * 2 * (d - 8 * 128)
    assert kv_per_token(g, VLLM) == 32 * 2 * 8 * 128 * 2
