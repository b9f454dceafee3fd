"""LiquidAI LFM2-MoE (`lfm2_moe`, LFM2-8B-A1B, LFM2.5-8B-A1B): LFM2's conv/attention stack with routed experts.

Shapes from transformers modular_lfm2_moe.py: the first `num_dense_layers` layers keep a dense SwiGLU of
`intermediate_size` (Lfm2MoeMLP: w1/w3 [ff, h], w2 [h, ff], no LFM2 width adjustment); the others an
Lfm2MoeSparseMoeBlock: router `gate` [num_experts, h] (a Linear, no bias), experts fused [E, 2 x
moe_intermediate_size, h] and [E, h, moe_intermediate_size] (Qwen2MoeExperts' layout), and with
`use_expert_bias` an `expert_bias` [E] buffer kept in float32 (`register_buffer(..., dtype=torch.float32)`,
stored). An MLX export's index lists the same: feed_forward.gate, switch_mlp.{gate,up,down}_proj and
expert_bias in the MoE layers, feed_forward.{gate,up,down}_proj in the dense ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import MoESpec
from . import lfm2
from .base import ArchSpec, Tensors


@dataclass
class Args(lfm2.Args):
    """Lfm2MoeConfig defaults."""

    vocab_size: int = 65536
    hidden_size: int = 2048
    intermediate_size: int = 7168
    num_hidden_layers: int = 32
    moe_intermediate_size: int = 1792
    num_dense_layers: int = 2
    num_experts: int = 32
    num_experts_per_tok: int = 4
    use_expert_bias: bool = True
    routed_scaling_factor: float = 1.0
    norm_topk_prob: bool = True


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    h, n, inter = args.hidden_size, args.num_experts, args.moe_intermediate_size
    moe = MoESpec(experts=n, experts_per_token=args.num_experts_per_tok, expert_intermediate=inter)

    def ffn(t: Tensors, p: str, i: int) -> tuple[str, int]:
        if i < args.num_dense_layers:
            t.mlp(p, h, args.intermediate_size)
            return "dense", args.intermediate_size
        t.router(p, h, n)
        t.experts(p, h, n, inter)
        if args.use_expert_bias:
            t.add(f"{p}.expert_bias", (n,), "norm", "F32")
        return "moe", inter

    return lfm2.build(args, origin, ffn, moe)
