"""Moonshot Kimi-Linear (`kimi_linear`, remote code): Kimi Delta Attention (KDA) layers with MLA layers
every few (`linear_attn_config`), DeepSeek-style routed + shared experts after the first dense layers.

`linear_attn_config.full_attn_layers` / `kda_layers` count layers from 1 (modeling_kimi.py
`is_kda_layer`: `(layer_idx + 1) in kda_layers`). An MLA layer is DeepSeek-V2's (q_lora_rank null ->
q_proj), caching the kv_lora_rank + qk_rope_head_dim latent. A KDA layer (vLLM kda.py
KimiDeltaAttention) holds q/k/v_proj [heads hd, h], three depthwise short convs [heads hd, kernel],
f_a/g_a [hd, h] + f_b/g_b [heads hd, hd] low-rank gates, b_proj [heads, h], A_log [heads], dt_bias
[heads hd], o_norm [hd], o_proj [h, heads hd]; its state per sequence is 3 convs of heads hd x
(kernel - 1) plus heads x hd x hd. MoE: num_experts of moe_intermediate_size, sigmoid router with a
correction bias, num_shared_experts x moe_intermediate_size shared, dense before first_k_dense_replace.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...core.errors import ConfigError
from ...core.spec import MLA, NONE, LayerSpec, MoESpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """KimiLinearConfig defaults (Kimi-Linear-48B-A3B shapes)."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 163840
    hidden_size: int = 2304
    intermediate_size: int = 9216
    num_hidden_layers: int = 27
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None  # MLA: not a cache width
    head_dim: int | None = None
    max_position_embeddings: int = 1048576
    tie_word_embeddings: bool = False
    q_lora_rank: int | None = None
    kv_lora_rank: int = 512
    qk_nope_head_dim: int = 128
    qk_rope_head_dim: int = 64
    v_head_dim: int = 128
    mla_use_nope: bool = False
    linear_attn_config: dict | None = None
    num_experts: int = 256
    num_experts_per_token: int = 8
    moe_intermediate_size: int = 1024
    num_shared_experts: int = 1
    first_k_dense_replace: int = 1
    moe_layer_freq: int = 1
    num_nextn_predict_layers: int = 0


def _kda_plan(args: Args, origin: str) -> tuple[set[int], int, int, int]:
    lac = args.linear_attn_config or {}
    kda = {i - 1 for i in lac.get("kda_layers") or [] if isinstance(i, int)}
    heads, hd, kernel = (lac.get(k) for k in ("num_heads", "head_dim", "short_conv_kernel_size"))
    if kda and not all(isinstance(v, int) and 0 < v <= 65536 for v in (heads, hd, kernel)):
        raise ConfigError(f"Cannot size the model from '{origin}': linear_attn_config needs positive num_heads, "
                          f"head_dim and short_conv_kernel_size.", origin, key="linear_attn_config")
    return kda, heads or 0, hd or 0, kernel or 0


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nh = args.hidden_size, args.num_attention_heads
    kda, kh, khd, kernel = _kda_plan(args, origin)
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    e, mi = args.num_experts, args.moe_intermediate_size
    moe = MoESpec(e, args.num_experts_per_token, mi, args.num_shared_experts, args.num_shared_experts * mi) \
        if e else None
    qk = args.qk_nope_head_dim + args.qk_rope_head_dim
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"model.layers.{i}"
        a = f"{p}.self_attn"
        if i in kda:
            w = kh * khd
            for n in ("q_proj", "k_proj", "v_proj"):
                t.linear(f"{a}.{n}", h, w, "recurrent")
            for n in ("q_conv1d", "k_conv1d", "v_conv1d"):
                t.add(f"{a}.{n}.weight", (w, kernel), "other")
            for n in ("f", "g"):
                t.linear(f"{a}.{n}_a_proj", h, khd, "recurrent")
                t.linear(f"{a}.{n}_b_proj", khd, w, "recurrent")
            t.linear(f"{a}.b_proj", h, kh, "recurrent")
            t.add(f"{a}.A_log", (kh,), "norm")
            t.add(f"{a}.dt_bias", (w,), "norm")
            t.norm(f"{a}.o_norm", khd)
            t.linear(f"{a}.o_proj", w, h, "recurrent")
            mixer = LayerSpec(attention=NONE, recurrent="linear_attention", conv_dim=3 * w, conv_kernel=kernel,
                              recurrent_state_elems=kh * khd * khd, q_heads=kh)
        else:
            if args.q_lora_rank:
                t.linear(f"{a}.q_a_proj", h, args.q_lora_rank, "attention")
                t.norm(f"{a}.q_a_layernorm", args.q_lora_rank)
                t.linear(f"{a}.q_b_proj", args.q_lora_rank, nh * qk, "attention")
            else:
                t.linear(f"{a}.q_proj", h, nh * qk, "attention")
            t.linear(f"{a}.kv_a_proj_with_mqa", h, args.kv_lora_rank + args.qk_rope_head_dim, "attention")
            t.norm(f"{a}.kv_a_layernorm", args.kv_lora_rank)
            t.linear(f"{a}.kv_b_proj", args.kv_lora_rank, nh * (args.qk_nope_head_dim + args.v_head_dim), "attention")
            t.linear(f"{a}.o_proj", nh * args.v_head_dim, h, "attention")
            mixer = LayerSpec(attention=MLA, q_heads=nh, kv_heads=nh, head_dim_k=qk, head_dim_v=args.v_head_dim,
                              kv_lora_rank=args.kv_lora_rank, rope_dim=args.qk_rope_head_dim)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        sparse = moe is not None and i >= args.first_k_dense_replace and i % max(args.moe_layer_freq, 1) == 0
        if sparse:
            t.router(f"{p}.block_sparse_moe", h, e, correction_bias=True)
            t.experts(f"{p}.block_sparse_moe", h, e, mi)
            if args.num_shared_experts:
                t.mlp(f"{p}.block_sparse_moe.shared_experts", h, args.num_shared_experts * mi)
        else:
            t.mlp(f"{p}.mlp", h, args.intermediate_size)
        # the mixer built above, with this layer's FFN
        layers.append(replace(mixer, ffn="moe" if sparse else "dense",
                              ffn_width=mi if sparse else args.intermediate_size))
    return finish(args, t, layers, dtype_known=known, moe=moe)
