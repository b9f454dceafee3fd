"""Zyphra Zamba2 (`zamba2`): a Mamba2 backbone whose "hybrid" layers also run one of `num_mem_blocks` shared
transformer blocks, on the concatenation of the hidden state and the original embeddings.

Shapes from transformers modeling_zamba2.py / configuration_zamba2.py (5.24.0):
* every layer has a Zamba2MambaDecoderLayer: input_layernorm (hidden) and the Mamba2 mixer of inner width
  int(mamba_expand x hidden), n_mamba_heads heads of mamba_headdim = inner / n_mamba_heads (the config's own
  value is recomputed), in_proj [inner + conv_dim + heads, hidden] and out_proj with bias only under
  add_bias_linear, conv1d with a bias always (`bias=True`, use_conv_bias is not read), gated RMSNorm (inner);
* a hybrid layer adds `linear` [hidden, hidden] (its own) and a shared block (stored once per block: the HF
  model ties `layers.N.shared_transformer` to the first hybrid layers, cycling over num_mem_blocks, so the
  checkpoint keeps each block once): self_attn q/k/v over attention_hidden_size = 2 x hidden with head_dim
  attention_head_dim = 2 x hidden / heads (also recomputed), o_proj back to hidden; a gated MLP gate_up_proj
  [2 x intermediate, hidden] + down_proj; input_layernorm (2 x hidden) and pre_ff_layernorm (hidden);
* LoRA-style adapters in each block, one per hybrid layer the block serves (hybrid index i % num_mem_blocks ==
  block): gate_up [rank, hidden] + [2 x intermediate, rank] always; q/k/v [rank, 2 x hidden] + [2 x hidden,
  rank] each under use_shared_attention_adapter;
* embed_tokens, final_layernorm; lm_head tied by default (tie_word_embeddings True).
Tensor names as Zyphra's checkpoints store them (Zamba2-1.2B's model.safetensors, as a public test lists it:
`model.layers.N.mamba.in_proj.weight` at every layer, the block at its first hybrid layer's
`shared_transformer`, adapters `feed_forward.gate_up_proj_adapter_list.J.{0,1}` and
`self_attn.q_proj_adapter_list.J.{0,1}`, `model.layers.N.linear.weight`); transformers maps them onto its modules.
KV per token: the hybrid layers only (each invocation of a shared block keeps its own cache), KV heads x
attention_head_dim; every layer keeps its Mamba2 conv + SSM state.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import ConfigError
from ...core.spec import FULL, NONE, LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive

_MAMBA = frozenset({"mamba", "mamba2", "linear_attention"})  # transformers remaps legacy "mamba" to the latter


@dataclass
class Args(BaseArgs):
    """Zamba2Config defaults (transformers 5.24.0 configuration_zamba2.py)."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 32000
    max_position_embeddings: int = 4096
    hidden_size: int = 2560
    num_hidden_layers: int = 54
    layers_block_type: list | None = None
    mamba_d_state: int = 64
    mamba_d_conv: int = 4
    mamba_expand: int = 2
    mamba_ngroups: int = 1
    n_mamba_heads: int = 8
    add_bias_linear: bool = False
    intermediate_size: int | None = None
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None
    num_mem_blocks: int = 1
    use_shared_attention_adapter: bool = False
    adapter_rank: int = 128
    tie_word_embeddings: bool = True
    # written by Zamba2Config.to_dict, recomputed by __post_init__ on load: checked against what it computes
    attention_hidden_size: int | None = None
    attention_head_dim: int | None = None
    mamba_headdim: int | None = None
    hybrid_layer_ids: list | None = None
    # written too, read by no module of the model (the conv bias is always on; the others are aliases)
    use_conv_bias: bool = True
    kv_channels: int | None = None
    num_query_groups: int | None = None


# Zamba2Config's plan when the config has none: a hybrid layer every sixth, then 4 + 1 + 3 + 1 + 2 (54 layers)
DEFAULT_PLAN = ("mamba",) + (("mamba",) * 5 + ("hybrid",)) * 7 + ("mamba",) * 4 + ("hybrid",) + ("mamba",) * 3 \
    + ("hybrid",) + ("mamba",) * 2


