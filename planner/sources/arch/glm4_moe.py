"""GLM-4.5 / 4.6 / 4.7 (`glm4_moe`): grouped-query attention over DeepSeek-V3-style routed + shared experts.

Shapes from transformers modeling_glm4_moe.py: q/k/v with bias under `attention_bias`, o_proj never biased
(:188-197), q/k norms per head under `use_qk_norm` (:199-201); the first `first_k_dense_replace` layers a dense
SwiGLU of `intermediate_size`, the rest a sigmoid router with an e_score_correction_bias (Glm4MoeTopkRouter,
:270-282), fused experts and `n_shared_experts` x moe_intermediate_size shared experts (:380-391).
`partial_rotary_factor` changes no weight.

MTP: `num_nextn_predict_layers` layers numbered past the decoder (the checkpoint's model.layers.N), each one more
decoder layer plus DeepSeek-V3's enorm / hnorm / eh_proj / shared_head.norm, on their own ledger row. GLM-4.5's
checkpoint also stores the layer's embed_tokens and shared_head.head copies, GLM-4.6's does not (vLLM PR #27597:
"the GLM-4.6 checkpoint doesn't include the shared parameters ... while the GLM-4.5 checkpoint does"), and no
config key tells the releases apart: the copies are counted, and where they weigh more than the 0.5% a stored
figure is held to (GLM-4.5-Air: 1.1%; GLM-4.5/4.6: 0.43%), the figure says it is a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...core.spec import FULL, LayerSpec, MoESpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, mtp_spec, require_positive


@dataclass
class Args(BaseArgs):
    """Glm4MoeConfig defaults (transformers configuration_glm4_moe.py:90-119)."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 151552
    hidden_size: int = 4096
    intermediate_size: int = 10944
    num_hidden_layers: int = 46
    num_attention_heads: int = 96
    num_key_value_heads: int = 8
    head_dim: int | None = None  # hidden_size // num_attention_heads when absent (modeling_glm4_moe.py:181)
    max_position_embeddings: int = 131072
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    use_qk_norm: bool = False
    moe_intermediate_size: int = 1408
    num_experts_per_tok: int = 8
    n_shared_experts: int = 1
    n_routed_experts: int = 128
    first_k_dense_replace: int = 1
    num_nextn_predict_layers: int = 0
    # whether attention_bias also biases o_proj: not in GLM-4.5 (q/k/v only), yes in dots.llm1 (dots1.py)
    O_BIAS: ClassVar[bool] = False


# the share of the stored bytes an unknowable part may take before the figure must say so (the ledger's tolerance)
_TOLERANCE = 0.005


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "num_key_value_heads", origin=origin)
    h = args.hidden_size
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    moe = MoESpec(experts=args.n_routed_experts, experts_per_token=args.num_experts_per_tok,
                  expert_intermediate=args.moe_intermediate_size, shared_experts=args.n_shared_experts,
                  shared_intermediate=args.n_shared_experts * args.moe_intermediate_size) \
        if args.n_routed_experts else None
    n = args.num_hidden_layers
    layers = [_layer(t, args, f"model.layers.{i}", moe if i >= args.first_k_dense_replace else None)
              for i in range(n)]
    mtp_t = Tensors(dtype)
    for j in range(args.num_nextn_predict_layers):
        i = n + j
        p = f"model.layers.{i}"
        _layer(mtp_t, args, p, moe if i >= args.first_k_dense_replace else None)
        for name in ("enorm", "hnorm", "shared_head.norm"):
            mtp_t.norm(f"{p}.{name}", h)
        mtp_t.linear(f"{p}.eh_proj", 2 * h, h, "other")
        mtp_t.add(f"{p}.embed_tokens.weight", (args.vocab_size, h), "embedding")
        mtp_t.add(f"{p}.shared_head.head.weight", (args.vocab_size, h), "lm_head")
    copies = sum(x.nbytes for x in mtp_t.items if x.name.endswith(("embed_tokens.weight", "shared_head.head.weight")))
    stored = sum(x.nbytes for x in t.items) + sum(x.nbytes for x in mtp_t.items)
    guesses = (f"the MTP layer's embed_tokens / shared_head.head copies ({copies:,} B, "
               f"{copies / stored:.1%} of the checkpoint) counted as GLM-4.5 stores them; GLM-4.6 does not "
               f"(vLLM PR #27597), and the config cannot tell",) if copies > _TOLERANCE * stored else ()
    notes = [f"{args.num_nextn_predict_layers} MTP layer(s) not resident for plain decoding: on their own row "
             f"(loaded only for MTP speculation)"] if args.num_nextn_predict_layers else []
    return finish(args, t, layers, dtype_known=known, moe=moe, notes=notes, guesses=guesses,
                  mtp=mtp_spec(mtp_t, args.num_nextn_predict_layers), mtp_tensors=tuple(mtp_t.items))


def _layer(t: Tensors, args: Args, p: str, moe: MoESpec | None) -> LayerSpec:
    """One decoder layer's tensors into `t` (MoE when `moe` is given); returns its LayerSpec."""
    h, nq, nkv = args.hidden_size, args.num_attention_heads, args.num_key_value_heads
    hd = args.head_dim or h // nq
    t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd, qkv_bias=args.attention_bias,
                o_bias=args.attention_bias and args.O_BIAS, qk_norm="head" if args.use_qk_norm else None)
    t.norm(f"{p}.input_layernorm", h)
    t.norm(f"{p}.post_attention_layernorm", h)
    if moe is not None:
        t.router(f"{p}.mlp", h, moe.experts, correction_bias=True)
        t.experts(f"{p}.mlp", h, moe.experts, moe.expert_intermediate)
        if moe.shared_intermediate:
            t.mlp(f"{p}.mlp.shared_experts", h, moe.shared_intermediate)
    else:
        t.mlp(f"{p}.mlp", h, args.intermediate_size)
    return LayerSpec(attention=FULL, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                     ffn="moe" if moe is not None else "dense",
                     ffn_width=moe.expert_intermediate if moe is not None else args.intermediate_size)
