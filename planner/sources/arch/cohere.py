"""Cohere Command-R / Aya (`cohere`): parallel attention + MLP after one LayerNorm, tied embeddings.

CohereDecoderLayer has a single `input_layernorm` (CohereLayerNorm: weight, no bias) feeding both
attention and MLP; CohereConfig defaults tie_word_embeddings=True and `use_qk_norm` adds per-head
q/k norms (transformers configuration_cohere.py / modeling_cohere.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """CohereConfig defaults."""

    vocab_size: int = 256000
    hidden_size: int = 8192
    intermediate_size: int = 22528
    num_hidden_layers: int = 40
    num_attention_heads: int = 64
    max_position_embeddings: int = 8192
    tie_word_embeddings: bool = True
    use_qk_norm: bool = False
    logit_scale: float = 0.0625


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    # CohereLayerNorm for q/k norms is per head: weight [heads, head_dim] (counted per kv/q heads below)
    spec = build(args, Style(norms=("input_layernorm",), qk_norm="full" if args.use_qk_norm else None),
                 origin=origin)
    return spec
