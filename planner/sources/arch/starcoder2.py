"""StarCoder2: GPT-style plain MLP (c_fc -> gelu -> c_proj) with biases, LayerNorm with bias, GQA,
a sliding window on every layer, tied embeddings.

`use_bias` puts a bias on q/k/v/o and both MLP projections; Starcoder2Config defaults
tie_word_embeddings=True (transformers configuration_starcoder2.py / modeling_starcoder2.py).
vLLM applies `sliding_window` to every layer (vllm model_executor/models/starcoder2.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """Starcoder2Config defaults."""

    vocab_size: int = 49152
    hidden_size: int = 3072
    intermediate_size: int = 12288
    num_hidden_layers: int = 30
    num_attention_heads: int = 24
    num_key_value_heads: int | None = 2
    max_position_embeddings: int = 4096
    tie_word_embeddings: bool = True
    use_bias: bool = True
    mlp_type: str = "default"
    norm_type: str = "layer_norm"


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    args.attention_bias = args.mlp_bias = args.use_bias
    return build(args, Style(sliding="all", gated_mlp=False, norm_bias=True), origin=origin)
