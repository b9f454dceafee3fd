"""Aria's text model (`aria_text`, rhymes-ai Aria): a Llama-layout decoder whose every MLP is a routed MoE plus
always-on shared experts.

transformers modeling_aria.py: AriaTextMoELayer (:319-326) = router [moe_num_experts, h] (a bare weight,
AriaTextTopKRouter :263-268), experts gate_up_proj [E, h, 2 x intermediate] and down_proj (the fused v5 layout,
each expert intermediate_size wide), shared_experts: one gated MLP intermediate_size x moe_num_shared_experts
wide (AriaSharedExpertsMLP :242); input / post_attention RMSNorms (:495-496); q/k/v/o under attention_bias.
The standard rule missed the shared experts: -17% at the config defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec, MoESpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs


@dataclass
class Args(DecoderArgs):
    """AriaTextConfig defaults."""

    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 4096
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    moe_num_experts: int = 8
    moe_topk: int = 2
    moe_num_shared_experts: int = 2


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "moe_num_experts", "intermediate_size", origin=origin)
    h, nq, inter = args.hidden_size, args.num_attention_heads, args.intermediate_size
    nkv, hd = args.num_key_value_heads or nq, args.head_dim or h // nq
    n, shared = args.moe_num_experts, inter * args.moe_num_shared_experts
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"model.layers.{i}"
        t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                    qkv_bias=args.attention_bias, o_bias=args.attention_bias)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        t.add(f"{p}.mlp.router.weight", (n, h), "other")
        t.experts(f"{p}.mlp", h, n, inter)
        if shared:
            t.mlp(f"{p}.mlp.shared_experts", h, shared)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd, ffn="moe", ffn_width=inter))
    moe = MoESpec(experts=n, experts_per_token=args.moe_topk, expert_intermediate=inter,
                  shared_experts=1 if shared else 0, shared_intermediate=shared)
    return finish(args, t, layers, dtype_known=known, moe=moe)
