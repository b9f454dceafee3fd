"""Arcee Trinity (`afmoe`): gated attention with q/k norms, sliding/full layers, routed + shared experts.

transformers modeling_afmoe.py: attention q/k/v/o biased under attention_bias, per-head q/k RMSNorm and an output
gate `gate_proj` [heads x head_dim, hidden] (:318-337); four norms per layer (input / post_attention /
pre_mlp / post_mlp, :405-410); the first `num_dense_layers` a SwiGLU of intermediate_size, the rest a router
`mlp.router.gate` (:140), fused experts (:166-167), `num_shared_experts` x moe_intermediate_size shared experts
and an fp32 `expert_bias` (:209-211). AfmoeConfig.__post_init__ makes every `global_attn_every_n_layers`-th
layer full attention and the rest sliding (configuration_afmoe.py), unless layer_types is given.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import FULL, SLIDING, LayerSpec, MoESpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """AfmoeConfig defaults."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 200192
    hidden_size: int = 2048
    intermediate_size: int = 6144
    moe_intermediate_size: int = 1408
    num_hidden_layers: int = 32
    num_dense_layers: int = 1
    num_attention_heads: int = 16
    num_key_value_heads: int | None = None
    head_dim: int = 128
    max_position_embeddings: int = 16384
    tie_word_embeddings: bool = False
    num_experts: int = 64
    num_experts_per_tok: int = 6
    num_shared_experts: int = 2
    global_attn_every_n_layers: int = 4
    sliding_window: int | None = 1024
    layer_types: list | None = None
    attention_bias: bool = False


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "head_dim",
                     "global_attn_every_n_layers", origin=origin)
    h, nq, hd, n = args.hidden_size, args.num_attention_heads, args.head_dim, args.num_hidden_layers
    nkv = args.num_key_value_heads or nq
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    types = args.layer_types if isinstance(args.layer_types, list) and len(args.layer_types) == n else [
        "sliding_attention" if (i + 1) % args.global_attn_every_n_layers else "full_attention" for i in range(n)]
    moe = MoESpec(experts=args.num_experts, experts_per_token=args.num_experts_per_tok,
                  expert_intermediate=args.moe_intermediate_size, shared_experts=args.num_shared_experts,
                  shared_intermediate=args.num_shared_experts * args.moe_intermediate_size) if args.num_experts else None
    layers = []
    for i in range(n):
        p = f"model.layers.{i}"
        t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd, qkv_bias=args.attention_bias,
                    o_bias=args.attention_bias, qk_norm="head")
        t.linear(f"{p}.self_attn.gate_proj", h, nq * hd, "attention")
        for name in ("input_layernorm", "post_attention_layernorm", "pre_mlp_layernorm", "post_mlp_layernorm"):
            t.norm(f"{p}.{name}", h)
        sparse = moe is not None and i >= args.num_dense_layers
        if sparse and moe is not None:
            t.add(f"{p}.mlp.router.gate.weight", (moe.experts, h), "other")
            t.experts(f"{p}.mlp", h, moe.experts, moe.expert_intermediate)
            if moe.shared_intermediate:
                t.mlp(f"{p}.mlp.shared_experts", h, moe.shared_intermediate)
            t.add(f"{p}.mlp.expert_bias", (moe.experts,), "norm", "F32")
        else:
            t.mlp(f"{p}.mlp", h, args.intermediate_size)
        kind = SLIDING if str(types[i]).startswith("sliding") else FULL
        layers.append(LayerSpec(attention=kind, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                window=args.sliding_window if kind == SLIDING else None,
                                ffn="moe" if sparse else "dense",
                                ffn_width=args.moe_intermediate_size if sparse else args.intermediate_size))
    return finish(args, t, layers, dtype_known=known, moe=moe)
