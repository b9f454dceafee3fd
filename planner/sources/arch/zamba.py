"""Zyphra Zamba (`zamba`, Zamba-7B-v1): a multi-head Mamba-1 backbone whose "hybrid" layers also run ONE shared
transformer block on the concatenation of the hidden state and the original embeddings.

Shapes from transformers modeling_zamba.py / configuration_zamba.py (5.24.0):
* every layer has a ZambaMambaDecoderLayer: input_layernorm (hidden) and the mixer of inner width
  mamba_expand x hidden split into n_mamba_heads heads: in_proj [2 x inner, hidden] and out_proj (bias with
  mamba_proj_bias), depthwise conv1d (bias with mamba_conv_bias), per head x_proj_weight [heads, dt_rank + 2 x
  d_state, head_dim], dt_proj_weight [heads, head_dim, dt_rank] and dt_proj_bias, A_log [heads, head_dim,
  d_state], D [heads, head_dim] (the same counts as a one-head Mamba-1 mixer of that inner width);
* a hybrid layer adds `linear` [hidden, hidden] (its own) and the shared block, stored once (the HF model ties
  every `layers.N.shared_transf` to the first): q/k/v over attention_hidden_size (default 2 x hidden) with
  attention_head_dim (default 2 x hidden / heads), o_proj back to hidden, a gated MLP gate/up/down of
  intermediate_size, input_layernorm (attention_hidden_size) and pre_ff_layernorm (hidden);
* embed_tokens, final_layernorm; lm_head tied by default.
Hybrid layers: `layers_block_type`, else layers 2 and i + 3 with i % attn_layer_period == attn_layer_offset.
KV per token: the hybrid layers only; state: every layer's conv (inner x kernel) and SSM (inner x d_state).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import ConfigError
from ...core.spec import FULL, NONE, LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive
from .mamba import dt_rank_of
from .zamba2 import block_types


@dataclass
class Args(BaseArgs):
    """ZambaConfig defaults (transformers 5.24.0 configuration_zamba.py)."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 32000
    tie_word_embeddings: bool = True
    hidden_size: int = 3712
    attention_hidden_size: int | None = None
    intermediate_size: int = 14848
    num_hidden_layers: int = 76
    num_attention_heads: int = 16
    attention_head_dim: int | None = None
    num_key_value_heads: int = 16
    n_mamba_heads: int = 2
    max_position_embeddings: int = 4096
    attn_layer_period: int = 6
    attn_layer_offset: int = 4
    mamba_d_state: int = 16
    mamba_d_conv: int = 4
    mamba_expand: int = 2
    mamba_dt_rank: int | str = "auto"
    mamba_conv_bias: bool = True
    mamba_proj_bias: bool = False
    layers_block_type: list | None = None


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "n_mamba_heads",
                     "mamba_expand", "mamba_d_state", "mamba_d_conv", origin=origin)
    h, nq, nkv, ff = args.hidden_size, args.num_attention_heads, args.num_key_value_heads, args.intermediate_size
    attn_in = args.attention_hidden_size or 2 * h
    hd = args.attention_head_dim or 2 * h // nq
    inner, ds, k = args.mamba_expand * h, args.mamba_d_state, args.mamba_d_conv
    if inner % args.n_mamba_heads:  # ZambaConfig.validate_architecture raises the same
        raise ConfigError(f"Cannot size the model from '{origin}': n_mamba_heads {args.n_mamba_heads} does not "
                          f"divide mamba_expand x hidden_size = {inner}.", origin, key="n_mamba_heads")
    heads, head = args.n_mamba_heads, inner // args.n_mamba_heads
    dt = dt_rank_of(args.mamba_dt_rank, h)
    plan = args.layers_block_type or ["mamba", "mamba", "hybrid"] + [
        "hybrid" if i % args.attn_layer_period == args.attn_layer_offset else "mamba"
        for i in range(args.num_hidden_layers - 3)]  # ZambaConfig's plan when the config has none
    hybrid = block_types(plan, args.num_hidden_layers, origin)
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("model.embed_tokens.weight", (args.vocab_size, h), "embedding")
    layers = []
    for i, is_hybrid in enumerate(hybrid):
        p = f"model.layers.{i}"
        m = f"{p}.mamba_decoder" if is_hybrid else p
        t.linear(f"{m}.mamba.in_proj", h, 2 * inner, "recurrent", args.mamba_proj_bias)
        t.add(f"{m}.mamba.conv1d.weight", (inner, 1, k), "other")
        if args.mamba_conv_bias:
            t.add(f"{m}.mamba.conv1d.bias", (inner,), "norm")
        t.add(f"{m}.mamba.x_proj_weight", (heads, dt + 2 * ds, head), "recurrent")
        t.add(f"{m}.mamba.dt_proj_weight", (heads, head, dt), "recurrent")
        t.add(f"{m}.mamba.dt_proj_bias", (heads, head), "norm")
        t.add(f"{m}.mamba.A_log", (heads, head, ds), "norm")
        t.add(f"{m}.mamba.D", (heads, head), "norm")
        t.linear(f"{m}.mamba.out_proj", inner, h, "recurrent", args.mamba_proj_bias)
        t.norm(f"{m}.input_layernorm", h)
        if is_hybrid:
            t.linear(f"{p}.linear", h, h, "other")
            layers.append(LayerSpec(attention=FULL, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                    recurrent="mamba", conv_dim=inner, conv_kernel=k, recurrent_state_elems=inner * ds,
                                    ffn="dense", ffn_width=ff))
        else:
            layers.append(LayerSpec(attention=NONE, recurrent="mamba", conv_dim=inner, conv_kernel=k,
                                    recurrent_state_elems=inner * ds, ffn="none"))
    if any(hybrid):  # the one shared block, stored once
        b = "model.shared_transformer"
        t.linear(f"{b}.self_attn.q_proj", attn_in, nq * hd, "attention")
        t.linear(f"{b}.self_attn.k_proj", attn_in, nkv * hd, "attention")
        t.linear(f"{b}.self_attn.v_proj", attn_in, nkv * hd, "attention")
        t.linear(f"{b}.self_attn.o_proj", nq * hd, h, "attention")
        t.mlp(f"{b}.feed_forward", h, ff)
        t.norm(f"{b}.input_layernorm", attn_in)
        t.norm(f"{b}.pre_ff_layernorm", h)
    t.norm("model.final_layernorm", h)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    return finish(args, t, layers, dtype_known=known)
