"""Phi-3 / Phi-3.5 / Phi-4-mini: fused qkv and gate_up (same counts), optional window on all layers."""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """Phi3Config defaults."""

    full_attn_mod: int | None = None  # Phi-4-mini remote-code flag: every layer full attention, no shape
    vocab_size: int = 32064
    hidden_size: int = 3072
    intermediate_size: int = 8192
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    max_position_embeddings: int = 4096


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(sliding="all"), origin=origin)
