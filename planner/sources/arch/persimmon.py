"""Persimmon (`persimmon`, and the text side of Fuyu): fused QKV with bias, per-head q/k LayerNorms,
plain relu^2 MLP with biases, LayerNorm with bias, MHA, untied.

Shapes from transformers modeling_persimmon.py (query_key_value 3 x hidden, dense, q_layernorm /
k_layernorm over head_dim with bias when qk_layernorm, mlp dense_h_to_4h / dense_4h_to_h).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """PersimmonConfig defaults."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 262144
    hidden_size: int = 4096
    intermediate_size: int = 16384
    num_hidden_layers: int = 36
    num_attention_heads: int = 64
    qk_layernorm: bool = True
    max_position_embeddings: int = 16384
    tie_word_embeddings: bool = False


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq, inter = args.hidden_size, args.num_attention_heads, args.intermediate_size
    hd = h // nq
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("model.embed_tokens.weight", (args.vocab_size, h), "embedding")
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"model.layers.{i}"
        t.linear(f"{p}.self_attn.query_key_value", h, 3 * h, "attention", True)
        t.linear(f"{p}.self_attn.dense", h, h, "attention", True)
        if args.qk_layernorm:
            t.norm(f"{p}.self_attn.q_layernorm", hd, bias=True)
            t.norm(f"{p}.self_attn.k_layernorm", hd, bias=True)
        t.linear(f"{p}.mlp.dense_h_to_4h", h, inter, "ffn", True)
        t.linear(f"{p}.mlp.dense_4h_to_h", inter, h, "ffn", True)
        t.norm(f"{p}.input_layernorm", h, bias=True)
        t.norm(f"{p}.post_attention_layernorm", h, bias=True)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nq, head_dim_k=hd, head_dim_v=hd, ffn_width=inter))
    t.norm("model.final_layernorm", h, bias=True)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    return finish(args, t, layers, dtype_known=known)
