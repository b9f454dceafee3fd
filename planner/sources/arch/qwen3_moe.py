"""Qwen3 MoE (30B-A3B, 235B-A22B): Qwen3 attention + routed experts, no shared expert."""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """Qwen3MoeConfig defaults."""

    vocab_size: int = 151936
    hidden_size: int = 2048
    intermediate_size: int = 6144
    num_hidden_layers: int = 24
    num_attention_heads: int = 32
    num_key_value_heads: int | None = 4
    head_dim: int | None = None  # hidden_size // num_attention_heads when absent (modeling_qwen3_moe.py:129; 4.51.3 head_dim=None)
    max_position_embeddings: int = 32768
    sliding_window: int | None = 4096
    use_sliding_window: bool | None = False
    num_experts: int | None = 128
    num_experts_per_tok: int | None = 8
    moe_intermediate_size: int | None = 768


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(qk_norm="head", sliding="qwen", moe="routed"), origin=origin)
