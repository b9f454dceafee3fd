"""Speculation under load: the speed-up of one plan at each serving concurrency, and where it stops paying.

Why: engines serve many sequences at once. One forward then reads the weights once for all of them,
every sequence's KV cache, and computes batch x (K+1) tokens (speed/roofline.py `forward_cost` with
`batch`), so verification that is nearly free for one sequence becomes compute-bound at high
concurrency, and the gain shrinks or turns into a loss (vLLM's 2024 blog: faster at low QPS, slower at
high QPS; SmartSpec, arXiv 2406.14066). At long context and large batch the KV read dominates and
verification stays cheap longer (MagicDec, arXiv 2408.11049): the same formulas show both.

  per batch B:  S(K, B) = E(K) * t_v(1, B) / (K * t_d(B) + t_v(K+1, B))      best K at each B
                tokens/s per sequence = S / t_v(1, B);  aggregate = B x that
  crossover   = the smallest B whose central speed-up is <= 1 (None: speculation pays at every B shown)

Per-round costs that grow with B (the engine's speculation machinery, Engine.spec_round_overhead_s) and
token rows past the published kernel curves are priced in the costs (speed/roofline.py); `load_notes`
says when the K chosen is only right at low load and when a full-attention draft's own KV read erodes
the gain at long context.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.fmt import fmt_bytes
from ..core.spec import ModelSpec
from ..fits import fit
from ..fits.memory import Settings
from ..speed import roofline
from ..speed.adaptive import Adaptive
from ..speed.adaptive_predict import predict_plan
from ..speed.model import Acceptance, Costs


@dataclass(frozen=True)
class BatchPoint:
    """One plan at one concurrency."""

    batch: int
    k: int
    speedup: float
    speedup_interval: tuple[float, float]
    verdict: str
    tokens_per_s_per_seq: float  # with speculation at this K
    tokens_per_s: float  # all sequences together
    baseline_tokens_per_s: float  # plain decoding, all sequences together
    fits: bool
    headroom_bytes: int


def batch_point(batch: int, problem: fit.Problem, costs: Costs, alpha: Acceptance, k_max: int,
                k_fixed: int | None = None, adaptive: Adaptive | None = None) -> BatchPoint:
    """Fit and speed-up of one plan with `batch` concurrent sequences (costs priced at that batch)."""
    devs = fit.evaluate(problem, problem.settings.context, batch)
    headroom = min(d.headroom_bytes for d in devs)
    pred = predict_plan(costs.verify_s, costs.draft_s, alpha, costs.overhead_s, k_max=k_max,
                        verify_bounds=costs.verify_bounds, k_fixed=k_fixed, overhead_low_s=costs.overhead_low_s,
                        adaptive=adaptive)
    per_seq = pred.speedup / costs.verify_s[0]
    return BatchPoint(batch=batch, k=pred.k_best, speedup=pred.speedup,
                      speedup_interval=(pred.speedup_low, pred.speedup_high), verdict=pred.verdict,
                      tokens_per_s_per_seq=per_seq, tokens_per_s=per_seq * batch,
                      baseline_tokens_per_s=batch / costs.verify_s[0], fits=headroom >= 0, headroom_bytes=headroom)


def batch_curve(batches: Sequence[int], point_at: Callable[[int], BatchPoint]) -> tuple[BatchPoint, ...]:
    """The plan at every concurrency asked for, smallest first."""
    return tuple(point_at(b) for b in sorted(set(batches)))


def crossover_batch(points: Sequence[BatchPoint]) -> int | None:
    """The smallest concurrency at which speculation stops paying (central speed-up <= 1.0), else None."""
    return next((p.batch for p in points if p.speedup <= 1.0), None)


def load_notes(points: Sequence[BatchPoint], k_chosen: int, draft: ModelSpec | None, s: Settings) -> tuple[str, ...]:
    """What a user serving at these concurrencies should know about the plan priced at one sequence.

    - the K chosen at the deployment's batch is not the best K where speculation still pays at higher load;
    - a full-attention draft re-reads its own KV cache every draft step: once B x its KV at the context
      outweighs its weights, the draft costs more than its size suggests (a draft with a small or windowed
      KV, or an EAGLE head's single layer, keeps its cost).
    """
    notes = []
    paying = [p for p in points if p.speedup > 1.0]
    off = [p for p in paying if p.k != k_chosen]
    if off:
        worst = off[-1]
        notes.append(f"K={k_chosen} is right at low load only: at {worst.batch} concurrent sequences the best K is "
                     f"{worst.k} ({worst.speedup:.2f}x)")
    if draft is not None and points:
        top = points[-1]
        one = Settings(context=s.context, batch=1, resolved_engine=s.resolved_engine, kv_dtype=s.kv_dtype)
        kv = top.batch * roofline.kv_bytes_moved(draft, one, s.context, 1)
        weights = roofline.weight_bytes_read(draft, one, top.batch)
        if kv > weights:
            notes.append(f"at {top.batch} sequences x {s.context:,} tokens the draft reads {fmt_bytes(kv)} of its own "
                         f"KV cache per draft step, more than its {fmt_bytes(weights)} of weights: its KV erodes the "
                         f"gain; a draft with a small or windowed KV cache (or an EAGLE head's one layer) keeps it")
    return tuple(notes)
