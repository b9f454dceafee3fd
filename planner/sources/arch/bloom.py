"""BLOOM (`bloom`): MHA with fused QKV, ALiBi (no rotary), 4h plain GELU MLP, LayerNorm with bias
everywhere (including one right after the embedding), tied embeddings.

Shapes from transformers modeling_bloom.py; BloomConfig reads `n_embed` as hidden_size and maps
n_layer / n_head (attribute_map), tie_word_embeddings default True.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """BloomConfig defaults (`n_embed`, `n_layer`, `n_head` are its spellings)."""

    REQUIRED = ("vocab_size",)
    vocab_size: int = 250880
    hidden_size: int | None = None
    n_embed: int = 64
    n_layer: int | None = None
    num_hidden_layers: int = 2
    n_head: int | None = None
    num_attention_heads: int = 8
    seq_length: int = 2048
    tie_word_embeddings: bool = True


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    args.hidden_size = args.hidden_size or args.n_embed
    args.num_hidden_layers = args.n_layer or args.num_hidden_layers
    args.num_attention_heads = args.n_head or args.num_attention_heads
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    hd = h // nq
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("transformer.word_embeddings.weight", (args.vocab_size, h), "embedding")
    t.norm("transformer.word_embeddings_layernorm", h, bias=True)
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"transformer.h.{i}"
        t.norm(f"{p}.input_layernorm", h, bias=True)
        t.linear(f"{p}.self_attention.query_key_value", h, 3 * h, "attention", True)
        t.linear(f"{p}.self_attention.dense", h, h, "attention", True)
        t.norm(f"{p}.post_attention_layernorm", h, bias=True)
        t.linear(f"{p}.mlp.dense_h_to_4h", h, 4 * h, "ffn", True)
        t.linear(f"{p}.mlp.dense_4h_to_h", 4 * h, h, "ffn", True)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nq, head_dim_k=hd, head_dim_v=hd, ffn_width=4 * h))
    t.norm("transformer.ln_f", h, bias=True)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    args.intermediate_size, args.max_position_embeddings = 4 * h, args.seq_length  # type: ignore[attr-defined]
    return finish(args, t, layers, dtype_known=known)
