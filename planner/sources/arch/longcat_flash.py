"""LongCat-Flash (`longcat_flash`, Meituan): each of `num_layers` layers holds two MLA attention sublayers,
two dense MLPs and one shortcut-connected MoE whose router also picks "zero" (identity) experts.

transformers modeling_longcat_flash.py / configuration_longcat_flash.py:
- per layer: self_attn.0/1 (DeepSeek MLA: q_a / q_a_layernorm / q_b under q_lora_rank, kv_a_proj_with_mqa
  [kv_lora_rank + qk_rope_head_dim, h], kv_a_layernorm, kv_b_proj, o_proj), mlps.0/1 (gated, ffn_hidden_size),
  input_layernorm.0/1 and post_attention_layernorm.0/1; num_hidden_layers reads as 2 x num_layers
  (configuration :115-121);
- the MoE: router.classifier [n_routed_experts + zero_expert_num, h] and router.e_score_correction_bias over
  the same, experts of expert_ffn_hidden_size. A zero expert is nn.Identity: it has no weights. transformers
  shapes experts.gate_up_proj over all 768 (LongcatFlashExperts :170-172: total_experts) while down_proj has
  512, so its meta-device build says 741B for the release config; the checkpoint stores the 512 routed
  experts only (the published 560B; 560,664,980,480 here).
The KV cache holds both MLA sublayers of every layer: 2 x num_layers latents per token.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import MLA, LayerSpec, MoESpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """LongcatFlashConfig defaults."""

    REQUIRED = ("hidden_size", "num_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 131072
    hidden_size: int = 6144
    num_layers: int = 28
    num_attention_heads: int = 64
    max_position_embeddings: int = 131072
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    ffn_hidden_size: int = 12288
    q_lora_rank: int | None = 1536
    kv_lora_rank: int = 512
    qk_nope_head_dim: int = 128
    qk_rope_head_dim: int = 64
    v_head_dim: int = 128
    moe_topk: int = 12
    n_routed_experts: int = 512
    zero_expert_num: int | None = 256
    expert_ffn_hidden_size: int = 2048
    # derived by LongcatFlashConfig (num_key_value_heads = heads; qk_head_dim = nope + rope) or unused by MLA
    # (head_dim): written back into a saved config, no tensor reads them
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    qk_head_dim: int | None = None


def _mla(t: Tensors, args: Args, a: str) -> None:
    t.mla(a, hidden=args.hidden_size, heads=args.num_attention_heads, q_lora_rank=args.q_lora_rank,
          kv_lora_rank=args.kv_lora_rank, nope=args.qk_nope_head_dim, rope=args.qk_rope_head_dim,
          v_dim=args.v_head_dim, bias=args.attention_bias)



def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_layers", "num_attention_heads", "vocab_size", "kv_lora_rank",
                     origin=origin)
    h, nh, e = args.hidden_size, args.num_attention_heads, args.n_routed_experts
    routes = e + (args.zero_expert_num or 0)
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    layers = []
    for i in range(args.num_layers):
        p = f"model.layers.{i}"
        for j in range(2):
            _mla(t, args, f"{p}.self_attn.{j}")
            t.mlp(f"{p}.mlps.{j}", h, args.ffn_hidden_size)
            t.norm(f"{p}.input_layernorm.{j}", h)
            t.norm(f"{p}.post_attention_layernorm.{j}", h)
        t.add(f"{p}.mlp.router.classifier.weight", (routes, h), "other")
        t.add(f"{p}.mlp.router.e_score_correction_bias", (routes,), "norm")
        if e:
            t.experts(f"{p}.mlp", h, e, args.expert_ffn_hidden_size)
        # two LayerSpecs per layer (two MLA caches); the MoE on the first, the dense MLPs' weights in the tensors
        for j in range(2):
            moe_here = j == 0 and e > 0
            layers.append(LayerSpec(attention=MLA, q_heads=nh, kv_heads=nh,
                                    head_dim_k=args.qk_nope_head_dim + args.qk_rope_head_dim,
                                    head_dim_v=args.v_head_dim, kv_lora_rank=args.kv_lora_rank,
                                    rope_dim=args.qk_rope_head_dim, ffn="moe" if moe_here else "dense",
                                    ffn_width=args.expert_ffn_hidden_size if moe_here else args.ffn_hidden_size))
    moe = MoESpec(experts=e, experts_per_token=args.moe_topk, expert_intermediate=args.expert_ffn_hidden_size) \
        if e else None
    args.intermediate_size = args.ffn_hidden_size  # type: ignore[attr-defined]
    return finish(args, t, layers, dtype_known=known, moe=moe)
