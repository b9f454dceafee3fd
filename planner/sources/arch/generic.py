"""The fallback for a model_type no module describes: the standard decoder, read through the
conventions configs share, so a new hybrid or MoE is not sized as a dense full-attention stack.

Why conventions rather than guesses: configs of new architectures reuse a few spellings for the
same facts (the layer plan, expert counts, MLA widths); each rule below names the family it comes
from. What no convention gives (a linear-attention or SSM mixer's own shapes, a router's extras) is
sized as a stand-in and listed as a guess, so the figure is always confidence "low".

Layer plan, first that applies: `layer_types` (full / sliding / chunked / linear kinds),
`layers_block_type` (Jamba, Granite-4 hybrid), `hybrid_override_pattern` (Nemotron-H: * M - E),
`attn_type_list` (MiniMax: 1 softmax, 0 linear), `full_attn_idxs` / `attn_layer_indices` (LFM2,
Zamba), `attn_layer_period` + `attn_layer_offset` (Jamba), `full_attention_interval` (Qwen3-Next),
`no_rope_layers` + `attention_chunk_size` (Llama 4); `kv_lora_rank` makes attention layers MLA.
Experts: `num_local_experts` / `num_experts` / `n_routed_experts` / `moe_num_experts`, placed by
`mlp_layer_types`, `moe_layers`, `first_k_dense_replace` + `moe_layer_freq`, or `decoder_sparse_step`
+ `mlp_only_layers`; shared experts from `shared_expert_intermediate_size` or `n_shared_experts` /
`num_shared_experts` x the expert width.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import CHUNKED, FULL, MLA, NONE, SLIDING, LayerSpec, MoESpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs

_LINEAR_WORDS = ("linear", "mamba", "conv", "ssm", "recurrent", "delta", "lightning", "rwkv", "kda", "gdn")


@dataclass
class Args(DecoderArgs):
    """Standard decoder keys (LlamaConfig defaults) plus every convention the plan reads."""

    num_kv_heads: int | None = None
    n_head_kv: int | None = None
    multi_query_group_num: int | None = None
    kv_channels: int | None = None
    layers_block_type: list | None = None
    hybrid_override_pattern: str | None = None
    attn_type_list: list | None = None
    full_attn_idxs: list | None = None
    attn_layer_indices: list | None = None
    attn_layer_period: int | None = None
    attn_layer_offset: int = 0
    full_attention_interval: int | None = None
    no_rope_layers: list | None = None
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    n_routed_experts: int | None = None
    moe_num_experts: int | None = None
    expert_intermediate_size: int | None = None
    n_shared_experts: int | None = None
    num_shared_experts: int | None = None
    first_k_dense_replace: int | None = None
    moe_layer_freq: int | list | None = None
    mlp_layer_types: list | None = None
    moe_layers: list | None = None
    num_nextn_predict_layers: int = 0


def _kind(name: object) -> str:
    s = str(name).lower()
    if s.startswith("sliding"):
        return SLIDING
    if s.startswith("chunk"):
        return CHUNKED
    if any(w in s for w in _LINEAR_WORDS):
        return "linear"
    if s in ("mlp", "moe", "-", "e"):
        return "ffn"
    return FULL


def plan(args: Args) -> tuple[list[str], str]:
    """Per-layer mixer kind (full / sliding / chunked / linear / ffn-only) and the convention used."""
    n = args.num_hidden_layers
    lists = (("layer_types", args.layer_types, _kind),
             ("layers_block_type", args.layers_block_type, lambda x: FULL if str(x) == "attention" else _kind(x)),
             ("attn_type_list", args.attn_type_list, lambda x: FULL if x == 1 else "linear"))
    for name, values, fn in lists:
        if isinstance(values, list) and len(values) == n:
            return [fn(v) for v in values], name
    pattern = args.hybrid_override_pattern
    if isinstance(pattern, str) and len(pattern) == n:
        return [{"*": FULL, "M": "linear"}.get(c, "ffn") for c in pattern], "hybrid_override_pattern"
    for name, idx in (("full_attn_idxs", args.full_attn_idxs), ("attn_layer_indices", args.attn_layer_indices)):
        if isinstance(idx, list) and idx:
            on = {i for i in idx if isinstance(i, int)}
            return [FULL if i in on else "linear" for i in range(n)], name
    if args.attn_layer_period:
        return [FULL if i % args.attn_layer_period == args.attn_layer_offset else "linear" for i in range(n)], \
            "attn_layer_period"
    if args.full_attention_interval:
        return [FULL if (i + 1) % args.full_attention_interval == 0 else "linear" for i in range(n)], \
            "full_attention_interval"
    if isinstance(args.no_rope_layers, list) and len(args.no_rope_layers) == n and args.attention_chunk_size:
        return [CHUNKED if r else FULL for r in args.no_rope_layers], "no_rope_layers"
    return [FULL] * n, "standard"


def _sparse(args: Args, i: int) -> bool:
    if isinstance(args.mlp_layer_types, list) and i < len(args.mlp_layer_types):
        return str(args.mlp_layer_types[i]) == "sparse"
    if isinstance(args.moe_layers, list):
        return i in args.moe_layers
    if isinstance(args.moe_layer_freq, list) and i < len(args.moe_layer_freq):
        return bool(args.moe_layer_freq[i])
    if args.first_k_dense_replace is not None or isinstance(args.moe_layer_freq, int):
        freq = args.moe_layer_freq if isinstance(args.moe_layer_freq, int) and args.moe_layer_freq > 0 else 1
        return i >= (args.first_k_dense_replace or 0) and i % freq == 0
    step = args.decoder_sparse_step or 1
    return i not in (args.mlp_only_layers or []) and (i + 1) % step == 0


def _moe(args: Args) -> MoESpec | None:
    e = args.num_local_experts or args.num_experts or args.n_routed_experts or args.moe_num_experts
    if not e or e < 2:
        return None
    width = args.moe_intermediate_size or args.expert_intermediate_size or args.intermediate_size
    shared_n = args.n_shared_experts or args.num_shared_experts or 0
    shared = args.shared_expert_intermediate_size or shared_n * width
    return MoESpec(e, args.num_experts_per_tok or 2, width, shared_n or (1 if shared else 0), shared)


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv = args.num_key_value_heads or args.num_kv_heads or args.n_head_kv or args.multi_query_group_num or nq
    hd = args.head_dim or args.kv_channels or h // nq
    kinds, source = plan(args)
    moe = _moe(args)
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    layers, guesses = [], [f"layer kinds from `{source}`"] if source != "standard" else []
    mla = bool(args.kv_lora_rank)
    rope, nope = args.qk_rope_head_dim or 64, args.qk_nope_head_dim or hd
    for i, kind in enumerate(kinds):
        p = f"model.layers.{i}"
        if kind != "ffn":  # linear / SSM mixers: attention-sized projections stand in for shapes no key gives
            t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                        qkv_bias=args.attention_bias, o_bias=args.attention_bias)
        for name in ("input_layernorm", "post_attention_layernorm"):
            t.norm(f"{p}.{name}", h)
        layer_moe = moe if moe is not None and _sparse(args, i) else None  # this layer's experts
        if layer_moe is not None:
            t.router(f"{p}.mlp", h, layer_moe.experts)
            t.experts(f"{p}.mlp", h, layer_moe.experts, layer_moe.expert_intermediate)
            if layer_moe.shared_intermediate:
                t.mlp(f"{p}.mlp.shared_experts", h, layer_moe.shared_intermediate)
        else:
            t.mlp(f"{p}.mlp", h, args.intermediate_size, bias=args.mlp_bias)
        ffn = "moe" if layer_moe is not None else "dense"
        ffn_width = layer_moe.expert_intermediate if layer_moe is not None else args.intermediate_size
        if kind in ("linear", "ffn"):
            layers.append(LayerSpec(attention=NONE, recurrent="linear_attention" if kind == "linear" else None,
                                    ffn=ffn, ffn_width=ffn_width))
        elif mla and kind == FULL:
            layers.append(LayerSpec(attention=MLA, q_heads=nq, kv_heads=nq, head_dim_k=nope + rope,
                                    head_dim_v=args.v_head_dim or hd, kv_lora_rank=args.kv_lora_rank or 0,
                                    rope_dim=rope, ffn=ffn, ffn_width=ffn_width))
        else:
            window = args.attention_chunk_size if kind == CHUNKED else args.sliding_window if kind == SLIDING else None
            layers.append(LayerSpec(attention=kind, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                    window=window, ffn=ffn, ffn_width=ffn_width))
    if "linear" in kinds:
        guesses.append("linear-attention/SSM layers: shapes and fixed state unknown (attention-sized stand-in, "
                       "state not counted)")
    if mla:
        guesses.append("MLA layers: projections sized as attention, cache as the kv_lora_rank + rope latent")
    if args.num_nextn_predict_layers:
        guesses.append(f"{args.num_nextn_predict_layers} MTP layer(s) declared: not sized")
    return finish(args, t, layers, dtype_known=known, moe=moe, guesses=tuple(guesses))
