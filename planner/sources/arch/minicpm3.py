"""MiniCPM3 (`minicpm3`): DeepSeek-V2's multi-head latent attention over a dense SwiGLU, tied embeddings.

transformers modeling_minicpm3.py builds q_a/q_b, kv_a_proj_with_mqa/kv_b and o_proj as DeepSeek-V2 does
(:259-285, biases under attention_bias) with a dense MLP in every layer; MiniCPM3Config.__post_init__ sets an
absent v_head_dim to hidden_size // num_attention_heads (configuration_minicpm3.py:124-125). scale_emb /
scale_depth are scalars, no weights. Youtu-LLM (`youtu`) is the same layout under its own defaults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from . import deepseek_v2
from .base import ArchSpec


@dataclass
class Args(deepseek_v2.Args):
    """MiniCPM3Config defaults."""

    vocab_size: int = 73448
    hidden_size: int = 2560
    intermediate_size: int = 6400
    num_hidden_layers: int = 62
    num_attention_heads: int = 40
    max_position_embeddings: int = 32768
    tie_word_embeddings: bool = True
    q_lora_rank: int | None = 768
    kv_lora_rank: int = 256
    qk_nope_head_dim: int = 64
    qk_rope_head_dim: int = 32
    v_head_dim: int | None = None  # type: ignore[assignment]  # hidden_size // num_attention_heads when absent
    n_routed_experts: int | None = None


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    v = args.v_head_dim or args.hidden_size // max(args.num_attention_heads, 1)
    return deepseek_v2.to_spec(dataclasses.replace(args, v_head_dim=v), origin)
