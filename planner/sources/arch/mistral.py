"""Mistral 7B: sliding_window on every layer (KV capped at the window in HF/vLLM).

llama.cpp converts Mistral to its `llama` arch without a window, so there every
layer is full attention (`llamacpp_swa=False`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """MistralConfig defaults."""

    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 14336
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = 8
    max_position_embeddings: int = 131072
    sliding_window: int | None = 4096


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(sliding="all", llamacpp_swa=False), origin=origin)
