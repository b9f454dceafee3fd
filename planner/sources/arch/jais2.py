"""Jais 2 (`jais2`): a Llama-layout decoder with LayerNorms (weight + bias) and an up/down ReLU^2 MLP.

transformers modeling_jais2.py: up_proj / down_proj only, biased under mlp_bias (:50-51); q/k/v/o biased under
attention_bias (:142-153); nn.LayerNorm for both layer norms and the final norm (:205-206, :316). Jais2Config
sets attention_bias and mlp_bias true by default (configuration_jais2.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """Jais2Config defaults."""

    vocab_size: int = 150272
    hidden_size: int = 3328
    intermediate_size: int = 26624
    num_hidden_layers: int = 32
    num_attention_heads: int = 26
    max_position_embeddings: int = 8192
    tie_word_embeddings: bool = False
    attention_bias: bool = True
    mlp_bias: bool = True


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(gated_mlp=False, norm_bias=True), origin=origin)
