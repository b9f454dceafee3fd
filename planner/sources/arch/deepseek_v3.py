"""DeepSeek-V3 / R1 / V3.1: V2's MLA + MoE with sigmoid routing (router correction bias)."""

from __future__ import annotations

from dataclasses import dataclass

from . import deepseek_v2
from .base import ArchSpec


@dataclass
class Args(deepseek_v2.Args):
    """DeepseekV3Config defaults."""

    vocab_size: int = 129280
    hidden_size: int = 7168
    intermediate_size: int = 18432
    moe_intermediate_size: int = 2048
    num_hidden_layers: int = 61
    num_attention_heads: int = 128
    max_position_embeddings: int = 4096
    n_routed_experts: int | None = 256
    n_shared_experts: int | None = 1
    num_experts_per_tok: int | None = 8
    first_k_dense_replace: int = 3
    topk_method: str = "noaux_tc"


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return deepseek_v2.to_spec(args, origin)
