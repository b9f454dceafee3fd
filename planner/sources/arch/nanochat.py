"""nanochat (`nanochat`, Karpathy's nanochat as transformers ports it): a Llama-layout decoder whose RMSNorms
carry no weight and whose MLP is an ungated fc1 / fc2 (ReLU^2).

transformers modeling_nanochat.py: q/k/v/o_proj under attention_bias (:187-198); q_norm / k_norm,
input_layernorm, post_attention_layernorm and the final norm are NanoChatRMSNorm(eps) with no parameter
(:44-57, :200-201, :273-274, :348); mlp.fc1 [inter, h] and mlp.fc2 [h, inter] without bias (:254-255);
embed_tokens and an untied lm_head (NanoChatConfig tie_word_embeddings False). The standard decoder rule
counted a gated MLP and weighted norms: +29% at the config defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs


@dataclass
class Args(DecoderArgs):
    """NanoChatConfig defaults."""

    vocab_size: int = 50304
    hidden_size: int = 768
    intermediate_size: int = 8192
    num_hidden_layers: int = 12
    num_attention_heads: int = 6


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq, inter = args.hidden_size, args.num_attention_heads, args.intermediate_size
    nkv = args.num_key_value_heads or nq
    hd = args.head_dim or h // nq
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("model.embed_tokens.weight", (args.vocab_size, h), "embedding")
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"model.layers.{i}"
        t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                    qkv_bias=args.attention_bias, o_bias=args.attention_bias)
        t.linear(f"{p}.mlp.fc1", h, inter, "ffn")
        t.linear(f"{p}.mlp.fc2", inter, h, "ffn")
        layers.append(LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd, ffn_width=inter))
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    return finish(args, t, layers, dtype_known=known)
