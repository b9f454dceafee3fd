"""Xiaomi MiMo-V2-Flash (`mimo_v2_flash`, the Hub's `mimo_v2`): a per-layer plan of full and sliding layers
with their own head counts and dims, a K width different from the V width, sinks on sliding layers, and
256 routed experts on every layer but the first.

Why its own file: sized as one attention kind with the full layers' heads on every layer, the KV figure is
6.4x off (issue #30). The Hub config spells the plan as vLLM reads it (vLLM
vllm/model_executor/models/mimo_v2_flash.py @ 91cf2f1, MiMoV2FlashDecoderLayer / MiMoV2Attention):
  hybrid_layer_pattern[i] == 1 -> sliding layer: swa_num_attention_heads, swa_num_key_value_heads,
      swa_head_dim (q/k), swa_v_head_dim (v), window sliding_window_size, attention_sink_bias [heads] when
      add_swa_attention_sink_bias; else a full layer: num_attention_heads, num_key_value_heads, head_dim,
      v_head_dim (add_full_attention_sink_bias for its sinks)
  q_proj [heads x head_dim], k_proj [kv x head_dim], v_proj [kv x v_head_dim], o_proj [hidden, heads x v_head_dim]
  moe_layer_freq[i] truthy -> MoE: gate [experts, hidden] + e_score_correction_bias [experts] (fp32, as
      transformers keeps them: _keep_in_fp32_modules_strict), experts of moe_intermediate_size, no shared
      expert; else a gated MLP of intermediate_size
transformers 5.24.0 configuration_mimo_v2_flash.py re-saves the plan as layer_types / mlp_layer_types with
sliding kv heads = 2 x num_key_value_heads (modeling_mimo_v2_flash.py:339-341): both spellings are read.
KV: the model's K and V rows at their own widths. vLLM pads each V row to head_dim before its cache
(MiMoV2Attention.forward, `torch.nn.functional.pad(v, [0, head_dim - v_head_dim])`): there the full layers
cache 2 x head_dim per head; said in a note.
MTP (`num_nextn_predict_layers`, 3 on V2-Flash/V2.6): `model.mtp.layers.N` = enorm, hnorm, eh_proj
[hidden, 2 x hidden], input_layernorm, a sliding-layer attention (with its sinks), pre_mlp_layernorm, a
dense gated MLP of intermediate_size, final_layernorm; the target's embedding and lm_head are reused
(sgl-project/sglang-jax python/sgl_jax/srt/models/mimo_v2_flash_mtp.py @ 8d96cd5, MiMoV2FlashMTPLayer and
its weight map). Own ledger row, resident only for MTP speculation.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import ConfigError
from ...core.spec import FULL, SLIDING, LayerSpec, MoESpec
from .base import ArchSpec, Tensors, config_dtype, finish, mtp_spec, require_positive
from .decoder import DecoderArgs


@dataclass
class Args(DecoderArgs):
    """MiMoV2FlashConfig defaults (transformers configuration_mimo_v2_flash.py) plus the Hub's keys."""

    vocab_size: int = 152576
    hidden_size: int = 4096
    intermediate_size: int = 16384
    num_hidden_layers: int = 48
    num_attention_heads: int = 64
    num_key_value_heads: int | None = 4
    head_dim: int | None = 192
    v_head_dim: int = 128
    swa_num_attention_heads: int | None = None
    swa_num_key_value_heads: int | None = None
    swa_head_dim: int | None = None
    swa_v_head_dim: int | None = None
    sliding_window: int | None = 128
    sliding_window_size: int | None = None
    hybrid_layer_pattern: list | None = None
    moe_layer_freq: list | None = None
    mlp_layer_types: list | None = None
    add_swa_attention_sink_bias: bool = False
    add_full_attention_sink_bias: bool = False
    n_routed_experts: int = 256
    moe_intermediate_size: int | None = 2048
    num_experts_per_tok: int | None = 8
    num_nextn_predict_layers: int = 0
    attention_projection_layout: str | None = None  # "fused_qkv": one qkv_proj (V2.5-Pro / V2.6), same bytes


