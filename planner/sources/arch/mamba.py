"""Mamba-1 (`mamba`, `falcon_mamba`): every layer a selective-SSM mixer, no attention, fixed state.

Shapes from transformers modeling_mamba.py MambaMixer (FalconMamba's mixer adds only weightless RMS
norms): in_proj [2 d_inner, h] (bias with use_bias), depthwise conv1d [d_inner, 1, conv_kernel]
(+ bias with use_conv_bias), x_proj [dt_rank + 2 state, d_inner], dt_proj [d_inner, dt_rank] + bias,
A_log [d_inner, state], D [d_inner], out_proj [h, d_inner]; one RMSNorm per layer, norm_f.
time_step_rank "auto" = ceil(h / 16); MambaConfig ties embeddings by default. State per sequence:
conv d_inner x (kernel - 1) + SSM d_inner x state_size.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ...core.spec import NONE, LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """MambaConfig defaults."""

    REQUIRED = ("hidden_size", "num_hidden_layers")
    vocab_size: int = 50280
    hidden_size: int = 768
    num_hidden_layers: int = 32
    state_size: int = 16
    conv_kernel: int = 4
    expand: int = 2
    intermediate_size: int | None = None
    time_step_rank: int | str = "auto"
    use_bias: bool = False
    use_conv_bias: bool = True
    tie_word_embeddings: bool = True
    max_position_embeddings: int = 1 << 20  # no positional limit: state, not a cache


def mixer(t: Tensors, p: str, *, hidden: int, d_inner: int, state: int, kernel: int, dt_rank: int,
          bias: bool, conv_bias: bool, dt_norms: bool = False) -> LayerSpec:
    """One Mamba-1 mixer's tensors (Jamba adds dt/B/C RMSNorms: dt_norms); returns its LayerSpec."""
    t.linear(f"{p}.in_proj", hidden, 2 * d_inner, "recurrent", bias)
    t.add(f"{p}.conv1d.weight", (d_inner, 1, kernel), "other")
    if conv_bias:
        t.add(f"{p}.conv1d.bias", (d_inner,), "norm")
    t.linear(f"{p}.x_proj", d_inner, dt_rank + 2 * state, "recurrent")
    t.linear(f"{p}.dt_proj", dt_rank, d_inner, "recurrent", True)
    t.add(f"{p}.A_log", (d_inner, state), "norm")
    t.add(f"{p}.D", (d_inner,), "norm")
    t.linear(f"{p}.out_proj", d_inner, hidden, "recurrent", bias)
    if dt_norms:
        t.norm(f"{p}.dt_layernorm", dt_rank)
        t.norm(f"{p}.b_layernorm", state)
        t.norm(f"{p}.c_layernorm", state)
    return LayerSpec(attention=NONE, recurrent="mamba", conv_dim=d_inner, conv_kernel=kernel,
                     recurrent_state_elems=d_inner * state)


def dt_rank_of(value: int | str, hidden: int) -> int:
    return math.ceil(hidden / 16) if value == "auto" or not isinstance(value, int) else value


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "vocab_size", "state_size", "conv_kernel",
                     origin=origin)
    h = args.hidden_size
    d_inner = args.intermediate_size or args.expand * h
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("backbone.embeddings.weight", (args.vocab_size, h), "embedding")
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"backbone.layers.{i}"
        layer = mixer(t, f"{p}.mixer", hidden=h, d_inner=d_inner, state=args.state_size, kernel=args.conv_kernel,
                      dt_rank=dt_rank_of(args.time_step_rank, h), bias=args.use_bias, conv_bias=args.use_conv_bias)
        t.norm(f"{p}.norm", h)
        layers.append(dataclasses.replace(layer, ffn="none", ffn_width=0))
    t.norm("backbone.norm_f", h)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    args.intermediate_size = d_inner
    return finish(args, t, layers, dtype_known=known)
