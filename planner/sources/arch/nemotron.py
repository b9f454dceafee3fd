"""Nemotron-4 / Minitron (`nemotron`): a plain squared-ReLU MLP (up_proj, down_proj: no gate) and
LayerNorm1P norms with bias, GQA, partial RoPE, untied embeddings.

Shapes from transformers modeling_nemotron.py: NemotronMLP holds up_proj [inter, h] and down_proj
[h, inter] (relu2); NemotronLayerNorm1P is an nn.LayerNorm (weight + bias) on input_layernorm,
post_attention_layernorm and the final norm. NemotronConfig defaults: vocab 256000, hidden 6144,
intermediate 24576, 32 layers, 48 heads, tie_word_embeddings False.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """NemotronConfig defaults."""

    vocab_size: int = 256000
    hidden_size: int = 6144
    intermediate_size: int = 24576
    num_hidden_layers: int = 32
    num_attention_heads: int = 48
    max_position_embeddings: int = 4096
    partial_rotary_factor: float = 0.5


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(gated_mlp=False, norm_bias=True), origin=origin)
