"""Llama 2/3.x, SmolLM2, TinyLlama (`LlamaForCausalLM`): the reference decoder."""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """LlamaConfig defaults (transformers configuration_llama.py)."""

    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    max_position_embeddings: int = 2048


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(), origin=origin)
