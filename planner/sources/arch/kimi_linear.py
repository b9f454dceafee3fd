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

Kimi K3 (`kimi_k3` around a `kimi_linear` text_config; moonshotai/Kimi-K3 modeling_kimi_linear.py, as public
ports load its checkpoint tensor by tensor) adds:
* latent MoE (`routed_expert_hidden_size` L, 0 or absent: none): the routed experts run at width L, between
  `routed_expert_down_proj` [L, h] and `routed_expert_up_proj` [h, L] (and `routed_expert_norm` [L] with
  `latent_moe_use_norm`); the router and the shared experts stay at h. The two projections are stored as plain
  weights in the released mxfp4 checkpoint (only `experts.N.w1/w2/w3` are packed), so they are not quantisable
  matrices here;
* Attention Residuals (`attn_res_block_size` set): per layer `self_attention_res_norm` and `mlp_res_norm` [h]
  and `self_attention_res_proj` / `mlp_res_proj` [1, h], plus `model.output_attn_res_norm` / `_proj`;
* `mla_use_output_gate`: an MLA `g_proj` [heads x v_head_dim, h]; `linear_attn_config.use_full_rank_gate`: a
  KDA `g_proj` [heads hd, h] instead of the low-rank g_a / g_b pair. Neither changes the cache.
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
    routed_expert_hidden_size: int | None = None  # Kimi K3 latent MoE (0 / None: experts at hidden_size)
    latent_moe_use_norm: bool = False
    attn_res_block_size: int | None = None
    mla_use_output_gate: bool = False
    # transformers' native KimiLinearConfig (5.x) writes the plan and the KDA sizes as flat keys instead of
    # linear_attn_config (configuration_kimi_linear.py): layer_types ("linear_attention" / "full_attention"),
    # mlp_layer_types ("dense" / "sparse"), linear_num_heads, linear_head_dim, linear_conv_kernel_dim; a config
    # re-saved by it has linear_attn_config null. qk_head_dim = nope + rope is derived.
    layer_types: list | None = None
    mlp_layer_types: list | None = None
    linear_num_heads: int | None = None
    linear_head_dim: int | None = None
    linear_conv_kernel_dim: int | None = None
    qk_head_dim: int | None = None


def _kda_plan(args: Args, origin: str) -> tuple[set[int], int, int, int]:
    lac = args.linear_attn_config or {}
    kda = {i - 1 for i in lac.get("kda_layers") or [] if isinstance(i, int)}
    heads, hd, kernel = (lac.get(k) for k in ("num_heads", "head_dim", "short_conv_kernel_size"))
    types = args.layer_types
    if not lac and isinstance(types, list) and len(types) == args.num_hidden_layers:
        kda = {i for i, x in enumerate(types) if str(x) == "linear_attention"}
        heads = args.linear_num_heads or args.num_attention_heads
        hd, kernel = args.linear_head_dim, args.linear_conv_kernel_dim
    if kda and not all(isinstance(v, int) and 0 < v <= 65536 for v in (heads, hd, kernel)):
        raise ConfigError(f"Cannot size the model from '{origin}': linear_attn_config needs positive num_heads, "
                          f"head_dim and short_conv_kernel_size.", origin, key="linear_attn_config")
    return kda, heads or 0, hd or 0, kernel or 0


def _latent(args: Args, origin: str) -> int:
    """The routed experts' width: routed_expert_hidden_size when set (0 / None: hidden_size)."""
    latent = args.routed_expert_hidden_size
    if latent is None or latent == 0:
        return args.hidden_size
    if not isinstance(latent, int) or isinstance(latent, bool) or latent < 0 or latent > args.hidden_size:
        raise ConfigError(f"Cannot size the model from '{origin}': routed_expert_hidden_size must be a whole number "
                          f"from 0 to hidden_size {args.hidden_size} (got {latent!r}).", origin,
                          key="routed_expert_hidden_size")
    return latent


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nh = args.hidden_size, args.num_attention_heads
    kda, kh, khd, kernel = _kda_plan(args, origin)
    full_rank_gate = bool((args.linear_attn_config or {}).get("use_full_rank_gate"))
    latent = _latent(args, origin)
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
            for n in ("f",) if full_rank_gate else ("f", "g"):
                t.linear(f"{a}.{n}_a_proj", h, khd, "recurrent")
                t.linear(f"{a}.{n}_b_proj", khd, w, "recurrent")
            if full_rank_gate:
                t.linear(f"{a}.g_proj", h, w, "recurrent")
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
            if args.mla_use_output_gate:
                t.linear(f"{a}.g_proj", h, nh * args.v_head_dim, "attention")
            mixer = LayerSpec(attention=MLA, q_heads=nh, kv_heads=nh, head_dim_k=qk, head_dim_v=args.v_head_dim,
                              kv_lora_rank=args.kv_lora_rank, rope_dim=args.qk_rope_head_dim)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        if args.attn_res_block_size is not None:
            _attention_residuals(t, p, h, ("self_attention", "mlp"))
        mlp_types = args.mlp_layer_types
        if isinstance(mlp_types, list) and len(mlp_types) == args.num_hidden_layers:
            sparse = moe is not None and str(mlp_types[i]) == "sparse"
        else:
            sparse = moe is not None and i >= args.first_k_dense_replace and i % max(args.moe_layer_freq, 1) == 0
        if sparse:
            t.router(f"{p}.block_sparse_moe", h, e, correction_bias=True)
            t.experts(f"{p}.block_sparse_moe", latent, e, mi)
            if latent != h:  # stored unquantised beside packed experts: "other", not a quantisable matrix
                t.linear(f"{p}.block_sparse_moe.routed_expert_down_proj", h, latent, "other")
                t.linear(f"{p}.block_sparse_moe.routed_expert_up_proj", latent, h, "other")
                if args.latent_moe_use_norm:
                    t.norm(f"{p}.block_sparse_moe.routed_expert_norm", latent)
            if args.num_shared_experts:
                t.mlp(f"{p}.block_sparse_moe.shared_experts", h, args.num_shared_experts * mi)
        else:
            t.mlp(f"{p}.mlp", h, args.intermediate_size)
        # the mixer built above, with this layer's FFN
        layers.append(replace(mixer, ffn="moe" if sparse else "dense",
                              ffn_width=mi if sparse else args.intermediate_size))
    if args.attn_res_block_size is not None:
        _attention_residuals(t, "model", h, ("output",))
    return finish(args, t, layers, dtype_known=known, moe=moe)


def _attention_residuals(t: Tensors, p: str, h: int, sites: tuple[str, ...]) -> None:
    """Attention Residuals' weights at each site: an RMSNorm [h] and a [1, h] projection (stored plain)."""
    for site in sites:
        t.norm(f"{p}.{site}_attn_res_norm" if site == "output" else f"{p}.{site}_res_norm", h)
        t.add(f"{p}.{site}_attn_res_proj.weight" if site == "output" else f"{p}.{site}_res_proj.weight", (1, h),
              "other")
