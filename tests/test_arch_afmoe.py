"""Arcee Trinity (`afmoe`, planner/sources/arch/afmoe.py): AfmoeConfig's defaults written out, counted by hand.

Before this rule it went through the standard decoder rule (+2.1%, low: no attention gate, two of its four norms,
no expert bias, the router under the wrong name). transformers 5.24 builds the same model on the meta device
with 19,232,600,000 parameters.
"""

from __future__ import annotations

import json

from planner import engines
from planner.fits.memory import Settings, kv_per_token
from planner.sources import load_spec

H, HEADS, HD, N, V, INTER, EI, E, SHARED = 2048, 16, 128, 32, 200192, 6144, 1408, 64, 2


def test_trinity_defaults_by_hand(tmp_path):
    cfg = {"model_type": "afmoe", "architectures": ["AfmoeForCausalLM"], "hidden_size": H, "num_hidden_layers": N,
           "num_attention_heads": HEADS, "head_dim": HD, "vocab_size": V, "intermediate_size": INTER,
           "moe_intermediate_size": EI, "num_experts": E, "num_experts_per_tok": 6, "num_shared_experts": SHARED,
           "num_dense_layers": 1, "global_attn_every_n_layers": 4, "sliding_window": 1024,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    d = tmp_path / "afmoe"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    s = load_spec(str(d))
    # q/k/v/o (no GQA) + the output gate + per-head q/k norms, four layer norms
    attn = 4 * H * HEADS * HD + H * HEADS * HD + 2 * HD + 4 * H
    dense = attn + 3 * H * INTER
    sparse = attn + E * H + E * 3 * EI * H + 3 * SHARED * EI * H + E
    assert s.architecture == "afmoe" and s.confidence == "high"
    assert s.params_total == 2 * V * H + dense + (N - 1) * sparse + H == 19_232_600_000
    bias = [t for t in s.weights.tensors if t.name.endswith("expert_bias")]
    assert len(bias) == N - 1 and {t.dtype for t in bias} == {"F32"}
    # every 4th layer full attention, the rest a 1024-token window (their cache is bounded, not per token):
    # per token the 8 full layers' K and V, 16 heads of 128 in bf16
    assert sum(layer.window == 1024 for layer in s.layers) == 24
    assert kv_per_token(s, Settings(resolved_engine=engines.get("vllm"))) == 8 * 2 * HEADS * HD * 2
