"""Phi-1 / 1.5 / 2 (`phi`, and the older remote-code `phi-msft`): parallel attention + MLP after one
LayerNorm, biased q/k/v/dense and fc1/fc2 (4h GELU), untied lm_head with a bias.

Shapes from transformers modeling_phi.py (PhiConfig: hidden_size, num_hidden_layers,
num_attention_heads, num_key_value_heads, intermediate_size, qk_layernorm) and the remote
modeling_phi.py of `phi-msft` (n_embd, n_layer, n_head, n_head_kv, n_inner; Wqkv fused, lm_head.ln +
lm_head.linear): the same tensor sizes under two spellings.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """PhiConfig defaults (phi-msft's names are read as their aliases)."""

    vocab_size: int = 51200
    hidden_size: int | None = None
    num_hidden_layers: int | None = None
    num_attention_heads: int | None = None
    num_key_value_heads: int | None = None
    intermediate_size: int | None = None
    n_embd: int | None = None
    n_layer: int | None = None
    n_head: int | None = None
    n_head_kv: int | None = None
    n_inner: int | None = None
    qk_layernorm: bool = False
    max_position_embeddings: int = 2048
    n_positions: int | None = None
    rotary_dim: int | None = None
    partial_rotary_factor: float = 0.5
    tie_word_embeddings: bool = False


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    args.hidden_size = args.hidden_size or args.n_embd or 2048
    args.num_hidden_layers = args.num_hidden_layers or args.n_layer or 24
    args.num_attention_heads = args.num_attention_heads or args.n_head or 32
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv, hd = args.num_key_value_heads or args.n_head_kv or nq, h // nq
    inner = args.intermediate_size or args.n_inner or 4 * h
    args.intermediate_size, args.max_position_embeddings = inner, args.n_positions or args.max_position_embeddings
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("model.embed_tokens.weight", (args.vocab_size, h), "embedding")
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"model.layers.{i}"
        t.norm(f"{p}.input_layernorm", h, bias=True)
        t.linear(f"{p}.self_attn.q_proj", h, nq * hd, "attention", True)
        t.linear(f"{p}.self_attn.k_proj", h, nkv * hd, "attention", True)
        t.linear(f"{p}.self_attn.v_proj", h, nkv * hd, "attention", True)
        t.linear(f"{p}.self_attn.dense", nq * hd, h, "attention", True)
        if args.qk_layernorm:
            t.norm(f"{p}.self_attn.q_layernorm", hd, bias=True)
            t.norm(f"{p}.self_attn.k_layernorm", hd, bias=True)
        t.linear(f"{p}.mlp.fc1", h, inner, "ffn", True)
        t.linear(f"{p}.mlp.fc2", inner, h, "ffn", True)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd, ffn_width=inner))
    t.norm("model.final_layernorm", h, bias=True)
    if not args.tie_word_embeddings:
        t.linear("lm_head", h, args.vocab_size, "lm_head", True)
    return finish(args, t, layers, dtype_known=known)
