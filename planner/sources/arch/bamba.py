"""IBM Bamba (`bamba`): Mamba2 mixers with full attention at the layers `attn_layer_indices` names,
and a gated MLP after every mixer.

Shapes from transformers modeling_bamba.py (5.24.0): BambaMixer is the Mamba2 mixer with its inner width
int(mamba_expand x hidden) (mamba_d_head "auto" = that / mamba_n_heads), gated RMSNorm over the inner
width, in_proj / out_proj bias with mamba_proj_bias, conv1d bias with mamba_conv_bias; BambaAttention
q/k/v/o of head_dim hidden / heads (bias with attention_bias); BambaMLP gate/up/down (bias with
mlp_bias); input_layernorm and pre_ff_layernorm per layer, final_layernorm; untied lm_head by default.
Which layers attend: BambaConfig.layers_block_type, "full_attention" for i in attn_layer_indices, else
"linear_attention" (the mixer). State per sequence: conv (inner + 2 groups x d_state) x kernel plus
n_heads x d_head x d_state, as Falcon-H1 and Nemotron-H.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...core.errors import ConfigError
from ...core.spec import FULL, NONE, LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class MambaKeys(BaseArgs):
    """The Mamba2 mixer keys Bamba and GraniteMoeHybrid share (BambaConfig's defaults)."""

    mamba_n_heads: int = 128
    mamba_d_head: int | str = "auto"
    mamba_n_groups: int = 1
    mamba_d_state: int = 256
    mamba_d_conv: int = 4
    mamba_expand: int = 2
    mamba_conv_bias: bool = True
    mamba_proj_bias: bool = False


@dataclass
class Args(MambaKeys):
    """BambaConfig defaults (transformers 5.24.0 configuration_bamba.py)."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 128000
    tie_word_embeddings: bool = False
    hidden_size: int = 4096
    intermediate_size: int = 14336
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = 8
    max_position_embeddings: int = 262144
    attn_layer_indices: list | None = None
    attention_bias: bool = False
    mlp_bias: bool = False


def mamba2_head_dim(expand: int, hidden: int, n_heads: int, d_head: int | str, origin: str, key: str) -> int:
    """Mamba2 head width: the inner width int(expand x hidden) / n_heads (transformers' "auto"); a stated
    d_head must agree (Bamba/GraniteMoeHybrid validate_architecture raise otherwise).

    Raises:
        ConfigError: the heads do not divide the inner width, or a stated d_head disagrees with it.
    """
    inner = int(expand * hidden)
    if inner % n_heads:
        raise ConfigError(f"Cannot size the model from '{origin}': mamba_n_heads {n_heads} does not divide "
                          f"mamba_expand x hidden_size = {inner}.", origin, key="mamba_n_heads")
    if isinstance(d_head, int) and d_head * n_heads != inner:
        raise ConfigError(f"Cannot size the model from '{origin}': {key} x mamba_n_heads must equal "
                          f"mamba_expand x hidden_size (expected {inner // n_heads}, got {d_head}).", origin,
                          key=key)
    return inner // n_heads


def mixer_layer(t: Tensors, p: str, a: MambaKeys, hidden: int, head: int) -> LayerSpec:
    """One Mamba2 mixer at `p` (Bamba's and GraniteMoeHybrid's: the same keys) and its LayerSpec."""
    conv_dim, state = t.mamba2(p, hidden=hidden, n_heads=a.mamba_n_heads, head_dim=head, n_groups=a.mamba_n_groups,
                               d_state=a.mamba_d_state, d_conv=a.mamba_d_conv, conv_bias=a.mamba_conv_bias,
                               proj_bias=a.mamba_proj_bias)
    return LayerSpec(attention=NONE, recurrent="mamba2", conv_dim=conv_dim, conv_kernel=a.mamba_d_conv,
                     recurrent_state_elems=state)


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "mamba_n_heads", "mamba_expand", origin=origin)
    h, nq, n = args.hidden_size, args.num_attention_heads, args.num_hidden_layers
    nkv, hd = args.num_key_value_heads or nq, h // nq
    head = mamba2_head_dim(args.mamba_expand, h, args.mamba_n_heads, args.mamba_d_head, origin, "mamba_d_head")
    attn = {i for i in (args.attn_layer_indices or []) if isinstance(i, int) and not isinstance(i, bool)}
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("model.embed_tokens.weight", (args.vocab_size, h), "embedding")
    layers = []
    for i in range(n):
        p = f"model.layers.{i}"
        if i in attn:
            t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                        qkv_bias=args.attention_bias, o_bias=args.attention_bias)
            layer = LayerSpec(attention=FULL, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd)
        else:
            layer = mixer_layer(t, f"{p}.mamba", args, h, head)
        t.mlp(f"{p}.feed_forward", h, args.intermediate_size, bias=args.mlp_bias)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.pre_ff_layernorm", h)
        layers.append(dataclasses.replace(layer, ffn="dense", ffn_width=args.intermediate_size))
    t.norm("model.final_layernorm", h)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    return finish(args, t, layers, dtype_known=known)
