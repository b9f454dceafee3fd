"""OLMo 2: norms after attention and after the MLP (no input norm), q/k norms over all heads."""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """Olmo2Config defaults."""

    vocab_size: int = 50304
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    max_position_embeddings: int = 2048


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(norms=("post_attention_layernorm", "post_feedforward_layernorm"), qk_norm="full"),
                 origin=origin)
