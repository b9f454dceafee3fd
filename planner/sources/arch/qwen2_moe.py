"""Qwen1.5/Qwen2 MoE: routed experts plus one shared expert behind a sigmoid gate."""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """Qwen2MoeConfig defaults."""

    vocab_size: int = 151936
    hidden_size: int = 2048
    intermediate_size: int = 5632
    num_hidden_layers: int = 24
    num_attention_heads: int = 16
    max_position_embeddings: int = 32768
    sliding_window: int | None = 4096
    use_sliding_window: bool | None = False
    num_experts: int | None = 60
    num_experts_per_tok: int | None = 4
    moe_intermediate_size: int | None = 1408
    shared_expert_intermediate_size: int | None = 5632
    qkv_bias: bool = True  # Qwen2MoeConfig: q/k/v biased by qkv_bias (modeling_qwen2_moe.py:222-224)


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(qkv_bias=args.qkv_bias, sliding="qwen", moe="shared"), origin=origin)
