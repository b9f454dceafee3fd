"""DeepSeek-V3.2 (`deepseek_v32`): V3's MLA + MoE (and its MTP layer with its own embedding and head copies)
plus a DSA indexer in every layer, whose key cache is one more row per token.

Why its own file: sized as V3, the indexer's weights (~14M per layer) and its cache are missing, and as an
unregistered type it falls to the generic rule. Shapes from transformers 5.24.0 modeling_deepseek_v32.py
DeepseekV32Indexer (:160-175): wq_b [index_n_heads x index_head_dim, q_lora_rank], wk [index_head_dim,
hidden], k_norm LayerNorm(index_head_dim) with bias, weights_proj [index_n_heads, hidden]; attached as
`self_attn.indexer` (:382). The checkpoint keeps weights_proj in 16-bit beside fp8 wq_b / wk, so it is
not grouped with the quantisable projections. The indexer caches one key of index_head_dim per token
(cache.update_indexer, :225-226); fits/memory.py sizes it per engine.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from . import deepseek_v2, deepseek_v3
from .base import ArchSpec, Tensors, mtp_spec, require_positive


@dataclass
class Args(deepseek_v3.Args):
    """DeepseekV32Config: DeepseekV3Config plus the indexer (transformers configuration_deepseek_v32.py)."""

    index_n_heads: int = 64
    index_head_dim: int = 128
    index_topk: int = 2048
    # DeepseekV32Config / GlmMoeDsaConfig write layer_types = ["indexed_attention"] x layers: the mask kind,
    # every layer MLA (configuration_deepseek_v32.py:137-138); where the indexer sits is indexer_types' (GLM-5)
    layer_types: list | None = None


def indexer(t: Tensors, p: str, args: Args) -> None:
    """One DSA indexer at `p`.self_attn.indexer (GLM-5 builds it only on its "full" layers: glm_moe_dsa.py)."""
    a = f"{p}.self_attn.indexer"
    t.linear(f"{a}.wq_b", args.q_lora_rank or args.hidden_size, args.index_n_heads * args.index_head_dim, "attention")
    t.linear(f"{a}.wk", args.hidden_size, args.index_head_dim, "attention")
    t.norm(f"{a}.k_norm", args.index_head_dim, bias=True)
    t.add(f"{a}.weights_proj.weight", (args.index_n_heads, args.hidden_size), "other")


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "index_n_heads", "index_head_dim", origin=origin)
    spec = deepseek_v2.to_spec(args, origin)
    t, m = Tensors(spec.dtype), Tensors(spec.dtype)
    for i in range(args.num_hidden_layers):
        indexer(t, f"model.layers.{i}", args)
    for j in range(args.num_nextn_predict_layers):  # the MTP layer is a full decoder layer: it has one too
        indexer(m, f"model.layers.{args.num_hidden_layers + j}", args)
    layers = tuple(dataclasses.replace(layer, index_dim=args.index_head_dim) for layer in spec.layers)
    m.items[:0] = spec.mtp_tensors  # V3's MTP tensors first, then its indexer
    mtp_tensors = tuple(m.items)
    mtp = mtp_spec(m, args.num_nextn_predict_layers)
    return dataclasses.replace(
        spec, layers=layers, tensors=spec.tensors + tuple(t.items), mtp=mtp, mtp_tensors=mtp_tensors,
        notes=(*spec.notes, f"DSA indexer: {args.index_n_heads} heads x {args.index_head_dim} per layer, one "
                            f"{args.index_head_dim}-wide key cached per token beside the MLA latent"))
