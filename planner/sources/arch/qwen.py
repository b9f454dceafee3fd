"""Qwen v1 (`qwen`, QWenLMHeadModel, remote code): fused c_attn with bias, MHA, SwiGLU split in w1/w2.

Its config's `intermediate_size` is the width of w1 and w2 together: each is intermediate_size / 2
(modeling_qwen.py QWenMLP: `ff_dim_in = config.intermediate_size // 2`); c_attn has a bias, c_proj
and the MLP have none (`no_bias`); projection width = kv_channels x heads; RMSNorm ln_1/ln_2/ln_f.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """QWenConfig defaults (configuration_qwen.py)."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 151936
    hidden_size: int = 4096
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    kv_channels: int = 128
    intermediate_size: int = 22016
    no_bias: bool = True
    max_position_embeddings: int = 8192
    seq_length: int = 8192
    tie_word_embeddings: bool = False


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "kv_channels", origin=origin)
    h, nq, hd = args.hidden_size, args.num_attention_heads, args.kv_channels
    proj, ff = nq * hd, args.intermediate_size // 2
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("transformer.wte.weight", (args.vocab_size, h), "embedding")
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"transformer.h.{i}"
        t.norm(f"{p}.ln_1", h)
        t.linear(f"{p}.attn.c_attn", h, 3 * proj, "attention", True)
        t.linear(f"{p}.attn.c_proj", proj, h, "attention", not args.no_bias)
        t.norm(f"{p}.ln_2", h)
        t.linear(f"{p}.mlp.w1", h, ff, "ffn", not args.no_bias)
        t.linear(f"{p}.mlp.w2", h, ff, "ffn", not args.no_bias)
        t.linear(f"{p}.mlp.c_proj", ff, h, "ffn", not args.no_bias)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nq, head_dim_k=hd, head_dim_v=hd, ffn_width=ff))
    t.norm("transformer.ln_f", h)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    return finish(args, t, layers, dtype_known=known)
