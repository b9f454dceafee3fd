"""Apertus, Arcee AFM and Jais 2: Llama decoders whose MLP has no gate (up/down only), sized by their own rules.

Before these rules both went through the standard decoder rule, which assumes a gated MLP: +27% (Apertus) and
+38% (Arcee) on transformers' default configs, said `low`. Hand counts below; transformers 5.24 builds the same
models on the meta device with these parameter counts (6,979,596,416 and 4,022,766,080).
"""

from __future__ import annotations

import json

from planner.sources import load_spec


def _dir(tmp_path, cfg):
    d = tmp_path / cfg["model_type"]
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def test_apertus_up_down_xielu_mlp(tmp_path):
    # ApertusConfig's defaults written out (the 8B's shape with a 14336 MLP): 32 layers, 32 heads (no GQA), head 128
    h, inter, n, v = 4096, 14336, 32, 131072
    cfg = {"model_type": "apertus", "architectures": ["ApertusForCausalLM"], "hidden_size": h,
           "intermediate_size": inter, "num_hidden_layers": n, "num_attention_heads": 32, "vocab_size": v,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16", "hidden_act": "xielu", "qk_norm": True,
           "post_norm": False, "mlp_bias": False}
    s = load_spec(str(_dir(tmp_path, cfg)))
    # q/k/v/o 4 h^2, per-head q/k norms 2 x 128, attention/feedforward layernorms, up + down, xIELU's 4 scalars
    layer = 4 * h * h + 2 * 128 + 2 * h + 2 * h * inter + 4
    assert s.architecture == "apertus" and s.confidence == "high"
    assert s.params_total == 2 * v * h + n * layer + h == 6_979_596_416
    names = {t.name for t in s.weights.tensors}
    assert {"model.layers.0.attention_layernorm.weight", "model.layers.0.mlp.act_fn.alpha_p"} <= names
    assert "model.layers.0.mlp.gate_proj.weight" not in names


def test_arcee_up_down_relu2_mlp(tmp_path):
    # ArceeConfig's defaults written out (AFM-4.5B's shape): 2560 wide, 18432 MLP, 32 layers, 32 heads
    h, inter, n, v = 2560, 18432, 32, 32000
    cfg = {"model_type": "arcee", "architectures": ["ArceeForCausalLM"], "hidden_size": h,
           "intermediate_size": inter, "num_hidden_layers": n, "num_attention_heads": 32, "vocab_size": v,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16", "hidden_act": "relu2"}
    s = load_spec(str(_dir(tmp_path, cfg)))
    layer = 4 * h * h + 2 * h + 2 * h * inter
    assert s.architecture == "arcee" and s.confidence == "high"
    assert s.params_total == 2 * v * h + n * layer + h == 4_022_766_080


def test_jais2_layernorm_and_biased_up_down_mlp(tmp_path):
    # Jais2Config's defaults written out: 3328 wide, 26 heads of 128, 26624 MLP, biases on attention and MLP,
    # LayerNorm (weight + bias) everywhere; the standard decoder rule's gated MLP put it +35%
    h, inter, n, v = 3328, 26624, 32, 150272
    cfg = {"model_type": "jais2", "architectures": ["Jais2ForCausalLM"], "hidden_size": h,
           "intermediate_size": inter, "num_hidden_layers": n, "num_attention_heads": 26, "vocab_size": v,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16", "attention_bias": True, "mlp_bias": True}
    s = load_spec(str(_dir(tmp_path, cfg)))
    layer = 4 * (h * h + h) + 2 * (h * inter) + inter + h + 2 * 2 * h
    assert s.architecture == "jais2" and s.confidence == "high"
    assert s.params_total == 2 * v * h + n * layer + 2 * h == 8_090_401_280
