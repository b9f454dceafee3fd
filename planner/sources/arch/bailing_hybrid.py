"""Ling 3 hybrid (`bailing_hybrid`, inclusionAI): delta-rule linear attention with a gated MLA layer every
`layer_group_size`, DeepSeek-style routed + shared experts after the first dense layers.

transformers modeling_bailing_hybrid.py / configuration_bailing_hybrid.py:
- the plan: `layer_types`, else full attention where (i + 1) % layer_group_size == 0; `mlp_layer_types`, else
  dense below first_k_dense_replace (configuration :144-153);
- a linear layer (BailingHybridDeltaAttention :673-705): q/k/v [heads x head_dim, h], a depthwise conv1d over
  3 x heads x head_dim channels without bias, forget_gate (A_log [heads], dt_bias [heads x head_dim],
  f_proj [heads x head_dim, h], :425-435), b_proj [heads, h], o_norm [head_dim], o_proj, g_proj [heads x
  head_dim, h]; its state is heads x head_dim x head_dim plus the conv window;
- a full layer (BailingHybridAttention :292-349): DeepSeek MLA (q_proj, or q_a / q_b under q_lora_rank,
  kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj) plus a head-wise g_proj [heads, h];
- a sparse MLP: experts (num_local_experts of moe_intermediate_size), gate.weight [E, h] and
  e_score_correction_bias [E], shared_experts of moe_intermediate_size x n_shared_experts;
- kept in float32 in the checkpoint (_keep_in_fp32_modules_strict :928-934): e_score_correction_bias,
  gate.weight, conv1d, dt_bias, A_log.
MTP: the checkpoint stores num_mtp_layers more layers after the decoder (transformers ignores them on load,
:964-967); their layout is not in the modelling code, so they are named as a doubt, not sized.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import MLA, NONE, LayerSpec, MoESpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs


@dataclass
class Args(DecoderArgs):
    """BailingHybridConfig defaults."""

    vocab_size: int = 157184
    hidden_size: int = 2560
    intermediate_size: int = 6144
    moe_intermediate_size: int = 768
    num_hidden_layers: int = 42
    num_attention_heads: int = 32
    max_position_embeddings: int = 262144
    # BailingHybridConfig.attribute_map: a saved config spells these num_shared_experts, num_experts,
    # num_experts_per_token, num_nextn_predict_layers, model_max_length (either spelling is read)
    n_shared_experts: int | None = None
    num_shared_experts: int | None = None
    num_local_experts: int | None = None
    num_experts_per_token: int | None = None
    num_nextn_predict_layers: int | None = None
    model_max_length: int | None = None
    linear_head_dim: int | None = None
    # BailingHybridConfig.__post_init__ sets these from num_attention_heads, short_conv_kernel_size and the
    # nope + rope widths (configuration :140-159): a saved config repeats them
    linear_num_heads: int | None = None
    linear_conv_kernel_dim: int | None = None
    qk_head_dim: int | None = None  # the linear layers' head width (a re-saved config's head_dim is the rope's)
    first_k_dense_replace: int = 2
    kv_lora_rank: int = 512
    q_lora_rank: int | None = None
    qk_rope_head_dim: int = 64
    qk_nope_head_dim: int = 128
    v_head_dim: int = 128
    head_dim: int | None = 128
    short_conv_kernel_size: int = 4
    layer_group_size: int = 6
    mlp_layer_types: list | None = None
    num_mtp_layers: int | None = None


def _first(*values: int | None, default: int) -> int:
    return next((v for v in values if v is not None), default)


def _mla(t: Tensors, args: Args, a: str) -> None:
    t.mla(a, hidden=args.hidden_size, heads=args.num_attention_heads, q_lora_rank=args.q_lora_rank,
          kv_lora_rank=args.kv_lora_rank, nope=args.qk_nope_head_dim, rope=args.qk_rope_head_dim,
          v_dim=args.v_head_dim, bias=args.attention_bias)
    t.linear(f"{a}.g_proj", args.hidden_size, args.num_attention_heads, "attention")



def _delta(t: Tensors, args: Args, a: str) -> tuple[int, int]:
    """One linear-attention mixer's tensors; returns (conv channels, state elements)."""
    h, nh, hd = args.hidden_size, args.num_attention_heads, _first(args.linear_head_dim, args.head_dim, default=128)
    qkv = nh * hd
    for name in ("q_proj", "k_proj", "v_proj"):
        t.linear(f"{a}.{name}", h, qkv, "recurrent")
    t.add(f"{a}.conv1d.weight", (3 * qkv, 1, args.short_conv_kernel_size), "other", "F32")
    t.add(f"{a}.forget_gate.A_log", (nh,), "norm", "F32")
    t.add(f"{a}.forget_gate.dt_bias", (qkv,), "norm", "F32")
    t.linear(f"{a}.forget_gate.f_proj", h, qkv, "recurrent")
    t.linear(f"{a}.b_proj", h, nh, "recurrent")
    t.norm(f"{a}.o_norm", hd)
    t.linear(f"{a}.o_proj", qkv, h, "recurrent")
    t.linear(f"{a}.g_proj", h, qkv, "recurrent")
    return 3 * qkv, nh * hd * hd


