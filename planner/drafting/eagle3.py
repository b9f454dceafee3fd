"""EAGLE-3: a one-layer head trained for one target drafts from the target's own hidden states.

Resident: the head without its embedding (shared with the target, heads.py), its one layer's KV
cache and activations. Compatible where the engine serves EAGLE-3 (Engine.methods) and the head
was trained for this target: the base model it names, the target's hidden size (fc reads three of
its hidden states) and vocabulary (d2t/t2d map into it). Cost per drafted token: one forward of
the head (one decoder layer + the draft-vocabulary lm_head) on the deployment context plus the
engine's draft-step overhead (Engine.draft_forward_overhead_s: the proposer loop drafts without a
whole engine step; vLLM 0.61 ms from issue #20780, SGLang 0.11 ms from PR #4247, docs/speed.md).
Chains only (top-k 1): the engines' tree drafting is not modelled. Acceptance prior: published EAGLE-3
measurements (catalogs/methods), this target first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..core.errors import UsageError
from ..core.spec import ModelSpec
from ..engines.base import EAGLE3, Engine, Verdict, method_verdict
from ..fits.memory import Settings
from ..speed import acceptance as acc
from ..speed import roofline
from ..speed.roofline import MachineLike
from . import heads, priors
from .base import Compatibility, DraftingMethod, MethodEntry
from .heads import Head

KIND = EAGLE3


@dataclass(frozen=True)
class Eagle3:
    """An EAGLE-3 head (`head.id` is the repo launch commands name) for the workload being planned."""

    head: Head
    workload: str | None = None
    kind: str = KIND

    @property
    def label(self) -> str:
        return self.head.id

    @property
    def ref(self) -> str:
        return self.head.id

    def resident_model(self) -> ModelSpec:
        return self.head.spec

    def compatibility(self, target: ModelSpec, engine: Engine, *, context: int | None = None) -> Compatibility:
        """The engine's support for EAGLE-3, then the head's training target checked against this one."""
        v = method_verdict(engine, KIND)
        if v.compatible:
            problem = self.mismatch(target)
            if problem is not None:
                v = Verdict(v.engine, False, "head_target", None, problem)
        return Compatibility(verdict=v, fallback=None, tli_alpha=None, report=None)

    def mismatch(self, target: ModelSpec) -> str | None:
        """Why the head cannot draft for `target` (hidden size, vocabulary), or None."""
        h = self.head
        if h.target_hidden != target.hidden:
            return (f"head '{h.id}' fuses hidden states of size {h.target_hidden}; the target's hidden size is "
                    f"{target.hidden} (trained for {', '.join(h.targets) or 'another model'})")
        if h.vocab != target.vocab:
            return (f"head '{h.id}' maps drafts into a {h.vocab}-token vocabulary (t2d); the target has "
                    f"{target.vocab}")
        return None

    def settings_for(self, s: Settings) -> Settings:
        # the head keeps its own (16-bit) weights whatever the target's format
        return replace(s, weights_dtype=None)

    def step_s(self, machine: MachineLike, s: Settings) -> float:
        return roofline.draft_step_s(self.head.spec, machine, context=s.context, settings=self.settings_for(s))

    def acceptance_prior(self, target: ModelSpec) -> acc.Acceptance:
        return priors.prior(KIND, workload=self.workload, target=target.id)

    def launch_fields(self) -> dict[str, Any]:
        return {"draft": self.head.id, "method": KIND, "draft_weights_quant": None}


def _build(target: ModelSpec, draft: str | None, workload: str | None) -> Eagle3:
    """--method eagle3 takes --draft (a catalogued head's repo or a head directory: config.json + safetensors),
    else the target's catalogued head.

    Raises:
        UsageError: no head given or catalogued.
    """
    known = {e.id: e for e in heads.entries()}
    if draft in known:
        return Eagle3(known[draft].head(), workload)
    if draft:
        return Eagle3(heads.from_dir(draft, targets=(target.id,)), workload)
    found = heads.for_target(target)
    if not found:
        raise UsageError(f"Cannot use --method eagle3 for '{target.id}': no EAGLE-3 head is catalogued for it "
                         f"(catalogs/heads). Pass --draft HEAD_DIR (config.json + safetensors).")
    return Eagle3(found[0], workload)


def _self_draft(target: ModelSpec, workload: str | None) -> tuple[list[DraftingMethod], list[str]]:
    """Every catalogued head of the target."""
    catalogued = heads.for_target(target)
    why = [] if catalogued else [f"{KIND}: no catalogued EAGLE-3 head for {target.id} (catalogs/heads)"]
    return [Eagle3(h, workload) for h in catalogued], why


ENTRY = MethodEntry(KIND, _build, _self_draft)
