"""GLM-5.x (`glm_moe_dsa`): DeepSeek-V3.2's MLA + MoE + DSA layout, where only the layers `indexer_types`
marks "full" carry a DSA indexer; a "shared" layer reuses the previous full layer's top-k, so it has no
indexer weights and caches no indexer key.

Shapes from transformers 5.24.0 modular_glm_moe_dsa.py: GlmMoeDsaConfig(DeepseekV32Config) with GLM-5's
defaults (:83-110); indexer_types from the config, else from index_topk_pattern ("F"/"S"), else "full"
where max(i - index_skip_topk_offset + 1, 0) % index_topk_freq == 0 (:112-124); GlmMoeDsaAttention builds
no indexer on a shared layer (`self.indexer = None if self.skip_topk`, :209-210), the attention itself
is DeepSeek-V3.2's MLA. The MTP layer (`model.layers.78`, ignored by transformers on load) is sized as
V3.2's: an MLA decoder layer with an indexer plus its own embedding and shared head copies.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...core.errors import ConfigError
from . import deepseek_v2, deepseek_v32
from .base import ArchSpec, Tensors, mtp_spec, require_positive


@dataclass
class Args(deepseek_v32.Args):
    """GlmMoeDsaConfig defaults (transformers 5.24.0)."""

    vocab_size: int = 154880
    hidden_size: int = 6144
    intermediate_size: int = 12288
    moe_intermediate_size: int = 2048
    num_hidden_layers: int = 78
    num_attention_heads: int = 64
    n_shared_experts: int | None = 1
    n_routed_experts: int | None = 256
    kv_lora_rank: int = 512
    q_lora_rank: int | None = 2048
    qk_rope_head_dim: int = 64
    v_head_dim: int = 256
    qk_nope_head_dim: int = 192
    num_experts_per_tok: int | None = 8
    max_position_embeddings: int = 202752
    index_topk: int = 2048
    index_head_dim: int = 128
    index_n_heads: int = 32
    indexer_types: list | None = None
    index_topk_pattern: str | list | None = None
    index_topk_freq: int = 1
    index_skip_topk_offset: int = 2


def indexer_kinds(args: Args, origin: str) -> list[bool]:
    """True where a layer runs its own indexer (GlmMoeDsaConfig.__post_init__'s rule).

    Raises:
        ConfigError: a list that does not name "full" / "shared" for every layer.
    """
    n = args.num_hidden_layers
    kinds = args.indexer_types
    if kinds is None and args.index_topk_pattern is not None:
        pat = args.index_topk_pattern
        kinds = [{"F": "full", "S": "shared"}.get(c, c) for c in pat] if isinstance(pat, str) else list(pat)
    if kinds is None:
        freq, offset = max(args.index_topk_freq, 1), args.index_skip_topk_offset
        return [max(i - offset + 1, 0) % freq == 0 for i in range(n)]
    bad = sorted({str(k) for k in kinds} - {"full", "shared"})
    if len(kinds) < n or bad:
        raise ConfigError(f"Cannot size the model from '{origin}': indexer_types must say \"full\" or \"shared\" "
                          f"for each of the {n} layers (got {len(kinds)}{'; unknown ' + str(bad) if bad else ''}).",
                          origin, key="indexer_types")
    return [str(k) == "full" for k in kinds[:n]]


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "index_n_heads", "index_head_dim", origin=origin)
    full = indexer_kinds(args, origin)
    spec = deepseek_v2.to_spec(args, origin)
    t, m = Tensors(spec.dtype), Tensors(spec.dtype)
    for i, own in enumerate(full):
        if own:
            deepseek_v32.indexer(t, f"model.layers.{i}", args)
    for j in range(args.num_nextn_predict_layers):
        deepseek_v32.indexer(m, f"model.layers.{args.num_hidden_layers + j}", args)
    layers = tuple(dataclasses.replace(layer, index_dim=args.index_head_dim if own else 0)
                   for layer, own in zip(spec.layers, full, strict=True))
    m.items[:0] = spec.mtp_tensors
    return dataclasses.replace(
        spec, layers=layers, tensors=spec.tensors + tuple(t.items), mtp=mtp_spec(m, args.num_nextn_predict_layers),
        mtp_tensors=tuple(m.items),
        notes=(*spec.notes, f"DSA indexer on {sum(full)} of {len(full)} layers ('full'); shared layers cache no "
                            f"indexer key"))
