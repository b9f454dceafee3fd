"""Gemma 4 text tower (`gemma4_text`): sliding layers with (num_key_value_heads, head_dim), global
layers with (num_global_key_value_heads, global_head_dim) and, under `attention_k_eq_v`, no v_proj.

Per transformers modeling_gemma4.py (Gemma4TextAttention: `use_alternative_attention =
attention_k_eq_v and not is_sliding`; head_dim = global_head_dim on full layers; kv heads =
num_global_key_value_heads there): sliding q/k/v/o [heads x 256 ...], global q [heads x 512], k
[global kv x 512], V read from K. Each layer has q_norm/k_norm over its head_dim, four norms
(input, post_attention, pre/post feed-forward), a 1-element layer_scalar and a gated MLP; embeddings
tied. KV: engines write V (= K) into their cache as a separate row, so a global layer caches
2 x global kv x global_head_dim per token; sliding layers hold their window.
Per-layer-input embeddings (hidden_size_per_layer_input), shared-KV layers and the MoE block
(enable_moe_block) are not modelled here: they make the figure a guess (confidence low).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import FULL, SLIDING, LayerSpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs


@dataclass
class Args(DecoderArgs):
    """Gemma4TextConfig defaults (31B shapes)."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads")
    vocab_size: int = 262144
    hidden_size: int = 5376
    intermediate_size: int = 21504
    num_hidden_layers: int = 60
    num_attention_heads: int = 32
    num_key_value_heads: int | None = 16
    head_dim: int | None = 256
    global_head_dim: int | None = 512
    num_global_key_value_heads: int | None = None
    attention_k_eq_v: bool = False
    max_position_embeddings: int = 262144
    tie_word_embeddings: bool = True
    sliding_window: int | None = 1024
    hidden_size_per_layer_input: int = 0
    vocab_size_per_layer_input: int | None = None
    num_kv_shared_layers: int = 0
    enable_moe_block: bool = False
    use_double_wide_mlp: bool = False
    use_bidirectional_attention: str | None = None


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq, n = args.hidden_size, args.num_attention_heads, args.num_hidden_layers
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    types = args.layer_types if isinstance(args.layer_types, list) and len(args.layer_types) == n \
        else ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(n)]
    inter = args.intermediate_size * (2 if args.use_double_wide_mlp else 1)
    layers = []
    for i in range(n):
        p, a = f"model.layers.{i}", f"model.layers.{i}.self_attn"
        sliding = str(types[i]).startswith("sliding")
        alt = args.attention_k_eq_v and not sliding
        hd = args.head_dim or h // nq if sliding else args.global_head_dim or args.head_dim or h // nq
        nkv = (args.num_global_key_value_heads if alt else None) or args.num_key_value_heads or nq
        t.linear(f"{a}.q_proj", h, nq * hd, "attention", args.attention_bias)
        t.linear(f"{a}.k_proj", h, nkv * hd, "attention", args.attention_bias)
        if not alt:
            t.linear(f"{a}.v_proj", h, nkv * hd, "attention", args.attention_bias)
        t.linear(f"{a}.o_proj", nq * hd, h, "attention", args.attention_bias)
        t.norm(f"{a}.q_norm", hd)
        t.norm(f"{a}.k_norm", hd)
        for name in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            t.norm(f"{p}.{name}", h)
        t.add(f"{p}.layer_scalar", (1,), "norm")
        t.mlp(f"{p}.mlp", h, inter)
        kind = SLIDING if sliding and args.sliding_window else FULL
        layers.append(LayerSpec(attention=kind, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                window=args.sliding_window if kind == SLIDING else None, ffn_width=inter))
    guesses = [g for g, on in (
        ("per-layer-input embeddings (hidden_size_per_layer_input) not modelled", args.hidden_size_per_layer_input),
        ("shared-KV layers (num_kv_shared_layers) not modelled", args.num_kv_shared_layers),
        ("MoE block (enable_moe_block) not modelled", args.enable_moe_block)) if on]
    return finish(args, t, layers, dtype_known=known, guesses=tuple(guesses))
