"""IBM Granite 4.0-H (`granitemoehybrid`): Mamba2 mixers and attention layers as `layer_types` lists them,
and in every layer a shared MLP beside routed experts (or the shared MLP alone when num_local_experts is 0:
the dense H-1B / H-350M).

Shapes from transformers modeling_granitemoehybrid.py (5.24.0): the mixer is Bamba's (bamba.py), inner
width int(mamba_expand x hidden); attention q/k/v/o of head_dim hidden / heads (bias with attention_bias),
no rotary table when position_embedding_type is "nope"; GraniteMoeHybridMoE = router [E, h] + experts
gate_up [E, 2 x intermediate, h] and down [E, h, intermediate]; GraniteMoeHybridMLP (shared_mlp) input_linear
[2 x shared_intermediate, h] + output_linear [h, shared_intermediate]; input_layernorm and
post_attention_layernorm per layer, model.norm; lm_head tied when tie_word_embeddings.
A layer type "mamba" (the Hub's configs) or "linear_attention" (transformers' own spelling) is the mixer.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...core.errors import ConfigError
from ...core.spec import FULL, LayerSpec, MoESpec
from .bamba import MambaKeys, mamba2_head_dim, mixer_layer
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive

_MIXER = frozenset({"mamba", "linear_attention"})
_ATTENTION = frozenset({"attention", "full_attention"})


@dataclass
class Args(MambaKeys):
    """GraniteMoeHybridConfig defaults (transformers 5.24.0 configuration_granitemoehybrid.py)."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    num_local_experts: int = 8
    num_experts_per_tok: int = 2
    shared_intermediate_size: int = 1024
    layer_types: list | None = None
    layers_block_type: list | None = None  # transformers' attribute_map alias of layer_types
    mamba_n_heads: int = 128
    mamba_d_state: int = 256


def layer_kinds(args: Args, origin: str) -> list[bool]:
    """True where the layer attends. No list: every layer is the mixer (GraniteMoeHybridConfig's default).

    Raises:
        ConfigError: the list's length is not num_hidden_layers, or it names a kind no layer class builds.
    """
    kinds = args.layer_types or args.layers_block_type
    if not kinds:
        return [False] * args.num_hidden_layers
    bad = sorted({str(k) for k in kinds} - _MIXER - _ATTENTION)
    if len(kinds) != args.num_hidden_layers or bad:
        raise ConfigError(f"Cannot size the model from '{origin}': layer_types must list one of "
                          f"{sorted(_MIXER | _ATTENTION)} per layer (expected {args.num_hidden_layers} entries, "
                          f"got {len(kinds)}{'; unknown ' + str(bad) if bad else ''}).", origin, key="layer_types")
    return [str(k) in _ATTENTION for k in kinds]


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "mamba_n_heads", "mamba_expand", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv, hd = args.num_key_value_heads or nq, h // nq
    head = mamba2_head_dim(args.mamba_expand, h, args.mamba_n_heads, args.mamba_d_head, origin, "mamba_d_head")
    e, shared = args.num_local_experts, args.shared_intermediate_size
    moe = MoESpec(e, args.num_experts_per_tok, args.intermediate_size, 1, shared) if e > 0 else None
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    layers = []
    for i, attends in enumerate(layer_kinds(args, origin)):
        p = f"model.layers.{i}"
        if attends:
            t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                        qkv_bias=args.attention_bias, o_bias=args.attention_bias)
            layer = LayerSpec(attention=FULL, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd)
        else:
            layer = mixer_layer(t, f"{p}.mamba", args, h, head)
        if moe:
            t.add(f"{p}.block_sparse_moe.router.layer.weight", (e, h), "other")
            t.experts(f"{p}.block_sparse_moe", h, e, args.intermediate_size)
        # shared_mlp: one fused [gate; up] input_linear and output_linear (GraniteMoeHybridMLP)
        t.linear(f"{p}.shared_mlp.input_linear", h, 2 * shared, "ffn")
        t.linear(f"{p}.shared_mlp.output_linear", shared, h, "ffn")
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        layers.append(dataclasses.replace(layer, ffn="moe" if moe else "dense",
                                          ffn_width=args.intermediate_size if moe else shared))
    return finish(args, t, layers, dtype_known=known, moe=moe)
