"""MTP layers run past their depth (K > num_nextn_predict_layers): what a plan says about it.

Why a module: an MTP checkpoint trains one layer per future position; an engine asked for more drafts
than layers runs the last one again on its own output (vLLM warns "Enabling num_speculative_tokens > 1
will run multiple times of forward on same MTP layer, which may result in lower acceptance rate",
vllm/config/speculative.py, MTP branch). The prior is the trained layer's rate pooled over published
MTP runs (catalogs/methods; runs past their depth converted under the decay) and falls by a catalogued
factor per reused position (speed/position_decay.py). That factor rests on one published per-position
run, so the plan says the far positions are low confidence and what would settle it.
"""

from __future__ import annotations

from ..core.spec import ModelSpec
from ..drafting import MTP, DraftingMethod, priors
from ..speed import position_decay


def reason(target: ModelSpec, method: DraftingMethod, k: int) -> str | None:
    """A plan's note when its K runs the target's MTP layers past their depth; None otherwise."""
    depth = target.mtp.layers if target.mtp is not None else 0
    if method.kind != MTP or depth < 1 or k <= depth:
        return None
    ks = sorted({m.k for m in priors.measurements() if m.method == MTP and m.k})
    pooled = f"K {ks[0]}-{ks[-1]}" if ks else "no stated K"
    d = position_decay.reused_layer(depth)
    return (f"K={k} runs the {depth} MTP layer(s) {k - depth} position(s) past their depth (the engine reuses "
            f"the last layer; vLLM warns it 'may result in lower acceptance rate', vllm/config/speculative.py): "
            f"each position past the depth is priced at {d.factor:g}x the one before (one published per-position "
            f"run, catalogs/calibration any/any/{position_decay.TERM}; the trained layer's rate pooled over "
            f"published MTP runs at {pooled}), so those positions are low confidence; a measured per-position "
            f"rate (llama-server's 'acceptance rate per position', PR #24536; vLLM's per-position acceptance) "
            f"settles it")
