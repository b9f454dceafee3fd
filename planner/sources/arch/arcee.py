"""Arcee AFM (`arcee`): the Llama decoder with an up/down MLP (ReLU^2), no gate.

transformers modeling_arcee.py: ArceeMLP holds up_proj and down_proj only, biased under mlp_bias (:56-57);
attention, norms and head as Llama's (:215-226, :278-279, :418).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """ArceeConfig defaults (configuration_arcee.py)."""

    vocab_size: int = 32000
    hidden_size: int = 2560
    intermediate_size: int = 18432
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    max_position_embeddings: int = 4096
    tie_word_embeddings: bool = False


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(gated_mlp=False), origin=origin)
