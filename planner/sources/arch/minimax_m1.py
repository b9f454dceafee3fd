"""MiniMax-M1 / MiniMax-Text-01 (`minimax_m1`, `minimax`) and MiniMax-M2 (`minimax_m2`, every layer
softmax attention with q/k norms and routing bias): lightning (linear) attention layers with a
softmax-attention layer where `attn_type_list` says 1, and Mixtral-style routed experts everywhere.

Shapes from the remote modeling_minimax_m1.py and vLLM minimax_text_01.py: a lightning layer has
qkv_proj [3 heads hd, h], output_gate [heads hd, h], out_proj [h, heads hd] and an RMSNorm over
heads hd; its state is heads x hd x hd per sequence (vLLM MiniMaxText01LinearAttention, fp32);
a softmax layer is q/k/v/o with GQA; block_sparse_moe holds a gate [E, h] and E experts w1/w3/w2
of intermediate_size (shared_intermediate_size adds a shared expert when > 0). transformers' own
`minimax` (MiniMaxConfig) writes the plan as layer_types ("linear_attention"/"full_attention").
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import FULL, NONE, LayerSpec, MoESpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """MiniMaxM1Config defaults (MiniMax-Text-01 shapes)."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 200064
    hidden_size: int = 6144
    intermediate_size: int = 9216
    num_hidden_layers: int = 80
    num_attention_heads: int = 64
    num_key_value_heads: int | None = 8
    head_dim: int | None = 128
    max_position_embeddings: int = 10240000
    tie_word_embeddings: bool = False
    attn_type_list: list | None = None
    layer_types: list | None = None
    num_local_experts: int = 32
    num_experts_per_tok: int = 2
    shared_intermediate_size: int = 0
    shared_moe_mode: str = "sigmoid"
    rotary_dim: int | None = None
    postnorm: bool = False
    sliding_window: int | None = None
    # MiniMax-M2 (`minimax_m2`): per-layer q/k RMSNorms over heads x hd and a router correction bias
    use_qk_norm: bool = False
    qk_norm_type: str = "per_layer"
    use_routing_bias: bool = False
    scoring_func: str | None = None
    use_mtp: bool = False
    num_mtp_modules: int = 0
    # lightning attention's block size and the residual alpha / beta factors: arithmetic, not shapes
    block_size: int | None = None
    full_attn_alpha_factor: float | None = None
    full_attn_beta_factor: float | None = None
    linear_attn_alpha_factor: float | None = None
    linear_attn_beta_factor: float | None = None
    mlp_alpha_factor: float | None = None
    mlp_beta_factor: float | None = None
    mtp_transformer_layers: int = 0


def softmax_layers(args: Args) -> list[bool]:
    n = args.num_hidden_layers
    if isinstance(args.layer_types, list) and len(args.layer_types) == n:
        return [str(x) == "full_attention" for x in args.layer_types]
    if isinstance(args.attn_type_list, list) and len(args.attn_type_list) == n:
        return [x == 1 for x in args.attn_type_list]
    return [True] * n


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv, hd = args.num_key_value_heads or nq, args.head_dim or h // nq
    e, inter = args.num_local_experts, args.intermediate_size
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    moe = MoESpec(e, args.num_experts_per_tok, inter, 1 if args.shared_intermediate_size else 0,
                  args.shared_intermediate_size) if e else None
    layers = []
    for i, softmax in enumerate(softmax_layers(args)):
        p = f"model.layers.{i}"
        if softmax:
            t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                        qk_norm="full" if args.use_qk_norm else None)
        else:
            t.linear(f"{p}.self_attn.qkv_proj", h, 3 * nq * hd, "attention")
            t.linear(f"{p}.self_attn.output_gate", h, nq * hd, "attention")
            t.linear(f"{p}.self_attn.out_proj", nq * hd, h, "attention")
            t.norm(f"{p}.self_attn.norm", nq * hd)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        if moe:
            t.router(f"{p}.block_sparse_moe", h, e, correction_bias=args.use_routing_bias)
            t.experts(f"{p}.block_sparse_moe", h, e, inter)
            if args.shared_intermediate_size:
                t.mlp(f"{p}.shared_mlp", h, args.shared_intermediate_size)
                t.add(f"{p}.coefficient.weight", (1, h), "other")
        else:
            t.mlp(f"{p}.mlp", h, inter)
        ffn = "moe" if moe else "dense"
        if softmax:
            layers.append(LayerSpec(attention=FULL, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                    ffn=ffn, ffn_width=inter))
        else:
            # lightning attention keeps a [heads, hd, hd] state per sequence (no conv)
            layers.append(LayerSpec(attention=NONE, recurrent="linear_attention", q_heads=nq,
                                    recurrent_state_elems=nq * hd * hd, ffn=ffn, ffn_width=inter))
    notes = [f"config declares {args.num_mtp_modules} MTP module(s) (use_mtp) that MiniMax-M2 checkpoints do not "
             f"ship (the MiniMax-M2.7 tensor report lists none): not counted"] if args.use_mtp else []
    return finish(args, t, layers, dtype_known=known, moe=moe, notes=notes)
