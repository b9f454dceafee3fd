"""SmolLM3: the Llama decoder with NoPE layers (`no_rope_layers`) and tied embeddings by default.

NoPE layers drop the rotary embedding only; they still cache K/V like every other layer, so the KV
rule is Llama's. What differs is the default: SmolLM3Config sets tie_word_embeddings=True
(transformers configuration_smollm3.py), and the real config omits the key.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """SmolLM3Config defaults."""

    vocab_size: int = 128256
    hidden_size: int = 2048
    intermediate_size: int = 11008
    num_hidden_layers: int = 36
    num_attention_heads: int = 16
    num_key_value_heads: int | None = 4
    max_position_embeddings: int = 32768
    tie_word_embeddings: bool = True
    no_rope_layers: list | None = None  # rotary on/off per layer: no effect on shapes or the cache
    no_rope_layer_interval: int = 4


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(sliding="qwen"), origin=origin)
