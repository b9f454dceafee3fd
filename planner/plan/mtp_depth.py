"""MTP layers run past their depth (K > num_nextn_predict_layers): what a plan says about it.

Why a module: an MTP checkpoint trains one layer per future position; an engine asked for more drafts
than layers runs the last one again on its own output (vLLM warns "Enabling num_speculative_tokens > 1
will run multiple times of forward on same MTP layer, which may result in lower acceptance rate",
vllm/config/speculative.py, MTP branch). The acceptance prior is one constant alpha pooled over published
MTP runs at their own K (catalogs/methods), so positions past the depth carry only what those runs
measured. No published per-position rate of a reused layer names its model and depth, so no decay
constant is set here: the plan says the figure is low confidence and what would settle it.
"""

from __future__ import annotations

from ..core.spec import ModelSpec
from ..drafting import MTP, DraftingMethod, priors


def reason(target: ModelSpec, method: DraftingMethod, k: int) -> str | None:
    """A plan's note when its K runs the target's MTP layers past their depth; None otherwise."""
    depth = target.mtp.layers if target.mtp is not None else 0
    if method.kind != MTP or depth < 1 or k <= depth:
        return None
    ks = sorted({m.k for m in priors.measurements() if m.method == MTP and m.k})
    pooled = f"K {ks[0]}-{ks[-1]}" if ks else "no stated K"
    return (f"K={k} runs the {depth} MTP layer(s) {k - depth} position(s) past their depth (the engine reuses "
            f"the last layer; vLLM warns it 'may result in lower acceptance rate', vllm/config/speculative.py): "
            f"the acceptance is one alpha pooled over published MTP runs at {pooled} (catalogs/methods), so "
            f"positions past the depth are low confidence; a measured per-position rate (llama-server's "
            f"'acceptance rate per position', PR #24536; vLLM's per-position acceptance) settles it")
