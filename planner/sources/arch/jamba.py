"""AI21 Jamba (`jamba`): Mamba-1 mixers with an attention layer every `attn_layer_period` layers
(from `attn_layer_offset`) and MoE FFNs every `expert_layer_period` layers (from
`expert_layer_offset`), or as `layers_block_type` lists them.

Shapes from transformers modeling_jamba.py: JambaMambaMixer = Mamba-1 plus dt/B/C RMSNorms
(mamba.py `mixer`, mamba_conv_bias / mamba_proj_bias), attention q/k/v/o without bias, gated MLP of
intermediate_size, JambaSparseMoeBlock router [E, h] + E such MLPs; input_layernorm and
pre_ff_layernorm per layer, final_layernorm; JambaConfig ties embeddings by default.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...core.spec import FULL, LayerSpec, MoESpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive
from .mamba import dt_rank_of, mixer


@dataclass
class Args(BaseArgs):
    """JambaConfig defaults."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 65536
    hidden_size: int = 4096
    intermediate_size: int = 14336
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = 8
    max_position_embeddings: int = 262144
    tie_word_embeddings: bool = True
    attn_layer_period: int = 8
    attn_layer_offset: int = 4
    expert_layer_period: int = 2
    expert_layer_offset: int = 1
    layers_block_type: list | None = None
    num_experts: int = 16
    num_experts_per_tok: int = 2
    mamba_d_state: int = 16
    mamba_d_conv: int = 4
    mamba_expand: int = 2
    mamba_dt_rank: int | str = "auto"
    mamba_conv_bias: bool = True
    mamba_proj_bias: bool = False
    use_mamba_kernels: bool = True


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "attn_layer_period", "expert_layer_period", origin=origin)
    h, nq, n = args.hidden_size, args.num_attention_heads, args.num_hidden_layers
    nkv, hd, d_inner = args.num_key_value_heads or nq, h // nq, args.mamba_expand * h
    if isinstance(args.layers_block_type, list) and len(args.layers_block_type) == n:
        attn = [str(x) == "attention" for x in args.layers_block_type]
    else:
        attn = [i % args.attn_layer_period == args.attn_layer_offset for i in range(n)]
    e = args.num_experts if args.num_experts > 1 else 0
    moe = MoESpec(e, args.num_experts_per_tok, args.intermediate_size) if e else None
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("model.embed_tokens.weight", (args.vocab_size, h), "embedding")
    layers = []
    for i in range(n):
        p = f"model.layers.{i}"
        if attn[i]:
            t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd)
            layer = LayerSpec(attention=FULL, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd)
        else:
            layer = mixer(t, f"{p}.mamba", hidden=h, d_inner=d_inner, state=args.mamba_d_state,
                          kernel=args.mamba_d_conv, dt_rank=dt_rank_of(args.mamba_dt_rank, h),
                          bias=args.mamba_proj_bias, conv_bias=args.mamba_conv_bias, dt_norms=True)
        sparse = moe is not None and i % args.expert_layer_period == args.expert_layer_offset
        if sparse:
            t.add(f"{p}.feed_forward.router.weight", (e, h), "other")
            t.experts(f"{p}.feed_forward", h, e, args.intermediate_size)
        else:
            t.mlp(f"{p}.feed_forward", h, args.intermediate_size)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.pre_ff_layernorm", h)
        layers.append(dataclasses.replace(layer, ffn="moe" if sparse else "dense", ffn_width=args.intermediate_size))
    t.norm("model.final_layernorm", h)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    return finish(args, t, layers, dtype_known=known, moe=moe)
