"""GLM-4.7-Flash (`glm4_moe_lite`): DeepSeek-V3's MLA + routed/shared experts under GLM's names.

Glm4MoeLiteConfig (transformers configuration_glm4_moe_lite.py) spells the layer plan as
`mlp_layer_types` ("dense"/"sparse") beside first_k_dense_replace, uses noaux_tc routing (router
correction bias) and ships `num_nextn_predict_layers` MTP layers numbered past the decoder, each with
its own embed_tokens and shared_head (as DeepSeek-V3's), on their own ledger row.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import deepseek_v2
from .base import ArchSpec


@dataclass
class Args(deepseek_v2.Args):
    """Glm4MoeLiteConfig defaults."""

    vocab_size: int = 154880
    hidden_size: int = 2048
    intermediate_size: int = 10240
    moe_intermediate_size: int = 1536
    num_hidden_layers: int = 47
    num_attention_heads: int = 20
    max_position_embeddings: int = 202752
    q_lora_rank: int | None = 768
    kv_lora_rank: int = 512
    qk_nope_head_dim: int = 192
    qk_rope_head_dim: int = 64
    v_head_dim: int = 256
    n_routed_experts: int | None = 64
    n_shared_experts: int | None = 1
    num_experts_per_tok: int | None = 4
    first_k_dense_replace: int = 1
    topk_method: str = "noaux_tc"
    num_nextn_predict_layers: int = 1


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return deepseek_v2.to_spec(args, origin)
