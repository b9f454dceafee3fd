"""LiquidAI LFM3 (`lfm3`): LFM2's short-convolution stack with sliding and full GQA attention layers, gated
attention output and sandwich norms.

transformers modeling_lfm3.py / configuration_lfm3.py:
- the plan: `layer_types`, else per layer i: full when i % 4 == 2, sliding when i % 4 == 0 and i > 0, else
  a conv layer (configuration :94-98); sliding layers see `sliding_window` tokens (256);
- attention (Lfm3Attention :209-242): q/k/v/o_proj (head_dim 128, bias under attention_bias), per-head
  q_norm / k_norm, g_proj [num_attention_heads, h] without bias under use_attention_gate;
- a conv layer (Lfm3ShortConv :344-365): in_proj [3h, h], depthwise conv [h, 1, conv_L_cache], out_proj, biases
  under conv_bias; its cache is a fixed conv state, not per-token KV;
- every layer: operator_norm, ffn_norm, and under use_sandwich_norm post_operator_norm + post_ffn_norm
  (:423-430); SwiGLU feed_forward w1/w3 [intermediate_size, h], w2 (Lfm3MLP :125-132, no LFM2 width
  adjustment); embedding_norm is the final norm (:515); lm_head tied by default.
The standard rule read every layer as attention: -4.8% at the config defaults and KV on all 24 layers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import FULL, NONE, SLIDING, LayerSpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs


@dataclass
class Args(DecoderArgs):
    """Lfm3Config defaults."""

    vocab_size: int = 128_000
    hidden_size: int = 2048
    intermediate_size: int = 7680
    num_hidden_layers: int = 24
    num_attention_heads: int = 16
    num_key_value_heads: int | None = 4
    max_position_embeddings: int = 128_000
    tie_word_embeddings: bool = True
    head_dim: int | None = 128
    sliding_window: int | None = 256
    conv_bias: bool = False
    conv_L_cache: int = 7
    use_sandwich_norm: bool = True
    use_attention_gate: bool = True


def plan(args: Args) -> list[str]:
    n = args.num_hidden_layers
    if isinstance(args.layer_types, list) and len(args.layer_types) == n:
        return [str(x) for x in args.layer_types]
    return ["full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0 else "conv"
            for i in range(n)]


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq, inter, k = args.hidden_size, args.num_attention_heads, args.intermediate_size, args.conv_L_cache
    nkv, hd = args.num_key_value_heads or nq, args.head_dim or h // nq
    window = args.sliding_window if args.sliding_window and args.sliding_window < args.max_position_embeddings else None
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("model.embed_tokens.weight", (args.vocab_size, h), "embedding")
    t.norm("model.embedding_norm", h)
    layers = []
    for i, kind in enumerate(plan(args)):
        p = f"model.layers.{i}"
        if kind != "conv":
            t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                        qkv_bias=args.attention_bias, o_bias=args.attention_bias, qk_norm="head")
            if args.use_attention_gate:
                t.linear(f"{p}.self_attn.g_proj", h, nq, "attention")
            sliding = kind.startswith("sliding") and window is not None
            layers.append(LayerSpec(attention=SLIDING if sliding else FULL, q_heads=nq, kv_heads=nkv,
                                    head_dim_k=hd, head_dim_v=hd, window=window if sliding else None,
                                    ffn_width=inter))
        else:
            t.linear(f"{p}.conv.in_proj", h, 3 * h, "recurrent", args.conv_bias)
            t.add(f"{p}.conv.conv.weight", (h, 1, k), "other")
            if args.conv_bias:
                t.add(f"{p}.conv.conv.bias", (h,), "norm")
            t.linear(f"{p}.conv.out_proj", h, h, "recurrent", args.conv_bias)
            layers.append(LayerSpec(attention=NONE, recurrent="short_conv", conv_dim=h, conv_kernel=k,
                                    ffn_width=inter))
        names = ["operator_norm", "ffn_norm"] + (["post_operator_norm", "post_ffn_norm"]
                                                 if args.use_sandwich_norm else [])
        for name in names:
            t.norm(f"{p}.{name}", h)
        t.linear(f"{p}.feed_forward.w1", h, inter, "ffn")
        t.linear(f"{p}.feed_forward.w3", h, inter, "ffn")
        t.linear(f"{p}.feed_forward.w2", inter, h, "ffn")
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    return finish(args, t, layers, dtype_known=known)
