"""Mixtral 8x7B/8x22B: Mistral attention + 8 routed experts, top-2. All experts resident."""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """MixtralConfig defaults."""

    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 14336
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = 8
    max_position_embeddings: int = 131072
    num_local_experts: int | None = 8
    num_experts_per_tok: int | None = 2


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(sliding="all", moe="routed", llamacpp_swa=False), origin=origin)
