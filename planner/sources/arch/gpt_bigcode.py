"""GPTBigCode / StarCoder 1 / SantaCoder (`gpt_bigcode`): GPT-2's blocks with multi-query attention.

Shapes from transformers modeling_gpt_bigcode.py: wte [v, h], wpe [n_positions, h]; per block ln_1 (w + b),
attn.c_attn [h + 2 kv_dim, h] + b with kv_dim = head_dim under multi_query (one K/V head, the StarCoder
default) else h, attn.c_proj [h, h] + b, ln_2, mlp.c_fc [inner, h] + b, mlp.c_proj [h, inner] + b
(inner = n_inner or 4h); ln_f; lm_head tied to wte (GPTBigCodeConfig tie_word_embeddings True). nn.Linear,
not GPT-2's Conv1D, but the same element counts. The KV cache holds one head under multi_query.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """GPTBigCodeConfig defaults."""

    REQUIRED = ("n_embd", "n_layer", "n_head")
    vocab_size: int = 50257
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: int | None = None
    n_positions: int = 1024
    multi_query: bool = True
    # GPTBigCodeConfig writes num_key_value_heads = 1 under multi_query, else n_head (configuration_gpt_bigcode.py);
    # the modelling code reads multi_query, so this is read to be checked against it, not used
    num_key_value_heads: int | None = None
    tie_word_embeddings: bool = True


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "n_embd", "n_layer", "n_head", "vocab_size", origin=origin)
    h, nq = args.n_embd, args.n_head
    hd, inner = h // nq, args.n_inner or 4 * h
    nkv = 1 if args.multi_query else nq
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
    args.hidden_size, args.intermediate_size = h, inner  # type: ignore[attr-defined]
    args.max_position_embeddings = args.n_positions  # type: ignore[attr-defined]
    return finish(args, t, layers, dtype_known=known)
