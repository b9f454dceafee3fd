"""dots.llm1 (`dots1`, rednote-hilab): Qwen3 attention (per-head q/k norms, no bias) over DeepSeek-V3-style
routed + shared experts after `first_k_dense_replace` dense layers: GLM-4.5's layer with q/k norms always on.

transformers modeling_dots1.py: q/k/v/o under attention_bias (:198-207), q_norm / k_norm over head_dim
(:209-210); Dots1MoE (:361-366): a router with an e_score_correction_bias, experts of moe_intermediate_size,
shared_experts of n_shared_experts x moe_intermediate_size; dense layers of intermediate_size below
first_k_dense_replace; untied lm_head. Dots1Config's expert counts have no default: a release config gives them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from . import glm4_moe
from .base import ArchSpec


@dataclass
class Args(glm4_moe.Args):
    """dots.llm1's release shape (Dots1Config's own defaults leave the expert counts unset)."""

    vocab_size: int = 152064
    hidden_size: int = 4096
    intermediate_size: int = 10944
    num_hidden_layers: int = 62
    num_attention_heads: int = 32
    num_key_value_heads: int = 32
    max_position_embeddings: int = 32768
    moe_intermediate_size: int = 1408
    num_experts_per_tok: int = 6
    n_shared_experts: int = 2
    n_routed_experts: int = 128
    first_k_dense_replace: int = 1
    # Qwen-style window keys: Dots1Config writes sliding_window with max_window_layers = every layer (none slides)
    sliding_window: int | None = None
    max_window_layers: int | None = None
    O_BIAS: ClassVar[bool] = True  # modeling_dots1.py:207: o_proj biased under attention_bias too


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return glm4_moe.to_spec(replace(args, use_qk_norm=True), origin)
