"""Youtu-LLM (`youtu`): MiniCPM3's layout (MLA over dense SwiGLU layers, tied embeddings), YoutuConfig defaults.

transformers modeling_youtu.py: q_a/q_b, kv_a_proj_with_mqa/kv_b, o_proj as DeepSeek-V2's (:286-312).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import minicpm3
from .base import ArchSpec


@dataclass
class Args(minicpm3.Args):
    """YoutuConfig defaults."""

    vocab_size: int = 128256
    hidden_size: int = 2048
    intermediate_size: int = 6144
    num_hidden_layers: int = 32
    num_attention_heads: int = 16
    max_position_embeddings: int = 131072
    q_lora_rank: int | None = 1536
    kv_lora_rank: int = 512
    qk_nope_head_dim: int = 128
    qk_rope_head_dim: int = 64
    v_head_dim: int | None = 128


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return minicpm3.to_spec(args, origin)
