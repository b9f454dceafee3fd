"""GPTBigCode / StarCoder 1 / SantaCoder (`gpt_bigcode`): GPT-2's blocks with multi-query attention.

Shapes from transformers modeling_gpt_bigcode.py: wte [v, h], wpe [n_positions, h]; per block ln_1 (w + b),
attn.c_attn [h + 2 kv_dim, h] + b with kv_dim = head_dim under multi_query (one K/V head, the StarCoder
default) else h, attn.c_proj [h, h] + b, ln_2, mlp.c_fc [inner, h] + b, mlp.c_proj [h, inner] + b
(inner = n_inner or 4h); ln_f; lm_head tied to wte (GPTBigCodeConfig tie_word_embeddings True). nn.Linear,
not GPT-2's Conv1D, but the same element counts: GPT-2's rule (gpt2.py) with one K/V head. The KV cache holds
one head under multi_query.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import gpt2
from .base import ArchSpec


@dataclass
class Args(gpt2.Args):
    """GPTBigCodeConfig defaults (GPT2Config's sizes)."""

    multi_query: bool = True
    # GPTBigCodeConfig writes num_key_value_heads = 1 under multi_query, else n_head (configuration_gpt_bigcode.py);
    # the modelling code reads multi_query, so this is read to be checked against it, not used
    num_key_value_heads: int | None = None


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return gpt2.to_spec(args, origin, kv_heads=1 if args.multi_query else None)
