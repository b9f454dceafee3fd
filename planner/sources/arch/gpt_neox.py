"""GPT-NeoX / Pythia (`gpt_neox`): fused QKV with bias, a 4h plain GELU MLP with biases, LayerNorms with
bias, MHA, untied embed_in / embed_out.

Shapes from transformers modeling_gpt_neox.py: gpt_neox.embed_in [v, h]; per layer input_layernorm and
post_attention_layernorm (w + b), attention.query_key_value [3h, h] (+ bias with attention_bias),
attention.dense [h, h] (+ bias), mlp.dense_h_to_4h [inter, h] + b, mlp.dense_4h_to_h [h, inter] + b;
gpt_neox.final_layer_norm (w + b); embed_out [v, h] unless tie_word_embeddings. GPTNeoXConfig
defaults: attention_bias True, tie_word_embeddings False.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """GPTNeoXConfig defaults."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 50432
    hidden_size: int = 6144
    num_hidden_layers: int = 44
    num_attention_heads: int = 64
    intermediate_size: int = 24576
    max_position_embeddings: int = 2048
    attention_bias: bool = True
    tie_word_embeddings: bool = False
    rotary_pct: float = 0.25
    transformers_version: str | None = None


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq, ffn = args.hidden_size, args.num_attention_heads, args.intermediate_size
    hd = h // nq
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("gpt_neox.embed_in.weight", (args.vocab_size, h), "embedding")
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"gpt_neox.layers.{i}"
        t.norm(f"{p}.input_layernorm", h, bias=True)
        t.norm(f"{p}.post_attention_layernorm", h, bias=True)
        t.linear(f"{p}.attention.query_key_value", h, 3 * h, "attention", args.attention_bias)
        t.linear(f"{p}.attention.dense", h, h, "attention", args.attention_bias)
        t.linear(f"{p}.mlp.dense_h_to_4h", h, ffn, "ffn", True)
        t.linear(f"{p}.mlp.dense_4h_to_h", ffn, h, "ffn", True)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nq, head_dim_k=hd, head_dim_v=hd, ffn_width=ffn))
    t.norm("gpt_neox.final_layer_norm", h, bias=True)
    if not args.tie_word_embeddings:
        t.add("embed_out.weight", (args.vocab_size, h), "lm_head")
    return finish(args, t, layers, dtype_known=known, guesses=mask_buffer_guess(args.transformers_version))


def mask_buffer_guess(version: str | None) -> tuple[str, ...]:
    """The doubt an old GPT-style checkpoint carries: its attention-mask buffers.

    transformers < 4.31 registered attention.bias (the [1, 1, max_pos, max_pos] causal mask), masked_bias
    and rotary_emb.inv_freq as persistent buffers (GPT-NeoX, GPT-J, GPT-Neo, GPT-2), so checkpoints saved then
    store them too: not counted, so the figure is low-confidence rather than silently short."""
    if not _before(version, (4, 31)):
        return ()
    return ("checkpoint saved before transformers 4.31 (or no transformers_version): it may also store "
            "causal-mask buffers (attention.bias) not counted here",)


def _before(version: str | None, bound: tuple[int, int]) -> bool:
    """Whether a `transformers_version` string is older than `bound` (absent: assumed older)."""
    if not version:
        return True
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        return True
    return (major, minor) < bound
