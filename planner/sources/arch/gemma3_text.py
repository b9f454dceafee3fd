"""Gemma 3 text tower: 5 sliding layers then 1 global (pattern 6), per-head q/k norms.

Sparse Hub configs (gemma-3-270m, the text_config of gemma-3-4b+) rely on
Gemma3TextConfig defaults, reproduced here: vocab 262208, head_dim 256, tied.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build
from .gemma2 import GEMMA_NORMS


@dataclass
class Args(DecoderArgs):
    """Gemma3TextConfig defaults. The multimodal Gemma 3 4B/12B/27B configs omit num_attention_heads
    and vocab_size from text_config and rely on these defaults, so only the two keys every real
    config carries are required."""

    REQUIRED = ("hidden_size", "num_hidden_layers")
    vocab_size: int = 262208
    hidden_size: int = 2304
    intermediate_size: int = 9216
    num_hidden_layers: int = 26
    num_attention_heads: int = 8
    num_key_value_heads: int | None = 4
    head_dim: int | None = 256
    max_position_embeddings: int = 131072
    tie_word_embeddings: bool = True
    sliding_window: int | None = 4096


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(norms=GEMMA_NORMS, qk_norm="head", sliding="pattern", pattern_default=6),
                 origin=origin)
