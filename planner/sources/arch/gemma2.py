"""Gemma 2: alternating sliding (even layers) / global (odd layers), four norms per layer."""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build

GEMMA_NORMS = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
               "post_feedforward_layernorm")


@dataclass
class Args(DecoderArgs):
    """Gemma2Config defaults."""

    sliding_window_size: int | None = None  # older spelling of sliding_window, same value
    vocab_size: int = 256000
    hidden_size: int = 2304
    intermediate_size: int = 9216
    num_hidden_layers: int = 26
    num_attention_heads: int = 8
    num_key_value_heads: int | None = 4
    head_dim: int | None = 256
    max_position_embeddings: int = 8192
    tie_word_embeddings: bool = True
    sliding_window: int | None = 4096


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(norms=GEMMA_NORMS, sliding="every2"), origin=origin)
