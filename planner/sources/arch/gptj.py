"""GPT-J (`gptj`) and, through `fused_qkv`, CodeGen: one LayerNorm before a parallel attention + MLP block.

Shapes from transformers modeling_gptj.py: transformer.wte [v, h]; per block ln_1 (w + b), attn.q_proj /
k_proj / v_proj / out_proj [h, h] without bias, mlp.fc_in [inner, h] + b, mlp.fc_out [h, inner] + b
(inner = n_inner or 4h); ln_f (w + b); lm_head [v, h] with a bias (GPTJConfig tie_word_embeddings False).
modeling_codegen.py is the same block with the projections fused into attn.qkv_proj [3h, h] (no bias).
Rotary positions (rotary_dim), no position table; MHA: every head caches K and V.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive
from .gpt_neox import mask_buffer_guess


@dataclass
class Args(BaseArgs):
    """GPTJConfig defaults (CodeGenConfig's are the same)."""

    REQUIRED = ("n_embd", "n_layer", "n_head")
    vocab_size: int = 50400
    n_embd: int = 4096
    n_layer: int = 28
    n_head: int = 16
    n_inner: int | None = None
    n_positions: int = 2048
    rotary_dim: int | None = 64
    tie_word_embeddings: bool = False
    transformers_version: str | None = None


def to_spec(args: Args, origin: str = "config.json", *, fused_qkv: bool = False) -> ArchSpec:
    require_positive(args, "n_embd", "n_layer", "n_head", "vocab_size", origin=origin)
    h, nq = args.n_embd, args.n_head
    hd, inner = h // nq, args.n_inner or 4 * h
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("transformer.wte.weight", (args.vocab_size, h), "embedding")
    layers = []
    for i in range(args.n_layer):
        p = f"transformer.h.{i}"
        t.norm(f"{p}.ln_1", h, bias=True)
        if fused_qkv:
            t.linear(f"{p}.attn.qkv_proj", h, 3 * h, "attention")
        else:
            for name in ("q_proj", "k_proj", "v_proj"):
                t.linear(f"{p}.attn.{name}", h, h, "attention")
        t.linear(f"{p}.attn.out_proj", h, h, "attention")
        t.linear(f"{p}.mlp.fc_in", h, inner, "ffn", True)
        t.linear(f"{p}.mlp.fc_out", inner, h, "ffn", True)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nq, head_dim_k=hd, head_dim_v=hd, ffn_width=inner))
    t.norm("transformer.ln_f", h, bias=True)
    if not args.tie_word_embeddings:
        t.linear("lm_head", h, args.vocab_size, "lm_head", True)
    args.hidden_size, args.intermediate_size = h, inner  # type: ignore[attr-defined]
    args.max_position_embeddings = args.n_positions  # type: ignore[attr-defined]
    return finish(args, t, layers, dtype_known=known, guesses=mask_buffer_guess(args.transformers_version))
