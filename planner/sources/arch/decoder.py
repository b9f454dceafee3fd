"""The standard decoder-only transformer, parameterised by family habits.

Why one builder: Llama, Mistral, Qwen2/3, Gemma 1/2/3, Phi-3, OLMo2 and the
Mixtral/Qwen MoE variants differ only in a few switches (norm count, q/k norms,
biases, which layers slide, MoE layout). Each family file sets the switches and
the transformers class defaults; this file turns them into layers and tensors.
Unknown model types also land here (standard keys), with a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...core.spec import FULL, SLIDING, LayerSpec, MoESpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class DecoderArgs(BaseArgs):
    """HF config keys of a standard decoder (defaults are LlamaConfig's)."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    hidden_size: int = 0
    num_hidden_layers: int = 0
    num_attention_heads: int = 0
    vocab_size: int = 0
    intermediate_size: int = 0
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    sliding_window: int | None = None
    use_sliding_window: bool | None = None
    max_window_layers: int | None = None
    layer_types: list | None = None
    sliding_window_pattern: int | None = None
    _sliding_window_pattern: int | None = None
    attention_chunk_size: int | None = None
    # MoE, under the names Mixtral / Qwen-MoE / OLMoE use
    num_local_experts: int | None = None
    num_experts: int | None = None
    num_experts_per_tok: int | None = None
    moe_intermediate_size: int | None = None
    shared_expert_intermediate_size: int | None = None
    decoder_sparse_step: int = 1
    mlp_only_layers: list | None = None


@dataclass(frozen=True)
class Style:
    """Family switches. `norms`: per-layer norm module names."""

    norms: tuple[str, ...] = ("input_layernorm", "post_attention_layernorm")
    qk_norm: str | None = None  # None | "head" | "full"
    qkv_bias: bool | None = None  # None: follow attention_bias
    sliding: str = "layer_types"  # layer_types | all | qwen | every2 | pattern
    pattern_default: int = 6
    moe: str = "none"  # none | routed | shared (Qwen2-MoE: + shared expert and its sigmoid gate)
    llamacpp_swa: bool = True
    gated_mlp: bool = True  # False: up/down only (StarCoder2 c_fc/c_proj, GPT-2 style)
    norm_bias: bool = False  # LayerNorm with bias (StarCoder2) rather than RMSNorm weight only
    # per-layer parameters of a learned activation in the MLP (Apertus' xIELU): (name under the layer, shape)
    act_params: tuple[tuple[str, tuple[int, ...]], ...] = ()


def layer_kinds(args: DecoderArgs, style: Style) -> tuple[list[str], list[str]]:
    """Per-layer attention kind and window rule, following each family's config semantics.

    Returns (kinds, notes). Rules (transformers configuration_*.py __post_init__):
    layer_types if given; Qwen2/3: sliding only if use_sliding_window and i >= max_window_layers;
    Gemma2/gpt-oss: odd layers full (i+1) % 2 == 0; Gemma3: every pattern-th layer full;
    Mistral: sliding_window on all layers.
    """
    n, notes = args.num_hidden_layers, []
    if isinstance(args.layer_types, list) and len(args.layer_types) == n:
        kinds = [_kind(t) for t in args.layer_types]
    elif style.sliding == "qwen":
        on = bool(args.use_sliding_window) and args.sliding_window is not None
        mwl = args.max_window_layers if args.max_window_layers is not None else n
        kinds = [SLIDING if on and i >= mwl else FULL for i in range(n)]
    elif style.sliding == "every2":
        kinds = [SLIDING if (i + 1) % 2 else FULL for i in range(n)]
    elif style.sliding == "pattern":
        pat = args.sliding_window_pattern or args._sliding_window_pattern or style.pattern_default
        kinds = [SLIDING if (i + 1) % pat else FULL for i in range(n)]
    elif style.sliding == "all" and args.sliding_window:
        kinds = [SLIDING] * n
    else:
        kinds = [FULL] * n
    if SLIDING in kinds and (not args.sliding_window or args.sliding_window >= args.max_position_embeddings):
        if args.sliding_window:
            notes.append(f"sliding_window {args.sliding_window} >= max context "
                         f"{args.max_position_embeddings}: the window never fills, sized as full attention")
        kinds = [FULL if k == SLIDING else k for k in kinds]
    return kinds, notes


def _kind(t: object) -> str:
    s = str(t)
    if s.startswith("sliding"):
        return SLIDING
    if s.startswith("chunked"):
        return "chunked"
    return FULL


def moe_of(args: DecoderArgs) -> MoESpec | None:
    n = args.num_local_experts or args.num_experts
    if not n:
        return None
    return MoESpec(experts=n, experts_per_token=args.num_experts_per_tok or 2,
                   expert_intermediate=args.moe_intermediate_size or args.intermediate_size,
                   shared_experts=1 if args.shared_expert_intermediate_size else 0,
                   shared_intermediate=args.shared_expert_intermediate_size or 0)


def is_moe_layer(args: DecoderArgs, i: int) -> bool:
    # Qwen-MoE: sparse when i not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0
    step = args.decoder_sparse_step or 1
    return i not in (args.mlp_only_layers or []) and (i + 1) % step == 0


def build(args: DecoderArgs, style: Style, *, origin: str = "config.json") -> ArchSpec:
    """Layers and logical tensors of a standard decoder."""
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv = args.num_key_value_heads or nq
    hd = args.head_dim or h // nq
    dtype, dtype_known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings, norm_bias=style.norm_bias)
    kinds, notes = layer_kinds(args, style)
    moe = moe_of(args)
    qkv_bias = args.attention_bias if style.qkv_bias is None else style.qkv_bias
    layers = []
    for i, kind in enumerate(kinds):
        p = f"model.layers.{i}"
        t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                    qkv_bias=qkv_bias, o_bias=args.attention_bias, qk_norm=style.qk_norm)
        for name in style.norms:
            t.norm(f"{p}.{name}", h, bias=style.norm_bias)
        layer_moe = moe if moe is not None and is_moe_layer(args, i) else None  # this layer's experts
        if layer_moe is not None:
            t.router(f"{p}.mlp", h, layer_moe.experts)
            t.experts(f"{p}.mlp", h, layer_moe.experts, layer_moe.expert_intermediate)
            if style.moe == "shared" and layer_moe.shared_intermediate:
                t.mlp(f"{p}.mlp.shared_expert", h, layer_moe.shared_intermediate)
                t.add(f"{p}.mlp.shared_expert_gate.weight", (1, h), "other")
        else:
            t.mlp(f"{p}.mlp", h, args.intermediate_size, bias=args.mlp_bias, gated=style.gated_mlp)
            for name, shape in style.act_params:
                t.add(f"{p}.{name}", shape, "norm")
        window = args.attention_chunk_size if kind == "chunked" else args.sliding_window
        layers.append(LayerSpec(attention=kind, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                window=window if kind != FULL else None,
                                ffn="moe" if layer_moe is not None else "dense",
                                ffn_width=layer_moe.expert_intermediate if layer_moe is not None
                                else args.intermediate_size))
    return finish(args, t, layers, dtype_known=dtype_known, moe=moe, notes=notes, llamacpp_swa=style.llamacpp_swa)