def _plan(args: Args, origin: str) -> tuple[list[bool], list[bool]]:
    """(sliding?, sparse?) per layer from the Hub keys, else transformers' spelling, else its defaults."""
    n = args.num_hidden_layers

    def flags(values: list | None, key: str, truthy: object) -> list[bool] | None:
        if values is None:
            return None
        if not isinstance(values, list) or len(values) != n:
            raise ConfigError(f"Cannot size the model from '{origin}': key '{key}' must list one entry per layer "
                              f"({n} layers).", origin, key=key)
        return [v == truthy or (truthy == 1 and v is True) for v in values]

    sliding = flags(args.hybrid_layer_pattern, "hybrid_layer_pattern", 1) or flags(
        args.layer_types, "layer_types", "sliding_attention") or [not (i == 0 or (i + 1) % 6 == 0) for i in range(n)]
    sparse = flags(args.moe_layer_freq, "moe_layer_freq", 1) or flags(
        args.mlp_layer_types, "mlp_layer_types", "sparse") or [i > 0 for i in range(n)]
    return sliding, sparse


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h = args.hidden_size
    sliding, sparse = _plan(args, origin)
    nq, nkv = args.num_attention_heads, args.num_key_value_heads or args.num_attention_heads
    hd, vd = args.head_dim or h // nq, args.v_head_dim
    hub = args.swa_num_key_value_heads is not None  # the Hub spelling; transformers' doubles the kv heads
    swa = (args.swa_num_attention_heads or nq, args.swa_num_key_value_heads or 2 * nkv,
           args.swa_head_dim or hd, args.swa_v_head_dim or vd)
    window = args.sliding_window_size or args.sliding_window
    e, width = args.n_routed_experts, args.moe_intermediate_size or args.intermediate_size
    moe = MoESpec(e, args.num_experts_per_tok or 8, width) if any(sparse) and e > 1 else None
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"model.layers.{i}"
        q, kv, k_dim, v_dim = swa if sliding[i] else (nq, nkv, hd, vd)
        sinks = (args.add_swa_attention_sink_bias or not hub) if sliding[i] else args.add_full_attention_sink_bias
        _attention(t, f"{p}.self_attn", h, (q, kv, k_dim, v_dim), sinks, args)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        if moe is not None and sparse[i]:
            t.add(f"{p}.mlp.gate.weight", (e, h), "other", "F32")
            t.add(f"{p}.mlp.gate.e_score_correction_bias", (e,), "norm", "F32")
            t.experts(f"{p}.mlp", h, e, width)
        else:
            t.mlp(f"{p}.mlp", h, args.intermediate_size)
        layers.append(LayerSpec(attention=SLIDING if sliding[i] and window else FULL, q_heads=q, kv_heads=kv,
                                head_dim_k=k_dim, head_dim_v=v_dim, window=window if sliding[i] else None,
                                ffn="moe" if moe is not None and sparse[i] else "dense",
                                ffn_width=width if moe is not None and sparse[i] else args.intermediate_size))
    notes = [f"{sum(sliding)} sliding layers (window {window}), {len(sliding) - sum(sliding)} full "
             "(hybrid_layer_pattern); vLLM pads V rows to head_dim in its cache (mimo_v2_flash.py)"]
    mtp = Tensors(dtype)
    for j in range(args.num_nextn_predict_layers):
        p = f"model.mtp.layers.{j}"
        for name in ("enorm", "hnorm", "input_layernorm", "pre_mlp_layernorm", "final_layernorm"):
            mtp.norm(f"{p}.{name}", h)
        mtp.linear(f"{p}.eh_proj", 2 * h, h, "other")
        _attention(mtp, f"{p}.self_attn", h, swa, args.add_swa_attention_sink_bias or not hub, args)
        mtp.mlp(f"{p}.mlp", h, args.intermediate_size)
    return finish(args, t, layers, dtype_known=known, moe=moe, notes=notes,
                  mtp=mtp_spec(mtp, args.num_nextn_predict_layers), mtp_tensors=tuple(mtp.items))


def _attention(t: Tensors, a: str, h: int, dims: tuple[int, int, int, int], sinks: bool, args: Args) -> None:
    """q/k at the K width, v and o at the V width (MiMoV2Attention), sinks [heads] where the layer has them;
    `fused_qkv` stores q, k and v as one qkv_proj of the same rows."""
    q, kv, k_dim, v_dim = dims
    bias = args.attention_bias
    if args.attention_projection_layout == "fused_qkv":
        t.linear(f"{a}.qkv_proj", h, q * k_dim + kv * k_dim + kv * v_dim, "attention", bias)
    else:
        t.linear(f"{a}.q_proj", h, q * k_dim, "attention", bias)
        t.linear(f"{a}.k_proj", h, kv * k_dim, "attention", bias)
        t.linear(f"{a}.v_proj", h, kv * v_dim, "attention", bias)
    t.linear(f"{a}.o_proj", q * v_dim, h, "attention")
    if sinks:
        t.add(f"{a}.attention_sink_bias", (q,), "norm")
