"""Cohere 2 (Command R7B / Command A, `cohere2`): Cohere's parallel block with interleaved sliding layers.

Cohere2Config (transformers configuration_cohere2.py) builds layer_types as sliding unless
(i + 1) % sliding_window_pattern == 0 (default pattern 4, window 4096): three sliding layers, then one
full-attention layer without RoPE. Tensors are Cohere's: one input_layernorm (weight only), q/k/v/o,
a gated MLP, tied embeddings (modeling_cohere2.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import cohere
from .base import ArchSpec
from .decoder import Style, build


@dataclass
class Args(cohere.Args):
    """Cohere2Config defaults: CohereConfig's sizes, plus the sliding pattern."""

    sliding_window: int | None = 4096
    sliding_window_pattern: int | None = 4


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(norms=("input_layernorm",), sliding="pattern", pattern_default=4), origin=origin)
