"""Xiaomi MiMo (`mimo`, remote code): the Qwen2 decoder plus `num_nextn_predict_layers` MTP layers.

MiMo's MTP layer (modeling_mimo.py MiMoMTPLayers; vLLM mimo_mtp.py) is a Qwen2 decoder layer
(attention with q/k/v biases, gated MLP, two norms) plus token_layernorm, hidden_layernorm,
input_proj [h, 2h] (no bias) and final_layernorm; it reuses the model's embedding and lm_head.
Stored as `model.mtp_layers.N.*`; resident only for MTP speculation (own ledger row).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from . import qwen2
from .base import ArchSpec, Tensors, mtp_spec


@dataclass
class Args(qwen2.Args):
    """MiMoConfig = Qwen2Config + num_nextn_predict_layers."""

    attention_bias: bool = True
    num_nextn_predict_layers: int = 0


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    # Qwen2Attention: q/k/v biased (the Qwen2 style forces it), o_proj never; MiMo's attention_bias: true
    # means the former
    args.attention_bias = False
    spec = qwen2.to_spec(args, origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv, hd = args.num_key_value_heads or nq, args.head_dim or h // nq
    t = Tensors(spec.dtype)
    for j in range(args.num_nextn_predict_layers):
        p = f"model.mtp_layers.{j}"
        t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd, qkv_bias=True)
        t.mlp(f"{p}.mlp", h, args.intermediate_size)
        for n in ("input_layernorm", "post_attention_layernorm", "token_layernorm", "hidden_layernorm",
                  "final_layernorm"):
            t.norm(f"{p}.{n}", h)
        t.linear(f"{p}.input_proj", 2 * h, h, "other")
    return dataclasses.replace(spec, mtp=mtp_spec(t, args.num_nextn_predict_layers), mtp_tensors=tuple(t.items))
