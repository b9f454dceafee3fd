"""Qwen2 / Qwen2.5: biases on q/k/v (not o); sliding only if use_sliding_window."""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """Qwen2Config defaults."""

    vocab_size: int = 151936
    hidden_size: int = 4096
    intermediate_size: int = 22016
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    max_position_embeddings: int = 32768
    sliding_window: int | None = 4096
    use_sliding_window: bool | None = False
    max_window_layers: int | None = 28


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(qkv_bias=True, sliding="qwen"), origin=origin)
