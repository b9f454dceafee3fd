"""DeepSeek-V2 (and V3 via deepseek_v3.py): Multi-head Latent Attention + shared/routed experts.

MLA caches one latent per token, (kv_lora_rank + qk_rope_head_dim) wide, in engines
that implement it (vLLM, SGLang, llama.cpp); transformers expands K/V to full heads
(num_heads x (qk_nope + qk_rope) for K, num_heads x v_head_dim for V).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import MLA, LayerSpec, MoESpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, mtp_spec, require_positive


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
    mlp_layer_types: list | None = None
    num_key_value_heads: int | None = None  # MLA: every head reads the shared latent; not a cache width
    qk_head_dim: int | None = None  # = qk_nope_head_dim + qk_rope_head_dim (derived the same way below)
    head_dim: int | None = None  # Mistral 4 states it: the q/k head (qk_nope + qk_rope), equal to v_head_dim there


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "kv_lora_rank", origin=origin)
    h = args.hidden_size
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
    layers = [_layer(t, args, f"model.layers.{i}", _sparse(args, moe, i), moe) for i in range(args.num_hidden_layers)]
    mtp_t = Tensors(dtype)
    for j in range(args.num_nextn_predict_layers):
        # DeepSeek-V3 MTP module (modeling in vLLM deepseek_mtp.py): enorm, hnorm, eh_proj [h, 2h], its own
        # embed_tokens and shared_head (norm + head [vocab, h]), then one decoder layer numbered past the rest
        i = args.num_hidden_layers + j
        p = f"model.layers.{i}"
        _layer(mtp_t, args, p, _sparse(args, moe, i), moe)
        mtp_t.norm(f"{p}.enorm", h)
        mtp_t.norm(f"{p}.hnorm", h)
        mtp_t.linear(f"{p}.eh_proj", 2 * h, h, "other")
        mtp_t.add(f"{p}.embed_tokens.weight", (args.vocab_size, h), "embedding")
        mtp_t.norm(f"{p}.shared_head.norm", h)
        mtp_t.add(f"{p}.shared_head.head.weight", (args.vocab_size, h), "lm_head")
    notes = []
    qk_dim = args.qk_nope_head_dim + args.qk_rope_head_dim
    # DeepseekV3Config (and the configs that copy it: Sarvam MLA, Mistral 4) writes head_dim = qk_rope_head_dim
    # (configuration_deepseek_v3.py:123), so a re-saved config carries the rope width there
    explained = (None, qk_dim, args.v_head_dim, args.qk_rope_head_dim)
    guesses = () if args.head_dim in explained else (
        f"head_dim {args.head_dim} is neither the q/k head ({qk_dim}) nor v_head_dim ({args.v_head_dim}): "
        f"a width no rule here reads",)
    if args.num_nextn_predict_layers:
        notes.append(f"{args.num_nextn_predict_layers} MTP layer(s) not resident for plain decoding: on their "
                     f"own row (loaded only for MTP speculation)")
    return finish(args, t, layers, dtype_known=known, moe=moe, notes=notes, guesses=guesses,
                  mtp=mtp_spec(mtp_t, args.num_nextn_predict_layers), mtp_tensors=tuple(mtp_t.items))


def _sparse(args: Args, moe: MoESpec | None, i: int) -> bool:
    """MoE layer or dense: `mlp_layer_types` ("dense"/"sparse", GLM-4.7-Flash) when given, else
    DeepSeek's rule i >= first_k_dense_replace and i % moe_layer_freq == 0 (layers past the decoder,
    MTP, follow the rule)."""
    if moe is None:
        return False
    types = args.mlp_layer_types
    if isinstance(types, list) and i < len(types):
        return str(types[i]) == "sparse"
    return i >= args.first_k_dense_replace and i % max(args.moe_layer_freq, 1) == 0


def _layer(t: Tensors, args: Args, p: str, sparse: bool, moe: MoESpec | None) -> LayerSpec:
    """One MLA decoder layer's tensors into `t`; returns its LayerSpec."""
    h, nh = args.hidden_size, args.num_attention_heads
    qk_dim = args.qk_nope_head_dim + args.qk_rope_head_dim
    t.mla(f"{p}.self_attn", hidden=h, heads=nh, q_lora_rank=args.q_lora_rank, kv_lora_rank=args.kv_lora_rank,
          nope=args.qk_nope_head_dim, rope=args.qk_rope_head_dim, v_dim=args.v_head_dim, bias=args.attention_bias)
    t.norm(f"{p}.input_layernorm", h)
    t.norm(f"{p}.post_attention_layernorm", h)
    if sparse and moe is not None:
        t.router(f"{p}.mlp", h, moe.experts, correction_bias=args.topk_method == "noaux_tc")
        t.experts(f"{p}.mlp", h, moe.experts, args.moe_intermediate_size)
        if moe.shared_intermediate:
            t.mlp(f"{p}.mlp.shared_experts", h, moe.shared_intermediate)
    else:
        t.mlp(f"{p}.mlp", h, args.intermediate_size)
    return LayerSpec(attention=MLA, q_heads=nh, kv_heads=nh, head_dim_k=qk_dim, head_dim_v=args.v_head_dim,
                     kv_lora_rank=args.kv_lora_rank, rope_dim=args.qk_rope_head_dim, ffn="moe" if sparse else "dense",
                     ffn_width=args.moe_intermediate_size if sparse else args.intermediate_size)
