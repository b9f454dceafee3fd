"""Mamba-2 (`mamba2`, e.g. Mamba-Codestral-7B): every layer a Mamba2 mixer, no attention, fixed state.

transformers modeling_mamba2.py Mamba2Mixer: in_proj [d_inner + conv_dim + num_heads, h] (bias with use_bias),
depthwise conv1d over conv_dim = d_inner + 2 n_groups state_size channels (+ bias with use_conv_bias),
dt_bias / A_log / D per head, a gated RMSNorm over d_inner, out_proj [h, d_inner]; d_inner = num_heads x
head_dim (= expand x hidden in every release); one RMSNorm per layer, backbone.norm_f, an untied lm_head
(Mamba2Config tie_word_embeddings False). State per sequence: conv conv_dim x (kernel - 1) + SSM
num_heads x head_dim x state_size.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import NONE, LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """Mamba2Config defaults."""

    REQUIRED = ("hidden_size", "num_hidden_layers")
    vocab_size: int = 32768
    hidden_size: int = 4096
    num_hidden_layers: int = 64
    num_heads: int = 128
    head_dim: int = 64
    state_size: int = 128
    n_groups: int = 8
    conv_kernel: int = 4
    expand: int = 2
    use_bias: bool = False
    use_conv_bias: bool = True
    # Mamba2Config carries Mamba-1's time_step_rank; a Mamba2 mixer's dt is one value per head (dt_bias), so
    # no tensor depends on it
    time_step_rank: int | str | None = None
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 1 << 20  # no positional limit: state, not a cache


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "vocab_size", "num_heads", "head_dim", "state_size",
                     "conv_kernel", "n_groups", origin=origin)
    h = args.hidden_size
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("backbone.embeddings.weight", (args.vocab_size, h), "embedding")
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"backbone.layers.{i}"
        conv_dim, state = t.mamba2(f"{p}.mixer", hidden=h, n_heads=args.num_heads, head_dim=args.head_dim,
                                   n_groups=args.n_groups, d_state=args.state_size, d_conv=args.conv_kernel,
                                   conv_bias=args.use_conv_bias, proj_bias=args.use_bias)
        t.norm(f"{p}.norm", h)
        layers.append(LayerSpec(attention=NONE, recurrent="mamba2", conv_dim=conv_dim, conv_kernel=args.conv_kernel,
                                recurrent_state_elems=state, q_heads=args.num_heads, ffn="none"))
    t.norm("backbone.norm_f", h)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    args.intermediate_size = args.num_heads * args.head_dim  # type: ignore[attr-defined]
    return finish(args, t, layers, dtype_known=known)
