"""DFlash block-diffusion drafts (`DFlashDraftModel`, z-lab; config model_type `qwen3`): Qwen3 decoder layers
fed by an `fc` over several target layers, with no embedding and no head of their own.

Why its own file: read as the `qwen3` its model_type says, the draft gets an embedding and an lm_head
it does not ship (+51% on a held-out DFlash draft) and loses its fc. Shapes from vLLM
vllm/model_executor/models/qwen3_dflash.py @ d952bda (DFlashQwen3Model, DFlashQwen3DecoderLayer,
DFlashQwen3ForCausalLM.load_weights):
  layers.N: Qwen3 attention (q/k/v/o, q_norm / k_norm over head_dim), gated MLP, input / post-attention norms
  fc [hidden, (target_hidden_size or hidden) x len(dflash_config.target_layer_ids)], no bias; hidden_norm; norm
  embed_tokens and lm_head: taken from the target when the checkpoint has none (`includes_embed_tokens`,
  process_eagle_weight), so neither is stored nor resident beyond the target's
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...core.constants import MAX_LAYERS
from ...core.errors import ConfigError
from ...core.spec import LayerSpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs


@dataclass
class Args(DecoderArgs):
    """The draft's Qwen3Config keys plus its dflash_config."""

    dflash_config: dict = field(default_factory=dict)
    target_hidden_size: int | None = None


def _taps(args: Args, origin: str) -> int:
    """How many target layers the fc reads (dflash_config.target_layer_ids; vLLM _resolve_dflash_layer_ids)."""
    ids = args.dflash_config.get("target_layer_ids") or args.dflash_config.get("layer_ids")
    if not isinstance(ids, list) or not ids or len(ids) > MAX_LAYERS \
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise ConfigError(f"Cannot size the DFlash draft from '{origin}': dflash_config.target_layer_ids must be a "
                          f"non-empty list of layer numbers (got {ids!r:.60}).", origin,
                          key="dflash_config.target_layer_ids")
    return len(ids)


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv, hd = args.num_key_value_heads or nq, args.head_dim or h // nq
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"layers.{i}"
        t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                    qkv_bias=args.attention_bias, qk_norm="head")
        t.mlp(f"{p}.mlp", h, args.intermediate_size)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                ffn_width=args.intermediate_size))
    t.linear("fc", (args.target_hidden_size or h) * _taps(args, origin), h, "other")
    t.norm("hidden_norm", h)
    t.norm("norm", h)
    spec = finish(args, t, layers, dtype_known=known,
                  notes=["DFlash draft: embedding and lm_head shared with the target (none stored)"])
    return spec
