"""LiquidAI LFM2 (`lfm2`): short-convolution layers with a few GQA attention layers (`full_attn_idxs`).

Shapes from transformers modeling_lfm2.py: conv layers hold Lfm2ShortConv (in_proj [3h, h], depthwise
conv [h, 1, conv_L_cache], out_proj [h, h], biases with conv_bias); attention layers q/k/v/out_proj
with per-head q_layernorm / k_layernorm; every layer has operator_norm, ffn_norm and a SwiGLU
feed_forward (w1/w3 [ff, h], w2 [h, ff]) whose width Lfm2MLP adjusts: with block_auto_adjust_ff_dim
ff = int(2 ff / 3), then x block_ffn_dim_multiplier, rounded up to block_multiple_of. Lfm2Config
ties embeddings by default; `embedding_norm` is the final norm. A conv layer's cache is a fixed
conv state of hidden x (L_cache - 1) per sequence (vLLM short_conv.py), not per-token KV.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...core.spec import FULL, NONE, LayerSpec, MoESpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """Lfm2Config defaults."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 65536
    hidden_size: int = 2560
    intermediate_size: int = 12288
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = 8
    max_position_embeddings: int = 128000
    tie_word_embeddings: bool = True
    conv_bias: bool = False
    conv_L_cache: int = 3
    block_ff_dim: int | None = None
    block_auto_adjust_ff_dim: bool = True
    block_ffn_dim_multiplier: float | None = 1.0
    block_multiple_of: int = 256
    block_use_swiglu: bool = True
    full_attn_idxs: list | None = None
    layer_types: list | None = None
    block_dim: int | None = None  # = hidden_size in every release
    conv_dim: int | None = None  # = hidden_size
    conv_dim_out: int | None = None
    num_heads: int | None = None  # = num_attention_heads
    # the original configs' name for tie_word_embeddings, which Lfm2Config reads first:
    # `tie_word_embeddings = kwargs.get("tie_embedding", tie_word_embeddings)` (configuration_lfm2.py)
    tie_embedding: bool | None = None


def ff_width(args: Args) -> int:
    ff = args.block_ff_dim or args.intermediate_size
    if args.block_auto_adjust_ff_dim:
        ff = int(2 * ff / 3)
        if args.block_ffn_dim_multiplier is not None:
            ff = int(args.block_ffn_dim_multiplier * ff)
        m = max(args.block_multiple_of, 1)
        ff = m * ((ff + m - 1) // m)
    return ff


def attention_layers(args: Args) -> set[int]:
    if isinstance(args.layer_types, list) and len(args.layer_types) == args.num_hidden_layers:
        return {i for i, k in enumerate(args.layer_types) if str(k) == "full_attention"}
    return {i for i in (args.full_attn_idxs or []) if isinstance(i, int)}


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    ff = ff_width(args)

    def dense(t: Tensors, p: str, i: int) -> tuple[str, int]:
        t.mlp(p, args.hidden_size, ff, gated=args.block_use_swiglu)
        return "dense", ff

    return build(args, origin, dense)


def build(args: Args, origin: str, ffn: Callable[[Tensors, str, int], tuple[str, int]],
          moe: MoESpec | None = None) -> ArchSpec:
    """The LFM2 layer stack: conv or attention operator per layer, each layer's feed-forward from `ffn`
    (its tensors under `p`, layer `i`; returns the LayerSpec's ffn kind and width): LFM2's SwiGLU, or
    LFM2-MoE's dense-then-experts (lfm2_moe.py)."""
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv, hd, k = args.num_key_value_heads or nq, h // nq, args.conv_L_cache
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("model.embed_tokens.weight", (args.vocab_size, h), "embedding")
    t.norm("model.embedding_norm", h)
    attn = attention_layers(args)
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"model.layers.{i}"
        if i in attn:
            t.linear(f"{p}.self_attn.q_proj", h, nq * hd, "attention")
            t.linear(f"{p}.self_attn.k_proj", h, nkv * hd, "attention")
            t.linear(f"{p}.self_attn.v_proj", h, nkv * hd, "attention")
            t.linear(f"{p}.self_attn.out_proj", nq * hd, h, "attention")
            t.norm(f"{p}.self_attn.q_layernorm", hd)
            t.norm(f"{p}.self_attn.k_layernorm", hd)
        else:
            t.linear(f"{p}.conv.in_proj", h, 3 * h, "recurrent", args.conv_bias)
            t.add(f"{p}.conv.conv.weight", (h, 1, k), "other")
            if args.conv_bias:
                t.add(f"{p}.conv.conv.bias", (h,), "norm")
            t.linear(f"{p}.conv.out_proj", h, h, "recurrent", args.conv_bias)
        t.norm(f"{p}.operator_norm", h)
        t.norm(f"{p}.ffn_norm", h)
        kind, width = ffn(t, f"{p}.feed_forward", i)
        if i in attn:
            layers.append(LayerSpec(attention=FULL, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                    ffn=kind, ffn_width=width))
        else:
            layers.append(LayerSpec(attention=NONE, recurrent="short_conv", conv_dim=h, conv_kernel=k, ffn=kind,
                                    ffn_width=width))
    tied = args.tie_word_embeddings if args.tie_embedding is None else bool(args.tie_embedding)
    if not tied:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    return finish(args, t, layers, dtype_known=known, moe=moe)
