"""GPT-2 (`gpt2`): learned positions, Conv1D projections with biases, 4h GELU MLP, LayerNorms, tied.

Shapes from transformers modeling_gpt2.py (GPT2Config spells sizes n_embd / n_layer / n_head /
n_inner / n_positions): wte [vocab, h], wpe [n_positions, h]; per block ln_1, attn.c_attn [h, 3h] + b,
attn.c_proj [h, h] + b, ln_2, mlp.c_fc [h, inner] + b, mlp.c_proj [inner, h] + b (inner = n_inner
or 4h); ln_f; lm_head tied to wte. MHA: every head caches K and V.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """GPT2Config defaults."""

    REQUIRED = ("n_embd", "n_layer", "n_head")
    vocab_size: int = 50257
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: int | None = None
    n_positions: int = 1024
    n_ctx: int | None = None
    tie_word_embeddings: bool = True


def to_spec(args: Args, origin: str = "config.json", *, kv_heads: int | None = None) -> ArchSpec:
    """`kv_heads`: GPTBigCode's multi-query attention (one K/V head: c_attn [h + 2 head_dim, h]); None = MHA."""
    require_positive(args, "n_embd", "n_layer", "n_head", "vocab_size", origin=origin)
    h, nq = args.n_embd, args.n_head
    hd, inner = h // nq, args.n_inner or 4 * h
    nkv = kv_heads or nq
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("transformer.wte.weight", (args.vocab_size, h), "embedding")
    t.add("transformer.wpe.weight", (args.n_positions, h), "embedding")
    layers = []
    for i in range(args.n_layer):
        p = f"transformer.h.{i}"
        t.norm(f"{p}.ln_1", h, bias=True)
        t.linear(f"{p}.attn.c_attn", h, h + 2 * nkv * hd, "attention", True)
        t.linear(f"{p}.attn.c_proj", h, h, "attention", True)
        t.norm(f"{p}.ln_2", h, bias=True)
        t.linear(f"{p}.mlp.c_fc", h, inner, "ffn", True)
        t.linear(f"{p}.mlp.c_proj", inner, h, "ffn", True)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd, ffn_width=inner))
    t.norm("transformer.ln_f", h, bias=True)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    # finish() reads the standard names
    args.hidden_size, args.intermediate_size = h, inner  # type: ignore[attr-defined]
    args.max_position_embeddings = args.n_positions  # type: ignore[attr-defined]
    return finish(args, t, layers, dtype_known=known)