def block_types(plan: list | tuple, n_layers: int, origin: str) -> list[bool]:
    """Which layers are hybrid, from a `layers_block_type` of "hybrid" and Mamba names (Zamba and Zamba2).

    Raises:
        ConfigError: an unknown layer type, or a plan whose length is not num_hidden_layers.
    """
    bad = sorted({str(x) for x in plan} - _MAMBA - {"hybrid"})
    if bad:
        raise ConfigError(f"Cannot size the model from '{origin}': layers_block_type has unknown layer types "
                          f"{bad} (expected 'mamba' or 'hybrid').", origin, key="layers_block_type")
    if len(plan) != n_layers:
        raise ConfigError(f"Cannot size the model from '{origin}': layers_block_type lists {len(plan)} layers but "
                          f"num_hidden_layers is {n_layers} (transformers refuses it too).", origin,
                          key="layers_block_type")
    return [x == "hybrid" for x in plan]


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "n_mamba_heads",
                     "mamba_expand", "num_mem_blocks", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv, ff, rank = args.num_key_value_heads or nq, args.intermediate_size or 4 * h, args.adapter_rank
    attn_in, hd = 2 * h, 2 * h // nq  # attention_hidden_size and attention_head_dim, as __post_init__ sets them
    inner = int(args.mamba_expand * h)
    if inner % args.n_mamba_heads:
        raise ConfigError(f"Cannot size the model from '{origin}': n_mamba_heads {args.n_mamba_heads} does not "
                          f"divide mamba_expand x hidden_size = {inner}.", origin, key="n_mamba_heads")
    hybrid = block_types(args.layers_block_type or DEFAULT_PLAN, args.num_hidden_layers, origin)
    _agrees(args, origin, attention_hidden_size=attn_in, attention_head_dim=hd, mamba_headdim=inner // args.n_mamba_heads,
            hybrid_layer_ids=[i for i, x in enumerate(hybrid) if x])
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("model.embed_tokens.weight", (args.vocab_size, h), "embedding")
    layers = []
    served = [0] * args.num_mem_blocks  # hybrid layers each shared block serves: one adapter set each
    homes: dict[int, str] = {}  # the first hybrid layer of each block: where the checkpoint stores it
    for i, is_hybrid in enumerate(hybrid):
        p = f"model.layers.{i}"
        conv_dim, state = t.mamba2(f"{p}.mamba", hidden=h, n_heads=args.n_mamba_heads,
                                   head_dim=inner // args.n_mamba_heads, n_groups=args.mamba_ngroups,
                                   d_state=args.mamba_d_state, d_conv=args.mamba_d_conv, conv_bias=True,
                                   proj_bias=args.add_bias_linear)
        t.norm(f"{p}.input_layernorm", h)
        layer = LayerSpec(attention=NONE, recurrent="mamba2", conv_dim=conv_dim, conv_kernel=args.mamba_d_conv,
                          recurrent_state_elems=state, ffn="none")
        if is_hybrid:
            t.linear(f"{p}.linear", h, h, "other")
            block = sum(served) % args.num_mem_blocks
            served[block] += 1
            homes.setdefault(block, p)
            layer = LayerSpec(attention=FULL, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                              recurrent="mamba2", conv_dim=conv_dim, conv_kernel=args.mamba_d_conv,
                              recurrent_state_elems=state, ffn="dense", ffn_width=ff)
        layers.append(layer)
    for b, n in enumerate(served):
        if n:
            _shared_block(t, f"{homes[b]}.shared_transformer", args, h, attn_in, hd, nkv, ff, rank, n)
    t.norm("model.final_layernorm", h)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    return finish(args, t, layers, dtype_known=known)


def _agrees(args: Args, origin: str, **derived: object) -> None:
    """A derived key the config states must be the value transformers derives (it recomputes them on load, so
    a config that disagrees was not written by this architecture's code: refused rather than sized either way).

    Raises:
        ConfigError: naming the first key that disagrees.
    """
    for key, want in derived.items():
        got = getattr(args, key)
        if got is not None and got != want:
            raise ConfigError(f"Cannot size the model from '{origin}': {key} is {got!r} but Zamba2Config derives "
                              f"{want!r} from the other keys.", origin, key=key)


def _shared_block(t: Tensors, p: str, args: Args, h: int, attn_in: int, hd: int, nkv: int, ff: int, rank: int,
                  served: int) -> None:
    """One shared transformer block, stored once, with the adapters of the `served` hybrid layers it runs in."""
    nq = args.num_attention_heads
    t.linear(f"{p}.self_attn.q_proj", attn_in, nq * hd, "attention")
    t.linear(f"{p}.self_attn.k_proj", attn_in, nkv * hd, "attention")
    t.linear(f"{p}.self_attn.v_proj", attn_in, nkv * hd, "attention")
    t.linear(f"{p}.self_attn.o_proj", nq * hd, h, "attention")
    t.linear(f"{p}.feed_forward.gate_up_proj", h, 2 * ff, "ffn", args.add_bias_linear)
    t.linear(f"{p}.feed_forward.down_proj", ff, h, "ffn", args.add_bias_linear)
    t.norm(f"{p}.input_layernorm", attn_in)
    t.norm(f"{p}.pre_ff_layernorm", h)
    for j in range(served):
        t.linear(f"{p}.feed_forward.gate_up_proj_adapter_list.{j}.0", h, rank, "ffn")
        t.linear(f"{p}.feed_forward.gate_up_proj_adapter_list.{j}.1", rank, 2 * ff, "ffn")
        if args.use_shared_attention_adapter:
            for x in "qkv":
                t.linear(f"{p}.self_attn.{x}_proj_adapter_list.{j}.0", attn_in, rank, "attention")
                t.linear(f"{p}.self_attn.{x}_proj_adapter_list.{j}.1", rank, attn_in, "attention")
