"""Qwen3-Next: 3 Gated-DeltaNet (linear attention) layers per gated full-attention layer, MoE.

Linear-attention layers keep a fixed state per sequence (conv + delta-rule state),
so only the full-attention layers (every `full_attention_interval`-th) grow with
context. Qwen3.5 (`qwen3_5_moe_text`, `qwen3_5_text`) shares this layout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...core.spec import FULL, NONE, LayerSpec, MoESpec
from .base import ArchSpec, Tensors, config_dtype, finish, mtp_spec, require_positive
from .decoder import DecoderArgs, is_moe_layer


@dataclass
class Args(DecoderArgs):
    """Qwen3NextConfig defaults."""

    vocab_size: int = 151936
    hidden_size: int = 2048
    intermediate_size: int = 5632
    num_hidden_layers: int = 48
    num_attention_heads: int = 16
    num_key_value_heads: int | None = 2
    head_dim: int | None = 256
    max_position_embeddings: int = 32768
    full_attention_interval: int = 4
    linear_conv_kernel_dim: int = 4
    linear_key_head_dim: int = 128
    linear_value_head_dim: int = 128
    linear_num_key_heads: int = 16
    linear_num_value_heads: int = 32
    num_experts: int | None = 512
    num_experts_per_tok: int | None = 10
    moe_intermediate_size: int | None = 512
    shared_expert_intermediate_size: int | None = 512
    attn_output_gate: bool = True
    mamba_ssm_dtype: str | None = None
    mtp_num_hidden_layers: int = 0
    mtp_use_dedicated_embeddings: bool = False
    # set by from_dict: a text sub-config type (`qwen3_5_moe_text`) at the top level of config.json
    resaved_text: bool = field(default=False, init=False, repr=False, compare=False)

    @classmethod
    def from_dict(cls, params: dict[str, Any], *, origin: str = "config.json", nested: bool = False) -> Args:
        """As BaseArgs.from_dict, noting whether the file is a text sub-config saved on its own.

        Qwen's releases nest the text tower (`qwen3_5_moe` + text_config); a config.json whose top-level
        model_type is the `*_text` sub-config was written by transformers' save_pretrained from the text
        class, and transformers' Qwen3.5 classes never load `mtp.*` (modeling_qwen3_5_moe.py @ 5fd974e,
        `_keys_to_ignore_on_load_unexpected = [r"^mtp.*"]`), so such a checkpoint stores no MTP layer.
        """
        args = super().from_dict(params, origin=origin, nested=nested)
        args.resaved_text = not nested and str(params.get("model_type") or "").endswith("_text")
        return args


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "full_attention_interval", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv, hd = args.num_key_value_heads or nq, args.head_dim or h // nq
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    n = args.num_hidden_layers
    if isinstance(args.layer_types, list) and len(args.layer_types) == n:
        linear = [str(x) == "linear_attention" for x in args.layer_types]
    else:
        linear = [bool((i + 1) % args.full_attention_interval) for i in range(n)]
    e = args.num_experts or 0
    moe = MoESpec(e, args.num_experts_per_tok or 1, args.moe_intermediate_size or 0,
                  1 if args.shared_expert_intermediate_size else 0,
                  args.shared_expert_intermediate_size or 0) if e else None
    layers = []
    for i in range(n):
        p = f"model.layers.{i}"
        if linear[i]:
            conv_dim, state = t.gated_deltanet(
                f"{p}.linear_attn", hidden=h, k_heads=args.linear_num_key_heads,
                v_heads=args.linear_num_value_heads, k_dim=args.linear_key_head_dim,
                v_dim=args.linear_value_head_dim, kernel=args.linear_conv_kernel_dim,
                split=str(args.model_type).startswith("qwen3_5"))
        else:
            # gated attention: q_proj also emits a per-head output gate
            t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                        qkv_bias=args.attention_bias, qk_norm="head", q_gate=args.attn_output_gate)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        layer_moe = moe if moe is not None and is_moe_layer(args, i) else None  # this layer's experts
        if layer_moe is not None:
            t.router(f"{p}.mlp", h, e)
            t.experts(f"{p}.mlp", h, e, layer_moe.expert_intermediate)
            if layer_moe.shared_intermediate:
                t.mlp(f"{p}.mlp.shared_expert", h, layer_moe.shared_intermediate)
                t.add(f"{p}.mlp.shared_expert_gate.weight", (1, h), "other")
        else:
            t.mlp(f"{p}.mlp", h, args.intermediate_size)
        ffn = "moe" if layer_moe is not None else "dense"
        ffn_width = layer_moe.expert_intermediate if layer_moe is not None else args.intermediate_size
        if linear[i]:
            layers.append(LayerSpec(attention=NONE, recurrent="linear_attention", conv_dim=conv_dim,
                                    conv_kernel=args.linear_conv_kernel_dim, recurrent_state_elems=state,
                                    q_heads=args.linear_num_value_heads, ffn=ffn, ffn_width=ffn_width))
        else:
            layers.append(LayerSpec(attention=FULL, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                    ffn=ffn, ffn_width=ffn_width))
    if args.resaved_text and args.mtp_num_hidden_layers:
        note = (f"config.json is a top-level '{args.model_type}' (a transformers re-save of the text class, "
                f"which drops mtp.* on load): its {args.mtp_num_hidden_layers} declared MTP layer(s) not stored")
        return finish(args, t, layers, dtype_known=known, moe=moe, state_dtype=args.mamba_ssm_dtype, notes=[note])
    return finish(args, t, layers, dtype_known=known, moe=moe, state_dtype=args.mamba_ssm_dtype,
                  mtp=mtp_spec(mt := _mtp(args, dtype, moe, nkv, hd), args.mtp_num_hidden_layers),
                  mtp_tensors=tuple(mt.items))


def _mtp(args: Args, dtype: str, moe: MoESpec | None, nkv: int, hd: int) -> Tensors:
    """MTP block (vLLM qwen3_next_mtp.py): fc [h, 2h], pre_fc_norm_embedding / _hidden, mtp_num_hidden_layers
    full-attention decoder layers with the model's MLP, and a final norm; embeddings shared unless
    mtp_use_dedicated_embeddings."""
    h, nq = args.hidden_size, args.num_attention_heads
    t = Tensors(dtype)
    if not args.mtp_num_hidden_layers:
        return t
    t.linear("mtp.fc", 2 * h, h, "other")
    for n in ("mtp.pre_fc_norm_embedding", "mtp.pre_fc_norm_hidden", "mtp.norm"):
        t.norm(n, h)
    if args.mtp_use_dedicated_embeddings:
        t.add("mtp.embed_tokens.weight", (args.vocab_size, h), "embedding")
    for j in range(args.mtp_num_hidden_layers):
        p = f"mtp.layers.{j}"
        t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                    qkv_bias=args.attention_bias, qk_norm="head", q_gate=args.attn_output_gate)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        if moe is not None:
            t.router(f"{p}.mlp", h, moe.experts)
            t.experts(f"{p}.mlp", h, moe.experts, moe.expert_intermediate)
            if moe.shared_intermediate:
                t.mlp(f"{p}.mlp.shared_expert", h, moe.shared_intermediate)
                t.add(f"{p}.mlp.shared_expert_gate.weight", (1, h), "other")
        else:
            t.mlp(f"{p}.mlp", h, args.intermediate_size)
    return t
