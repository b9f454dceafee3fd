"""GLM-4.5 (`glm4_moe`, planner/sources/arch/glm4_moe.py): sized by its own rule, its MTP layer on its own row.

tests/fixtures/configs/GLM-4.5-Air.json is GLM-4.5-Air's Glm4MoeConfig as ms-swift prints it from the Hub config
(transformers 4.54.1). Before this rule it was sized by the standard decoder rule (o_proj biases it does not
have, no router correction bias) with "MTP layer declared: not sized", so no MTP plan was possible.
"""

from __future__ import annotations

from planner import engines
from planner.fits.memory import Settings, kv_per_token
from planner.sources import load_spec

H, HEADS, KV, HD, INTER, E, EI, V, N = 4096, 96, 8, 128, 10944, 128, 1408, 151552, 46


def _attention() -> int:
    # q/k/v with biases (attention_bias true), o_proj without (modeling_glm4_moe.py:188-197), two norms
    return (H * HEADS * HD + HEADS * HD) + 2 * (H * KV * HD + KV * HD) + HEADS * HD * H + 2 * H


def _moe_layer() -> int:
    # router + fp32 correction bias, 128 experts x SwiGLU 1408, one shared expert of 1408
    return _attention() + E * H + E + E * 3 * EI * H + 3 * EI * H


def test_glm45_air_by_hand(make_model_dir):
    s = load_spec(str(make_model_dir("GLM-4.5-Air")))
    assert s.architecture == "glm4_moe"
    dense = _attention() + 3 * INTER * H  # first_k_dense_replace 1
    body = 2 * V * H + dense + (N - 1) * _moe_layer() + H  # untied embedding + head, final norm
    assert s.params_total == body == 106_852_251_264  # published: "106B total"
    # active: 8 of 128 experts; "12B active" counts no embedding or head
    assert s.params_active - 2 * V * H == body - 2 * V * H - (N - 1) * (E - 8) * 3 * EI * H
    assert 12.1e9 < s.params_active - 2 * V * H < 12.3e9
    # the MTP layer: one more MoE layer + enorm / hnorm / shared_head.norm + eh_proj [h, 2h] + the embed/head copies
    assert s.mtp is not None and s.mtp.layers == 1
    assert s.mtp.params == _moe_layer() + 3 * H + 2 * H * H + 2 * V * H == 3_616_573_568
    assert s.checkpoint_bytes == 2 * (body + s.mtp.params)
    # the copies (1.1% of the checkpoint) are stored by GLM-4.5's release, not by GLM-4.6's: the figure says so
    assert s.confidence == "low"
    assert any("shared_head.head copies" in a for a in s.assumptions)
    # GQA: 8 KV heads x 128 per layer for K and V, bf16
    assert kv_per_token(s, Settings(resolved_engine=engines.get("vllm"))) == N * 2 * KV * HD * 2


def test_glm45_size_class_copies_within_tolerance(make_model_dir):
    # GLM-4.5 / 4.6 / 4.7 (hidden 5120, 92 layers, 160 experts of 1536, 3 dense layers, q/k norms): the copies are
    # 0.43% of the checkpoint, inside the 0.5% a stored figure is held to, so they cannot make it wrong
    s = load_spec(str(make_model_dir("GLM-4.5-Air", hidden_size=5120, num_hidden_layers=92, intermediate_size=12288,
                                      moe_intermediate_size=1536, n_routed_experts=160, first_k_dense_replace=3,
                                      use_qk_norm=True)))
    copies = 2 * V * 5120 * 2
    assert 0.004 < copies / s.checkpoint_bytes < 0.005
    assert s.confidence == "high"
    # published "355B total, 32B active" (active without the embedding and head)
    assert 352e9 < s.params_total < 356e9 and 31.5e9 < s.params_active - 2 * V * 5120 < 32.5e9
