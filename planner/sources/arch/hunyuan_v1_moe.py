"""Hunyuan MoE V1 (`hunyuan_v1_moe`; Tencent's remote-code `hunyuan` configs: Hunyuan-A13B): per-layer lists
for the expert width, top-k and shared-expert count, one shared MLP beside the routed experts.

Why its own file: the config may give `moe_intermediate_size`, `moe_topk` and `num_shared_expert` as one value
per layer; a reader that expects integers refuses a model that has an exact answer.
Shapes from vLLM vllm/model_executor/models/hunyuan_v1.py @ e87ba1e (HunYuanSparseMoeBlock, HunYuanDecoderLayer)
and transformers 5.24.0 modeling_hunyuan_v1_moe.py:
  expert width = moe_intermediate_size (int, or [layer]); top-k = moe_topk (int, or [layer]);
  gate [num_experts, hidden], no bias (transformers :232 `wg`);
  shared_mlp (when use_mixed_mlp_moe): a gated MLP of intermediate_size x num_shared_expert[layer];
  attention q/k/v/o with head_dim (or the remote `attention_head_dim`), query_layernorm / key_layernorm
  over head_dim (use_qk_norm; transformers :178-179 always builds them); two norms per layer.
Cross-layer attention (`use_cla`: layers past each group's first reuse its K/V, q/o only) is sized as
ordinary attention and said as a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.constants import MAX_HIDDEN
from ...core.errors import ConfigError
from ...core.spec import LayerSpec, MoESpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs


@dataclass
class Args(DecoderArgs):
    """HunYuanMoEV1Config defaults (transformers configuration_hunyuan_v1_moe.py) plus the remote keys."""

    vocab_size: int = 290943
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    attention_head_dim: int | None = None
    moe_intermediate_size: int | list | None = None  # type: ignore[assignment]  # per-layer list allowed
    moe_topk: int | list = 1
    num_shared_expert: int | list = 1
    use_mixed_mlp_moe: bool = True
    use_qk_norm: bool = True
    use_cla: bool = False
    cla_share_factor: int = 1


def per_layer(args: Args, key: str, i: int, origin: str, *, bound: int = MAX_HIDDEN * 8) -> int:
    """One layer's value of a key given as an int or a list with one entry per layer (vLLM reads [layer_id])."""
    raw: Any = getattr(args, key)
    v = raw[i] if isinstance(raw, list) and len(raw) == args.num_hidden_layers else raw
    if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > bound:
        shown = f"a list of {len(raw)}" if isinstance(raw, list) else repr(raw)
        raise ConfigError(f"Cannot size the model from '{origin}': key '{key}' must be an integer or one per layer "
                          f"({args.num_hidden_layers} layers; got {shown:.60}).", origin, key=key)
    return v


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq, n = args.hidden_size, args.num_attention_heads, args.num_hidden_layers
    nkv = args.num_key_value_heads or nq
    hd = args.head_dim or args.attention_head_dim or h // nq
    e = args.num_experts or 1
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    layers, widths, topks, shared = [], set(), set(), set()
    for i in range(n):
        p = f"model.layers.{i}"
        t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                    qkv_bias=args.attention_bias, o_bias=args.attention_bias)
        if args.use_qk_norm:
            t.norm(f"{p}.self_attn.query_layernorm", hd)
            t.norm(f"{p}.self_attn.key_layernorm", hd)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        if e > 1:
            width = per_layer(args, "moe_intermediate_size", i, origin) if args.moe_intermediate_size is not None \
                else args.intermediate_size
            share = per_layer(args, "num_shared_expert", i, origin, bound=1024) if args.use_mixed_mlp_moe else 0
            topks.add(per_layer(args, "moe_topk", i, origin, bound=e))
            t.add(f"{p}.mlp.gate.wg.weight", (e, h), "other")
            t.experts(f"{p}.mlp", h, e, width)
            if share:
                t.mlp(f"{p}.mlp.shared_mlp", h, args.intermediate_size * share)
            widths.add(width)
            shared.add(share)
            layers.append(LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd, ffn="moe", ffn_width=width))
        else:
            t.mlp(f"{p}.mlp", h, args.intermediate_size, bias=args.mlp_bias)
            layers.append(LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                    ffn_width=args.intermediate_size))
    moe, notes, guesses = None, [], []
    if e > 1:
        share = max(shared)
        moe = MoESpec(e, max(topks), max(widths), shared_experts=1 if share else 0,
                      shared_intermediate=args.intermediate_size * share)
        if len(widths) > 1 or len(topks) > 1 or len(shared) > 1:
            notes.append("per-layer expert widths / top-k / shared experts differ: speed uses the largest")
    if args.use_cla and args.cla_share_factor > 1:
        guesses.append(f"cross-layer attention (use_cla, factor {args.cla_share_factor}): every layer sized with "
                       "its own K/V projections and cache")
    return finish(args, t, layers, dtype_known=known, moe=moe, notes=notes, guesses=tuple(guesses))
