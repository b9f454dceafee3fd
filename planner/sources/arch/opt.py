"""OPT (`opt`): a pre-LayerNorm decoder with biased q/k/v/out and fc1/fc2, a learned position table with an
offset of 2, and optional projections between the word-embedding width and the model width.

Shapes from transformers modeling_opt.py: model.decoder.embed_tokens [v, word_embed_proj_dim] (:292),
embed_positions [max_pos + 2, h] (OPTLearnedPositionalEmbedding, offset 2), project_out [wepd, h] and
project_in [h, wepd] without bias only when word_embed_proj_dim != hidden_size (:296-303, opt-350m),
final_layer_norm only when do_layer_norm_before and not _remove_final_layer_norm (:308-313); per layer
q/k/v/out_proj [h, h] (bias under enable_bias, :131-134), self_attn_layer_norm and final_layer_norm
(weight and bias under layer_norm_elementwise_affine, :197-202), fc1 [ffn_dim, h], fc2 [h, ffn_dim];
lm_head [v, wepd] without bias (:459), tied to embed_tokens by default. MHA.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive

_POSITION_OFFSET = 2  # OPTLearnedPositionalEmbedding: num_embeddings + 2 (fairseq's padding offset)


@dataclass
class Args(BaseArgs):
    """OPTConfig defaults."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads")
    vocab_size: int = 50272
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    ffn_dim: int = 3072
    max_position_embeddings: int = 2048
    word_embed_proj_dim: int | None = None
    do_layer_norm_before: bool = True
    _remove_final_layer_norm: bool = False
    enable_bias: bool = True
    layer_norm_elementwise_affine: bool = True
    tie_word_embeddings: bool = True


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq, ffn = args.hidden_size, args.num_attention_heads, args.ffn_dim
    hd, wepd = h // nq, args.word_embed_proj_dim or h
    affine, bias = args.layer_norm_elementwise_affine, args.enable_bias
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    d = "model.decoder"
    t.add(f"{d}.embed_tokens.weight", (args.vocab_size, wepd), "embedding")
    t.add(f"{d}.embed_positions.weight", (args.max_position_embeddings + _POSITION_OFFSET, h), "embedding")
    if wepd != h:
        t.linear(f"{d}.project_out", h, wepd, "other")
        t.linear(f"{d}.project_in", wepd, h, "other")
    if args.do_layer_norm_before and not args._remove_final_layer_norm and affine:
        t.norm(f"{d}.final_layer_norm", h, bias=True)
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"{d}.layers.{i}"
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            t.linear(f"{p}.self_attn.{name}", h, h, "attention", bias)
        if affine:
            t.norm(f"{p}.self_attn_layer_norm", h, bias=True)
            t.norm(f"{p}.final_layer_norm", h, bias=True)
        t.linear(f"{p}.fc1", h, ffn, "ffn", bias)
        t.linear(f"{p}.fc2", ffn, h, "ffn", bias)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nq, head_dim_k=hd, head_dim_v=hd, ffn_width=ffn))
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, wepd), "lm_head")
    args.intermediate_size = ffn  # type: ignore[attr-defined]
    return finish(args, t, layers, dtype_known=known)
