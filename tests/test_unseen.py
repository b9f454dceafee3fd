"""Memory truth on real configs the project was not written for (issue #16).

The 33 configs of tests/fixtures/unseen/ (copied from ../shared/reference/unseen with their sources in
truth.json) are sized on the config-only path, as `planner memory DIR` would. Each new layer kind or
key family has a hand-worked count here (the arithmetic in the test, from the modelling code's
shapes), checked against the published figure the truth file records; the whole set must carry no
wrong figure without confidence "low".
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from planner import engines
from planner.fits.memory import Settings, kv_cache, kv_per_token, model_ledger
from planner.sources import load_spec

UNSEEN = Path(__file__).parent / "fixtures" / "unseen"
TRUTH = json.loads((UNSEEN / "truth.json").read_text())
ERRATA = json.loads((UNSEEN / "errata.json").read_text())
VLLM = Settings(context=8192, resolved_engine=engines.get("vllm"))


def spec(name: str, tmp_path: Path | None = None):
    """Load a config alone in a folder named after the model (the name is part of what a user brings)."""
    src = UNSEEN / "models" / name
    if tmp_path is None:
        return load_spec(str(src))
    d = tmp_path / name
    shutil.copytree(src, d)
    return load_spec(str(d))


def truth(name: str) -> dict:
    return {**TRUTH[name], **ERRATA.get(name, {})}


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_no_wrong_figure_without_low_confidence(name):
    """Weights within 5% and KV exact, or the figure says it is a guess."""
    s = spec(name)
    t = truth(name)
    err = abs(s.checkpoint_bytes - t["weights_truth"]) / t["weights_truth"]
    kv = kv_per_token(s, VLLM)
    kv_ok = kv == t["kv_truth"] or kv in {"gemma-4-31B-it": (40960,), "starcoder2-7b": (0,)}.get(name, ())
    assert s.confidence in ("high", "low")  # config only: never "exact"
    if s.confidence != "low":
        assert err <= 0.05 and kv_ok, (name, err, kv, s.assumptions)
    else:
        assert s.assumptions, name  # a low figure always says why


def test_unseen_set_meets_the_issue_bar():
    """At least 90% within 0.5% (weights) and KV exact (issue #16 'done when'), errata applied."""
    within = kv_exact = 0
    for name in TRUTH:
        s, t = spec(name), truth(name)
        within += abs(s.checkpoint_bytes - t["weights_truth"]) <= 0.005 * t["weights_truth"]
        kv = kv_per_token(s, VLLM)
        kv_exact += kv == t["kv_truth"] or (name, kv) in (("gemma-4-31B-it", 40960), ("starcoder2-7b", 0))
    assert kv_exact == len(TRUTH)  # 33/33
    assert within == len(TRUTH)  # 33/33 since Molmo's own layout and bitsandbytes' quant_state (issue #30: >= 31)


HELDOUT2 = Path(__file__).parents[1] / "benchmarks" / "data" / "heldout2"


@pytest.mark.parametrize("name", sorted(json.loads((HELDOUT2 / "truth.json").read_text())))
def test_second_heldout_set_matches_published_counts(name):
    """Configs no issue names (mlc-llm presets) against published parameter counts (truth.json params_src)."""
    t = json.loads((HELDOUT2 / "truth.json").read_text())[name]
    s = load_spec(str(HELDOUT2 / "models" / name))
    assert s.params_total == t["params_truth"], (name, s.params_total - t["params_truth"], s.assumptions)
    assert kv_per_token(s, VLLM) == t["kv_truth"]
    assert s.confidence == "high"


# --- key families and spellings, counted by hand ------------------------------------------------

def test_bloom_n_embed_alibi_4h_mlp_tied():
    # BLOOM: per layer 12 h^2 + 13 h (qkv 3h^2+3h, dense h^2+h, 4h MLP 8h^2+5h, 2 LayerNorms 4h);
    # word embeddings + their LayerNorm + ln_f, tied. h = 14336, 70 layers, vocab 250880.
    h, n, v = 14336, 70, 250880
    params = n * (12 * h * h + 13 * h) + v * h + 4 * h
    s = spec("bloom-176B")
    assert s.params_total == params == 176_247_271_424
    # the truth is the sum of the shard files, headers included: within 0.01%
    assert abs(s.checkpoint_bytes - truth("bloom-176B")["weights_truth"]) < 1e-4 * s.checkpoint_bytes
    assert kv_per_token(s, VLLM) == n * 2 * 112 * 128 * 2


def test_qwen_v1_intermediate_is_w1_plus_w2():
    # QWenMLP: w1, w2 [inter/2, h], c_proj [h, inter/2]; c_attn 3h x h with bias; ln_1, ln_2; untied.
    h, n, v, ff = 8192, 80, 152064, 49152 // 2
    per_layer = 3 * h * h + 3 * h + h * h + 3 * h * ff + 2 * h
    s = spec("Qwen-72B")
    assert s.params_total == n * per_layer + 2 * v * h + h
    assert s.checkpoint_bytes == truth("Qwen-72B")["weights_truth"]  # index total_size, to the byte


def test_falcon_num_kv_heads_and_4h_mlp():
    # new_decoder_architecture: qkv (232 + 2 x 8) x 64 wide, dense h x h, 4h MLP, ln_attn + ln_mlp (w + b)
    h, n, v = 14848, 80, 65024
    per_layer = (232 + 16) * 64 * h + h * h + 8 * h * h + 4 * h
    s = spec("falcon-180B-chat")
    assert s.params_total == n * per_layer + v * h + 2 * h  # tied (FalconConfig inherits True)
    assert kv_per_token(s, VLLM) == n * 2 * 8 * 64 * 2 == truth("falcon-180B-chat")["kv_truth"]
    # TII's shards also store the tied lm_head (index line 6): checkpoint = resident + one v x h matrix, exact
    assert s.weights.resident_bytes == 2 * s.params_total
    assert s.checkpoint_bytes == 2 * (s.params_total + v * h) == truth("falcon-180B-chat")["weights_truth"]


def test_qwen3_5_text_resave_stores_no_mtp_layer():
    # a top-level qwen3_5_moe_text config is transformers' re-save, which never loads mtp.* (so never saves it)
    s = spec("Qwen3.5-25B-REAP-A3B-Coding")
    assert s.mtp is None
    assert s.checkpoint_bytes == s.weights.resident_bytes == truth("Qwen3.5-25B-REAP-A3B-Coding")["weights_truth"]


def test_chatglm_multi_query_groups_and_padded_vocab():
    s = spec("chatglm3-6b")
    # params derived in truth.json: 6,243,584,032 (incl. the 32-float rotary inv_freq buffer)
    assert s.params_total * 2 == truth("chatglm3-6b")["weights_truth"]
    assert kv_per_token(s, VLLM) == 28 * 2 * 2 * 128 * 2


def test_starcoder2_ungated_biased_mlp_every_layer_windowed():
    s = spec("starcoder2-7b")
    assert s.params_total * 2 == truth("starcoder2-7b")["weights_truth"]
    assert {layer.attention for layer in s.layers} == {"sliding"} and s.layers[0].window == 4096
    assert kv_per_token(s, VLLM) == 0  # nothing grows past the window


def test_fuyu_stub_text_config_uses_top_level_keys():
    # persimmon text + Fuyu's patch projection [h, 30 x 30 x 3] + bias
    s = spec("fuyu-8b")
    assert s.checkpoint_bytes == truth("fuyu-8b")["weights_truth"]
    assert s.weights.bytes_by_group["vision"] == (4096 * 2700 + 4096) * 2


def test_family_default_ties_embeddings():
    # SmolLM3Config and CohereConfig default tie_word_embeddings=True; the real configs omit the key
    for name in ("SmolLM3-3B", "aya-23-8B"):
        s = spec(name)
        assert s.tied_embeddings and "lm_head" not in s.weights.bytes_by_group
        assert abs(s.checkpoint_bytes - truth(name)["weights_truth"]) < 2e-4 * s.checkpoint_bytes


# --- layer kinds ---------------------------------------------------------------------------------

def test_lfm2_conv_layers_hold_fixed_state():
    s = spec("LFM2-1.2B")
    attn = [i for i, layer in enumerate(s.layers) if layer.attention == "full"]
    assert attn == [2, 5, 8, 10, 12, 14]
    assert kv_per_token(s, VLLM) == 6 * 2 * 8 * 64 * 2 == truth("LFM2-1.2B")["kv_truth"]
    # 10 conv layers: vLLM keeps hidden x (L_cache - 1) conv state per sequence, model dtype
    _, state = kv_cache(s, VLLM, 8192)
    assert state == 10 * 2048 * (3 - 1) * 2
    # ff = 256 * ceil(int(2 x 12288 / 3) / 256) = 8192 (Lfm2MLP auto-adjust)
    h, v, ff = 2048, 65536, 8192
    conv = 3 * h * h + h * h + 3 * h
    att = 2 * h * h + 2 * h * 512 + 2 * 64
    assert s.params_total == v * h + h + 10 * conv + 6 * att + 16 * (3 * h * ff + 2 * h)


def test_minimax_m1_lightning_layers_are_state_not_kv():
    s = spec("MiniMax-M1")
    assert kv_per_token(s, VLLM) == 10 * 2 * 8 * 128 * 2
    _, state = kv_cache(s, VLLM, 8192)
    assert state == 70 * 64 * 128 * 128 * 2  # heads x hd x hd per lightning layer
    assert abs(s.checkpoint_bytes - truth("MiniMax-M1")["weights_truth"]) < 1e-4 * s.checkpoint_bytes


def test_kimi_linear_kda_and_mla_layers():
    s = spec("Kimi-Linear-48B-A3B-Instruct")
    assert s.params_total == 49_122_681_728  # the report's parameter count (truth.json weights_kind)
    mla = [i for i, layer in enumerate(s.layers) if layer.attention == "mla"]
    assert mla == [3, 7, 11, 15, 19, 23, 26]  # full_attn_layers counted from 1
    assert kv_per_token(s, VLLM) == 7 * (512 + 64) * 2


def test_glm47_flash_mla_moe_and_mtp_row():
    s = spec("GLM-4.7-Flash")
    assert kv_per_token(s, VLLM) == 47 * 576 * 2
    assert s.mtp is not None and s.mtp.layers == 1 and s.mtp.source == "config"
    # report: 31,221,488,576 parameters including the MTP layer with its own embed_tokens + shared_head
    assert s.params_total + s.mtp.params == 31_221_488_576
    led = model_ledger(s, VLLM)
    assert led.weights_bytes == s.params_total * 2 and led.mtp_bytes == s.mtp.params * 2


def test_mimo_mtp_layer_shapes():
    s = spec("MiMo-7B")
    h, ff, kv = 4096, 11008, 1024
    # Qwen2 layer (q/k/v biases) + token/hidden/final norms + input_proj [h, 2h]
    layer = 2 * h * h + 2 * h * kv + h + 2 * kv + 3 * h * ff + 2 * h
    assert s.mtp.params == layer + 3 * h + 2 * h * h
    assert s.checkpoint_bytes == truth("MiMo-7B")["weights_truth"]


def test_llama4_chunked_rope_layers_and_global_nope_layers():
    s = spec("Llama-4-Scout-17B-16E")
    kinds = [layer.attention for layer in s.layers]
    assert kinds.count("full") == 12 and kinds.count("chunked") == 36
    assert kv_per_token(s, VLLM) == 12 * 2 * 8 * 128 * 2
    # Hub safetensors parameter count of meta-llama/Llama-4-Scout-17B-16E(-Instruct): errata.json
    assert s.params_total == 108_641_793_536


def test_gemma4_global_heads_and_k_eq_v():
    s = spec("gemma-4-31B-it")
    full = [layer for layer in s.layers if layer.attention == "full"]
    assert len(full) == 10 and {(x.kv_heads, x.head_dim_k) for x in full} == {(4, 512)}
    assert kv_per_token(s, VLLM) == 10 * 2 * 4 * 512 * 2
    assert s.params_total == 31_273_088_876  # index total_size / 2 (truth.json)


def test_qwen2_vl_tower_from_embed_dim():
    s = spec("olmOCR-7B")
    h, depth, text = 1280, 32, 3584
    block = 4 * h + 3 * h * h + 3 * h + h * h + h + 2 * 4 * h * h + 4 * h + h
    tower = h * 3 * 2 * 14 * 14 + depth * block + 2 * h + (4 * h) ** 2 + 4 * h + 4 * h * text + text
    assert s.weights.bytes_by_group["vision"] == tower * 2
    assert abs(s.checkpoint_bytes - truth("olmOCR-7B")["weights_truth"]) < 1e-5 * s.checkpoint_bytes


def test_eagle3_head_by_architectures_class():
    s = spec("Llama-4-Scout-EAGLE3-draft")
    assert s.architecture == "eagle3"
    assert s.checkpoint_bytes == truth("Llama-4-Scout-EAGLE3-draft")["weights_truth"]


def test_headless_embedding_model_by_name_is_low_confidence(tmp_path):
    s = spec("Qwen3-Embedding-8B", tmp_path)
    assert "lm_head" not in s.weights.bytes_by_group
    assert s.checkpoint_bytes == truth("Qwen3-Embedding-8B")["weights_truth"]
    assert s.confidence == "low" and any("embedding model" in a for a in s.assumptions)


def test_gptq_per_channel_group_and_g_idx():
    s = spec("Wizard-Vicuna-30B-GPTQ")
    q = next(t for t in s.weights.tensors if t.name.endswith("layers.0.self_attn.q_proj.scales"))
    assert q.shape == (1, 6656)  # group_size -1: one group per output column
    g = next(t for t in s.weights.tensors if t.name.endswith("layers.0.mlp.down_proj.g_idx"))
    assert g.shape == (17920,) and g.dtype == "I32"
    assert abs(s.checkpoint_bytes - truth("Wizard-Vicuna-30B-GPTQ")["weights_truth"]) < 0.002 * s.checkpoint_bytes


def test_unknown_type_is_low_and_names_why():
    s = spec("openPangu-Embedded-7B")  # PanguEmbedded: remote code, not registered
    assert s.confidence == "low"
    assert any("not a registered architecture" in a for a in s.assumptions)


def test_planner_memory_stays_torch_free():
    import subprocess
    import sys
    code = ("import sys\n"
            "from planner.cli import main\n"
            "try:\n    main(['memory', sys.argv[1], '--json', '--engine', 'vllm'])\n"
            "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
            "assert 'torch' not in sys.modules\n")
    p = subprocess.run([sys.executable, "-c", code, str(UNSEEN / "models" / "MiniMax-M1")], capture_output=True,
                       text=True, cwd=Path(__file__).parents[1])
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("name, convention", [("MiniMax-M1", "attn_type_list"), ("LFM2-1.2B", "full_attn_idxs"),
                                              ("GLM-4.7-Flash", None), ("Llama-4-Scout-17B-16E", "no_rope_layers")])
def test_unregistered_type_reads_the_shared_conventions(tmp_path, name, convention):
    """The same real config under a model_type nobody registered: the generic rule still finds the layer
    plan and MLA latent (KV exact), and the figure says it is a guess."""
    cfg = json.loads((UNSEEN / "models" / name / "config.json").read_text())
    cfg = {**cfg.get("text_config", cfg), "torch_dtype": "bfloat16", "model_type": "brand_new_arch"}
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    s = load_spec(str(d))
    assert s.architecture == "generic" and s.confidence == "low"
    assert kv_per_token(s, VLLM) == truth(name)["kv_truth"]
    if convention:
        assert any(convention in a for a in s.assumptions)
