"""Falcon-H1: every layer runs attention and a Mamba2 mixer in parallel, then a gated MLP.

So every layer has both a KV cache (growing) and a fixed conv + SSM state.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import FULL, LayerSpec
from .bamba import MambaKeys
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(MambaKeys):
    """FalconH1Config defaults (its Mamba2 mixer keys and defaults are Bamba's: MambaKeys)."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 128000
    hidden_size: int = 4096
    intermediate_size: int = 14336
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = 8
    head_dim: int | None = None
    max_position_embeddings: int = 8192
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    projectors_bias: bool = False
    mamba_d_ssm: int | None = None
    mamba_rms_norm: bool = False
    mamba_norm_before_gate: bool | None = None  # where the gated norm applies: no tensor shape depends on it


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "mamba_n_heads", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv, hd = args.num_key_value_heads or nq, args.head_dim or h // nq
    notes = []
    # d_inner: mamba_d_ssm, else n_heads x d_head when d_head is given, else expand x hidden
    if args.mamba_d_ssm:
        d_inner = args.mamba_d_ssm
    elif isinstance(args.mamba_d_head, int):
        d_inner = args.mamba_n_heads * args.mamba_d_head
        notes.append("mamba_d_ssm absent: Mamba inner width taken as mamba_n_heads x mamba_d_head")
    else:
        d_inner = args.mamba_expand * h
    head = args.mamba_d_head if isinstance(args.mamba_d_head, int) else d_inner // args.mamba_n_heads
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"model.layers.{i}"
        t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                    qkv_bias=args.attention_bias, o_bias=args.attention_bias)
        conv_dim, state = t.mamba2(f"{p}.mamba", hidden=h, n_heads=args.mamba_n_heads, head_dim=head,
                                   n_groups=args.mamba_n_groups, d_state=args.mamba_d_state,
                                   d_conv=args.mamba_d_conv, conv_bias=args.mamba_conv_bias,
                                   proj_bias=args.mamba_proj_bias, gated_norm=args.mamba_rms_norm)
        t.mlp(f"{p}.feed_forward", h, args.intermediate_size, bias=args.mlp_bias)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.pre_ff_layernorm", h)
        layers.append(LayerSpec(attention=FULL, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                recurrent="mamba2", conv_dim=conv_dim, conv_kernel=args.mamba_d_conv,
                                recurrent_state_elems=state, ffn="dense", ffn_width=args.intermediate_size))
    return finish(args, t, layers, dtype_known=known, notes=notes)
