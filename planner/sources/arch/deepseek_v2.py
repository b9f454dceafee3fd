"""DeepSeek-V2 (and V3 via deepseek_v3.py): Multi-head Latent Attention + shared/routed experts.

MLA caches one latent per token, (kv_lora_rank + qk_rope_head_dim) wide, in engines
that implement it (vLLM, SGLang, llama.cpp); transformers expands K/V to full heads
(num_heads x (qk_nope + qk_rope) for K, num_heads x v_head_dim for V).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import MLA, LayerSpec, MoESpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """DeepseekV2Config defaults (transformers)."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 102400
    hidden_size: int = 4096
    intermediate_size: int = 11008
    moe_intermediate_size: int = 1407
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    q_lora_rank: int | None = 1536
    kv_lora_rank: int = 512
    qk_nope_head_dim: int = 128
    qk_rope_head_dim: int = 64
    v_head_dim: int = 128
    n_routed_experts: int | None = 64
    n_shared_experts: int | None = 2
    num_experts_per_tok: int | None = 6
    first_k_dense_replace: int = 0
    moe_layer_freq: int = 1
    topk_method: str = "greedy"
    num_nextn_predict_layers: int = 0


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "kv_lora_rank", origin=origin)
    h, nh = args.hidden_size, args.num_attention_heads
    qk_dim = args.qk_nope_head_dim + args.qk_rope_head_dim
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    n_exp = args.n_routed_experts or 0
    moe = None
    if n_exp:
        shared = (args.n_shared_experts or 0) * args.moe_intermediate_size
        moe = MoESpec(experts=n_exp, experts_per_token=args.num_experts_per_tok or 6,
                      expert_intermediate=args.moe_intermediate_size,
                      shared_experts=args.n_shared_experts or 0,
                      shared_intermediate=shared)
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"model.layers.{i}"
        a = f"{p}.self_attn"
        if args.q_lora_rank:
            t.linear(f"{a}.q_a_proj", h, args.q_lora_rank, "attention", args.attention_bias)
            t.norm(f"{a}.q_a_layernorm", args.q_lora_rank)
            t.linear(f"{a}.q_b_proj", args.q_lora_rank, nh * qk_dim, "attention")
        else:
            t.linear(f"{a}.q_proj", h, nh * qk_dim, "attention")
        # kv_a: hidden -> latent (kv_lora_rank) + shared rope key (qk_rope_head_dim)
        t.linear(f"{a}.kv_a_proj_with_mqa", h, args.kv_lora_rank + args.qk_rope_head_dim, "attention",
                 args.attention_bias)
        t.norm(f"{a}.kv_a_layernorm", args.kv_lora_rank)
        t.linear(f"{a}.kv_b_proj", args.kv_lora_rank, nh * (args.qk_nope_head_dim + args.v_head_dim),
                 "attention")
        t.linear(f"{a}.o_proj", nh * args.v_head_dim, h, "attention", args.attention_bias)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        sparse = moe is not None and i >= args.first_k_dense_replace and i % max(args.moe_layer_freq, 1) == 0
        if sparse:
            t.router(f"{p}.mlp", h, n_exp, correction_bias=args.topk_method == "noaux_tc")
            t.experts(f"{p}.mlp", h, n_exp, args.moe_intermediate_size)
            if moe.shared_intermediate:
                t.mlp(f"{p}.mlp.shared_experts", h, moe.shared_intermediate)
        else:
            t.mlp(f"{p}.mlp", h, args.intermediate_size)
        layers.append(LayerSpec(attention=MLA, q_heads=nh, kv_heads=nh, head_dim_k=qk_dim,
                                head_dim_v=args.v_head_dim, kv_lora_rank=args.kv_lora_rank,
                                rope_dim=args.qk_rope_head_dim, ffn="moe" if sparse else "dense",
                                ffn_width=args.moe_intermediate_size if sparse else args.intermediate_size))
    notes = []
    if args.num_nextn_predict_layers:
        notes.append(f"{args.num_nextn_predict_layers} MTP layer(s) not counted: loaded only for MTP speculation")
    return finish(args, t, layers, dtype_known=known, moe=moe, notes=notes)
