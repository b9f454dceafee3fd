"""gpt-oss: alternating sliding(128)/full attention with sinks and biases; MoE with biased experts.

The published checkpoints keep experts in MXFP4 (quantization_config.quant_method
"mxfp4"); attention, router, embeddings and lm_head stay bf16.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import SLIDING, LayerSpec, MoESpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs, Style, layer_kinds


@dataclass
class Args(DecoderArgs):
    """GptOssConfig defaults."""

    experts_per_token: int | None = None  # original OpenAI spelling of num_experts_per_tok, same value
    vocab_size: int = 201088
    hidden_size: int = 2880
    intermediate_size: int = 2880
    num_hidden_layers: int = 36
    num_attention_heads: int = 64
    num_key_value_heads: int | None = 8
    head_dim: int | None = 64
    max_position_embeddings: int = 131072
    sliding_window: int | None = 128
    num_local_experts: int | None = 128
    num_experts_per_tok: int | None = 4
    attention_bias: bool = True


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq, nkv = args.hidden_size, args.num_attention_heads, args.num_key_value_heads or args.num_attention_heads
    hd = args.head_dim or h // nq
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    kinds, notes = layer_kinds(args, Style(sliding="every2"))
    n_exp = args.num_local_experts or 0
    moe = MoESpec(n_exp, args.num_experts_per_tok or 4, args.intermediate_size)
    layers = []
    for i, kind in enumerate(kinds):
        p = f"model.layers.{i}"
        t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                    qkv_bias=args.attention_bias, o_bias=args.attention_bias, sinks=True)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        t.router(f"{p}.mlp", h, n_exp, bias=True)
        t.experts(f"{p}.mlp", h, n_exp, args.intermediate_size, bias=True)
        layers.append(LayerSpec(attention=kind, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                window=args.sliding_window if kind == SLIDING else None, ffn="moe",
                                ffn_width=args.intermediate_size))
    return finish(args, t, layers, dtype_known=known, moe=moe, notes=notes)
