"""ChatGLM2/3 and GLM-4 (`chatglm`, remote code): fused QKV with grouped ("multi-query") KV, SwiGLU in
one dense_h_to_4h of 2 x ffn_hidden_size, RMSNorm, untied output_layer.

Shapes from modeling_chatglm.py: query_key_value = hidden (projection) + 2 x multi_query_group_num x
kv_channels when multi_query_attention, bias when add_bias_linear or add_qkv_bias; dense and the MLP
biased only with add_bias_linear; final_layernorm when post_layer_norm; embedding rows =
padded_vocab_size; rotary_pos_emb.inv_freq is a stored buffer of kv_channels / 4 floats.

The first ChatGLM-6B (v1: `inner_hidden_size`, `vocab_size`, `position_encoding_2d`, no padded_vocab_size)
is another layout (THUDM chatglm-6b modeling_chatglm.py GLMBlock / GLU / ChatGLMModel, read in a public
port of that file): transformer.word_embeddings [vocab, h]; per layer LayerNorm (weight + bias)
input_layernorm and post_attention_layernorm, attention.query_key_value [3 h, h] + bias, attention.dense
[h, h] + bias, a plain GELU MLP dense_h_to_4h [inner, h] + bias / dense_4h_to_h [h, inner] + bias;
final_layernorm; lm_head [vocab, h]. Its config has no tie_word_embeddings (transformers' default ties
lm_head to word_embeddings), so whether the checkpoint stores the head twice is not known: a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """ChatGLMConfig defaults (configuration_chatglm.py)."""

    REQUIRED = ("hidden_size", "num_layers", "num_attention_heads")
    padded_vocab_size: int = 65024
    hidden_size: int = 4096
    num_layers: int = 28
    num_attention_heads: int = 32
    kv_channels: int = 128
    ffn_hidden_size: int = 13696
    multi_query_attention: bool = False
    multi_query_group_num: int = 1
    add_bias_linear: bool = False
    add_qkv_bias: bool = False
    post_layer_norm: bool = True
    seq_length: int = 2048
    tie_word_embeddings: bool = False
    rmsnorm: bool = True
    inner_hidden_size: int | None = None  # v1 (chatglm-6b)
    vocab_size: int | None = None  # v1 spelling of the embedding rows
    max_sequence_length: int | None = None  # v1


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    if args.inner_hidden_size is not None and "padded_vocab_size" in args.defaults_used:
        return _v1(args, origin)
    require_positive(args, "hidden_size", "num_layers", "num_attention_heads", "padded_vocab_size",
                     "kv_channels", origin=origin)
    h, nq, hd = args.hidden_size, args.num_attention_heads, args.kv_channels
    nkv = args.multi_query_group_num if args.multi_query_attention else nq
    ffn, bias = args.ffn_hidden_size, args.add_bias_linear
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("transformer.embedding.word_embeddings.weight", (args.padded_vocab_size, h), "embedding")
    t.add("transformer.rotary_pos_emb.inv_freq", (hd // 4,), "norm")
    layers = []
    for i in range(args.num_layers):
        p = f"transformer.encoder.layers.{i}"
        t.norm(f"{p}.input_layernorm", h, bias=not args.rmsnorm)
        t.linear(f"{p}.self_attention.query_key_value", h, nq * hd + 2 * nkv * hd, "attention",
                 bias or args.add_qkv_bias)
        t.linear(f"{p}.self_attention.dense", nq * hd, h, "attention", bias)
        t.norm(f"{p}.post_attention_layernorm", h, bias=not args.rmsnorm)
        t.linear(f"{p}.mlp.dense_h_to_4h", h, 2 * ffn, "ffn", bias)
        t.linear(f"{p}.mlp.dense_4h_to_h", ffn, h, "ffn", bias)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd, ffn_width=ffn))
    if args.post_layer_norm:
        t.norm("transformer.encoder.final_layernorm", h, bias=not args.rmsnorm)
    if not args.tie_word_embeddings:
        t.add("transformer.output_layer.weight", (args.padded_vocab_size, h), "lm_head")
    # finish() reads the standard names
    args.vocab_size, args.num_hidden_layers = args.padded_vocab_size, args.num_layers  # type: ignore[attr-defined]
    args.intermediate_size, args.max_position_embeddings = ffn, args.seq_length  # type: ignore[attr-defined]
    return finish(args, t, layers, dtype_known=known)


def _v1(args: Args, origin: str) -> ArchSpec:
    """ChatGLM-6B (v1): LayerNorms with bias, fused [3 h, h] QKV (no grouping), a plain GELU MLP, all biased."""
    require_positive(args, "hidden_size", "num_layers", "num_attention_heads", "vocab_size", "inner_hidden_size",
                     origin=origin)
    h, nq, inner, v = args.hidden_size, args.num_attention_heads, args.inner_hidden_size or 0, args.vocab_size or 0
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("transformer.word_embeddings.weight", (v, h), "embedding")
    layers = []
    for i in range(args.num_layers):
        p = f"transformer.layers.{i}"
        t.norm(f"{p}.input_layernorm", h, bias=True)
        t.linear(f"{p}.attention.query_key_value", h, 3 * h, "attention", True)
        t.linear(f"{p}.attention.dense", h, h, "attention", True)
        t.norm(f"{p}.post_attention_layernorm", h, bias=True)
        t.linear(f"{p}.mlp.dense_h_to_4h", h, inner, "ffn", True)
        t.linear(f"{p}.mlp.dense_4h_to_h", inner, h, "ffn", True)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nq, head_dim_k=h // nq, head_dim_v=h // nq, ffn_width=inner))
    t.norm("transformer.final_layernorm", h, bias=True)
    t.add("lm_head.weight", (v, h), "lm_head")
    args.num_hidden_layers = args.num_layers  # type: ignore[attr-defined]
    args.intermediate_size, args.max_position_embeddings = inner, args.max_sequence_length or 2048  # type: ignore[attr-defined]
    return finish(args, t, layers, dtype_known=known, guesses=(
        "ChatGLM-6B v1: lm_head counted as its own [vocab, h] matrix (no tie_word_embeddings key: transformers "
        "would tie it to word_embeddings); rotary inv_freq buffers not counted",))
