"""InternLM 2 / 2.5 (`internlm2`, remote code) and InternLM 1 (`internlm`): Llama's tensors with fused
names (wqkv, wo, w1/w3/w2, attention_norm/ffn_norm) and `bias` on the attention projections.

modeling_internlm2.py: wqkv = Linear(h, (heads + 2 kv) x head_dim, bias=config.bias), wo likewise
biased; the MLP has no bias; InternLM2Config defaults bias=True, tie_word_embeddings=False. The byte
counts equal Llama's with attention_bias = bias.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """InternLM2Config defaults."""

    vocab_size: int = 103168
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    max_position_embeddings: int = 2048
    bias: bool = True


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    args.attention_bias = args.bias
    return build(args, Style(), origin=origin)
