"""The weight matmuls of one forward of n tokens, from a ModelSpec's layer shapes.

Why: a tiled matrix kernel's cost depends on each matrix's rows (how many threadgroup tiles it
splits into), not only on the total FLOPs (speed/kernel_model.Matrix). Attention projections
q/k/v/o, the FFN's gate/up/down (a MoE layer: the experts the n tokens touch, plus its shared
experts) and the lm_head come from the layer shapes; whatever the shapes do not cover (recurrent
mixers' projections, MLA's low-rank paths) is one matrix of `hidden` rows with the remaining
active parameters as its depth, so the FLOPs stay those of 2 x active params x n.
"""

from __future__ import annotations

from ..core import memo
from ..core.spec import NONE, ModelSpec
from .kernel_model import Matmul


def forward_matmuls(spec: ModelSpec, n: int, *, experts: bool = True) -> tuple[Matmul, ...]:
    """The matmuls one forward of n tokens runs (count = per forward), the lm_head included; `experts`: False
    leaves the routed experts out (a backend that runs them on their own kernels, speed/moe_dispatch.py).

    A function of the spec and n alone: memoised per spec (every machine of a fleet asks for the same n)."""
    return memo.per_object(spec, ("matmuls", n, experts), lambda: _forward_matmuls(spec, n, experts))


def _forward_matmuls(spec: ModelSpec, n: int, experts: bool) -> tuple[Matmul, ...]:
    h = spec.hidden
    out: list[Matmul] = []
    covered = 0.0  # parameters the shapes account for, at one token
    for layer in spec.layers:
        if layer.attention != NONE and layer.q_heads and not layer.kv_lora_rank:
            q, kv_k, kv_v = (layer.q_heads * layer.head_dim_k, layer.kv_heads * layer.head_dim_k,
                             layer.kv_heads * layer.head_dim_v)
            o_in = layer.q_heads * layer.head_dim_v
            out += [Matmul(q, h, 1), Matmul(kv_k, h, 1), Matmul(kv_v, h, 1), Matmul(h, o_in, 1)]
            covered += h * (q + kv_k + kv_v + o_in)
        if layer.ffn == "dense" and layer.ffn_width:
            out += [Matmul(layer.ffn_width, h, 2), Matmul(h, layer.ffn_width, 1)]
            covered += 3 * h * layer.ffn_width
        elif layer.ffn == "moe" and spec.moe is not None:
            m = spec.moe
            if experts:
                touched = expected_experts_touched(m.experts, m.experts_per_token, n)
                out += [Matmul(m.expert_intermediate, h, 2 * touched), Matmul(h, m.expert_intermediate, touched)]
            covered += 3 * h * m.expert_intermediate * m.experts_per_token
            if m.shared_experts and m.shared_intermediate:
                width = m.shared_experts * m.shared_intermediate
                out += [Matmul(width, h, 2), Matmul(h, width, 1)]
                covered += 3 * h * width
    out.append(Matmul(spec.vocab, h, 1))
    covered += spec.vocab * h
    active = spec.params_active - (0 if spec.tied_embeddings else spec.vocab * h)
    rest = active - covered
    if rest > 0 and h:
        out.append(Matmul(h, max(1, round(rest / h)), 1))
    return _merge(out)


def expected_experts_touched(experts: int, per_token: int, n: int) -> float:
    """Distinct routed experts one MoE layer reads for n tokens, under uniform routing.

    # E[distinct] = E_total * (1 - (1 - k/E_total)**n)   (each expert missed by all n tokens w.p. (1-k/E)**n)
    """
    if experts <= 0:
        return 0.0
    return experts * (1.0 - (1.0 - per_token / experts) ** n)


def _merge(ms: list[Matmul]) -> tuple[Matmul, ...]:
    """Equal shapes summed into one entry (a 64-layer model has seven shapes, not 448 rows)."""
    acc: dict[tuple[int, int], float] = {}
    for m in ms:
        acc[(m.rows, m.depth)] = acc.get((m.rows, m.depth), 0.0) + m.count
    return tuple(Matmul(r, d, c) for (r, d), c in acc.items())
