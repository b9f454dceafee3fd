"""GPT-Neo (`gpt_neo`): GPT-2's layout with separate q/k/v and alternating global / local attention.

Shapes from transformers modeling_gpt_neo.py: transformer.wte [v, h], wpe [max_pos, h]; per block ln_1 (w + b),
attn.attention.q_proj / k_proj / v_proj [h, h] without bias, attn.attention.out_proj [h, h] + b, ln_2,
mlp.c_fc [inner, h] + b, mlp.c_proj [h, inner] + b (inner = intermediate_size or 4h); ln_f; lm_head tied.
GPTNeoConfig expands `attention_types` ([[["global", "local"], 12]]) into `attention_layers`; a local layer
attends to the last `window_size` tokens (GPTNeoSelfAttention: the causal mask is banded), so its cache is
sized as a window.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import ConfigError
from ...core.spec import FULL, SLIDING, LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive
from .gpt_neox import mask_buffer_guess


@dataclass
class Args(BaseArgs):
    """GPTNeoConfig defaults."""

    REQUIRED = ("hidden_size", "num_layers", "num_heads")
    vocab_size: int = 50257
    hidden_size: int = 2048
    num_layers: int = 24
    num_heads: int = 16
    intermediate_size: int | None = None
    max_position_embeddings: int = 2048
    window_size: int = 256
    attention_layers: list | None = None
    attention_types: list | None = None
    tie_word_embeddings: bool = True
    transformers_version: str | None = None


def attention_layers(args: Args, origin: str) -> list[str]:
    """`attention_layers`, or `attention_types` expanded as GPTNeoConfig.expand_attention_types_params does."""
    if isinstance(args.attention_layers, list) and len(args.attention_layers) == args.num_layers:
        return [str(x) for x in args.attention_layers]
    out: list[str] = []
    for item in args.attention_types or [[["global", "local"], args.num_layers // 2]]:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list)
                and isinstance(item[1], int) and 0 <= item[1] <= args.num_layers):
            raise ConfigError(f"Cannot use '{origin}': key 'attention_types' must be a list of "
                              f"[[kinds...], repeat] (got {item!r:.60}).", origin, key="attention_types")
        out.extend(str(k) for k in item[0] * item[1])
    if len(out) != args.num_layers:
        raise ConfigError(f"Cannot use '{origin}': 'attention_types' expands to {len(out)} layers, "
                          f"num_layers is {args.num_layers}.", origin, key="attention_types")
    return out


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_layers", "num_heads", "vocab_size", origin=origin)
    h, nq = args.hidden_size, args.num_heads
    hd, inner = h // nq, args.intermediate_size or 4 * h
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("transformer.wte.weight", (args.vocab_size, h), "embedding")
    t.add("transformer.wpe.weight", (args.max_position_embeddings, h), "embedding")
    layers = []
    for i, kind in enumerate(attention_layers(args, origin)):
        p = f"transformer.h.{i}"
        t.norm(f"{p}.ln_1", h, bias=True)
        for name in ("q_proj", "k_proj", "v_proj"):
            t.linear(f"{p}.attn.attention.{name}", h, h, "attention")
        t.linear(f"{p}.attn.attention.out_proj", h, h, "attention", True)
        t.norm(f"{p}.ln_2", h, bias=True)
        t.linear(f"{p}.mlp.c_fc", h, inner, "ffn", True)
        t.linear(f"{p}.mlp.c_proj", inner, h, "ffn", True)
        local = kind == "local" and args.window_size < args.max_position_embeddings
        layers.append(LayerSpec(attention=SLIDING if local else FULL, q_heads=nq, kv_heads=nq, head_dim_k=hd,
                                head_dim_v=hd, window=args.window_size if local else None, ffn_width=inner))
    t.norm("transformer.ln_f", h, bias=True)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    args.intermediate_size = inner
    return finish(args, t, layers, dtype_known=known, guesses=mask_buffer_guess(args.transformers_version))
