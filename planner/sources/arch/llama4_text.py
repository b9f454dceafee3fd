"""Llama 4 text tower (`llama4_text`): chunked local attention on RoPE layers, global NoPE layers,
routed experts + one shared expert on `moe_layers`, dense MLPs of intermediate_size_mlp elsewhere.

Llama4TextConfig (transformers configuration_llama4.py): `no_rope_layers[i]` is 1 where a layer uses
RoPE (default: every layer but each 4th); those attend within `attention_chunk_size` chunks, the
NoPE ones globally, so only NoPE layers grow with context (vLLM llama4.py: ChunkedLocalAttention on
rope layers). moe_layers default to every `interleave_moe_layer_step`-th layer. Llama4TextMoe:
experts gate_up_proj [E, h, 2 inter] / down_proj [E, inter, h], router [E, h], shared_expert (gated
MLP of intermediate_size); use_qk_norm is a weightless L2 norm.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import CHUNKED, FULL, LayerSpec, MoESpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs


@dataclass
class Args(DecoderArgs):
    """Llama4TextConfig defaults."""

    vocab_size: int = 202048
    hidden_size: int = 5120
    intermediate_size: int = 8192
    intermediate_size_mlp: int = 16384
    num_hidden_layers: int = 48
    num_attention_heads: int = 40
    num_key_value_heads: int | None = 8
    head_dim: int | None = 128
    max_position_embeddings: int = 4096 * 32
    num_local_experts: int | None = 16
    num_experts_per_tok: int | None = 1
    interleave_moe_layer_step: int = 1
    moe_layers: list | None = None
    no_rope_layers: list | None = None
    attention_chunk_size: int | None = 8192
    use_qk_norm: bool = True


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq, n = args.hidden_size, args.num_attention_heads, args.num_hidden_layers
    nkv, hd = args.num_key_value_heads or nq, args.head_dim or h // nq
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    rope = args.no_rope_layers if isinstance(args.no_rope_layers, list) and len(args.no_rope_layers) == n \
        else [int((i + 1) % 4 != 0) for i in range(n)]
    step = max(args.interleave_moe_layer_step, 1)
    moe_idx = set(args.moe_layers) if isinstance(args.moe_layers, list) else set(range(step - 1, n, step))
    e, inter = args.num_local_experts or 0, args.intermediate_size
    moe = MoESpec(e, args.num_experts_per_tok or 1, inter, 1, inter) if e else None
    layers = []
    for i in range(n):
        p = f"model.layers.{i}"
        t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd, qkv_bias=args.attention_bias,
                    o_bias=args.attention_bias)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        sparse = moe is not None and i in moe_idx
        if sparse:
            t.add(f"{p}.feed_forward.router.weight", (e, h), "other")
            t.experts(f"{p}.feed_forward", h, e, inter)
            t.mlp(f"{p}.feed_forward.shared_expert", h, inter)
        else:
            t.mlp(f"{p}.feed_forward", h, args.intermediate_size_mlp)
        chunked = bool(rope[i]) and bool(args.attention_chunk_size)
        layers.append(LayerSpec(attention=CHUNKED if chunked else FULL, q_heads=nq, kv_heads=nkv, head_dim_k=hd,
                                head_dim_v=hd, window=args.attention_chunk_size if chunked else None,
                                ffn="moe" if sparse else "dense",
                                ffn_width=inter if sparse else args.intermediate_size_mlp))
    args.intermediate_size = args.intermediate_size_mlp
    return finish(args, t, layers, dtype_known=known, moe=moe)