def _plan(args: Args) -> tuple[list[bool], list[bool]]:
    """(full attention?, sparse MLP?) per layer."""
    n = args.num_hidden_layers
    if isinstance(args.layer_types, list) and len(args.layer_types) == n:
        full = [str(x) == "full_attention" for x in args.layer_types]
    else:
        full = [(i + 1) % max(args.layer_group_size, 1) == 0 for i in range(n)]
    if isinstance(args.mlp_layer_types, list) and len(args.mlp_layer_types) == n:
        sparse = [str(x) == "sparse" for x in args.mlp_layer_types]
    else:
        sparse = [i >= args.first_k_dense_replace for i in range(n)]
    return full, sparse


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "kv_lora_rank", origin=origin)
    h, nh = args.hidden_size, args.num_attention_heads
    e = _first(args.num_local_experts, args.num_experts, default=512)
    topk = _first(args.num_experts_per_tok, args.num_experts_per_token, default=8)
    n_shared = _first(args.n_shared_experts, args.num_shared_experts, default=1)
    mtp = _first(args.num_mtp_layers, args.num_nextn_predict_layers, default=1)
    args.max_position_embeddings = _first(args.model_max_length, args.max_position_embeddings, default=262144)
    shared = args.moe_intermediate_size * n_shared
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    moe = MoESpec(experts=e, experts_per_token=topk,
                  expert_intermediate=args.moe_intermediate_size, shared_experts=n_shared,
                  shared_intermediate=shared) if e else None
    layers = []
    for i, (full, sparse) in enumerate(zip(*_plan(args), strict=True)):
        p = f"model.layers.{i}"
        if full:
            _mla(t, args, f"{p}.self_attn")
        else:
            conv, state = _delta(t, args, f"{p}.self_attn")
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        sparse = sparse and moe is not None
        if sparse:
            t.add(f"{p}.mlp.gate.weight", (e, h), "other", "F32")
            t.add(f"{p}.mlp.gate.e_score_correction_bias", (e,), "norm", "F32")
            t.experts(f"{p}.mlp", h, e, args.moe_intermediate_size)
            if shared:
                t.mlp(f"{p}.mlp.shared_experts", h, shared)
        else:
            t.mlp(f"{p}.mlp", h, args.intermediate_size)
        ffn, width = ("moe", args.moe_intermediate_size) if sparse else ("dense", args.intermediate_size)
        if full:
            layers.append(LayerSpec(attention=MLA, q_heads=nh, kv_heads=nh,
                                    head_dim_k=args.qk_nope_head_dim + args.qk_rope_head_dim,
                                    head_dim_v=args.v_head_dim, kv_lora_rank=args.kv_lora_rank,
                                    rope_dim=args.qk_rope_head_dim, ffn=ffn, ffn_width=width))
        else:
            layers.append(LayerSpec(attention=NONE, recurrent="linear_attention", conv_dim=conv,
                                    conv_kernel=args.short_conv_kernel_size, recurrent_state_elems=state,
                                    q_heads=nh, ffn=ffn, ffn_width=width))
    guesses = (f"the checkpoint also stores {mtp} MTP layer(s) after the decoder (layers "
               f"{args.num_hidden_layers}+, ignored by transformers on load): their layout is not in the modelling "
               f"code, not sized",) if mtp else ()
    return finish(args, t, layers, dtype_known=known, moe=moe, guesses=guesses)
