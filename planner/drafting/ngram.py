"""n-gram lookup (prompt lookup, vLLM `ngram`, SGLang NGRAM, llama.cpp ngram-simple, transformers
`prompt_lookup_num_tokens`): the drafts are the tokens that followed the last n-gram where it
occurred before in the prompt or the output.

Resident: nothing (no weights, no KV; the engines keep the token history they already hold).
Compatible wherever the engine has an n-gram drafter (Engine.methods); the vocabulary cannot
differ, the target drafts for itself. Cost per drafted token: CPU work, not a forward: a suffix
match over the history once per round; NGRAM_TOKEN_S below is assumed, and small beside any
verify forward. Acceptance: the workload decides it (a code edit, RAG or a summary copies its
prompt; open chat does not), so the prior is per `--workload` (priors.py), published where a
measurement exists and assumed (uncertain) elsewhere.

Variants: an engine with several n-gram drafters of its own (llama.cpp's ngram-simple, ngram-map-k,
ngram-map-k4v, ngram-mod, ngram-cache: `Engine.ngram_variants`) is planned per variant, each a choice
of its own with its own launch flags; another engine refuses a variant it does not have. No published
acceptance separates the variants on one workload, so they share the workload's prior (stated in the
acceptance's source) until one is measured (`--acceptance`, `planner probe`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..core.spec import ModelSpec
from ..engines.base import NGRAM, Engine
from ..fits.memory import Settings
from ..speed import acceptance as acc
from ..speed.roofline import MachineLike
from . import priors
from .base import Compatibility, MethodEntry, engine_support

# the spellings the CLI takes for a variant (--method ngram-mod or ngram_mod) -> the engine's own name
VARIANT_PREFIX = "ngram_"

KIND = NGRAM
# Assumed CPU cost per drafted token: a suffix match over a few thousand history tokens (vLLM's
# numba KMP proposer, SGLang's C++ trie) costs tens of microseconds per round; 20 us per drafted
# token (0.1 ms per round at K = 5) is taken. Not measured here; it is small beside t_v(1).
NGRAM_TOKEN_S = 20e-6
NGRAM_MAX = 4  # the longest n-gram matched (the printed prompt_lookup_max / size-n)


@dataclass(frozen=True)
class NgramLookup:
    """n-gram lookup for the workload being planned (`--workload`)."""

    workload: str | None = None
    variant: str | None = None  # one of the engine's own n-gram drafters (Engine.ngram_variants); None: any
    kind: str = KIND

    @property
    def label(self) -> str:
        return f"{self.variant or 'ngram'} ({self.workload or priors.DEFAULT_WORKLOAD})"

    @property
    def ref(self) -> str | None:
        return None

    def resident_model(self) -> ModelSpec | None:
        return None

    def compatibility(self, target: ModelSpec, engine: Engine, *, context: int | None = None) -> Compatibility:
        c = engine_support(engine, KIND)
        if self.variant is None or not c.runs or self.variant in engine.ngram_variants:
            return c
        have = ", ".join(engine.ngram_variants) or "none"
        v = replace(c.verdict, compatible=False, failed_rule="ngram_variant",
                    detail=f"{engine.name} has no n-gram drafter '{self.variant}' (its own variants: {have})")
        return replace(c, verdict=v)

    def settings_for(self, s: Settings) -> Settings:
        return s

    def step_s(self, machine: MachineLike, s: Settings) -> float:
        return NGRAM_TOKEN_S

    def acceptance_prior(self, target: ModelSpec) -> acc.Acceptance:
        a = priors.prior(KIND, workload=self.workload or priors.DEFAULT_WORKLOAD, target=target.id)
        if self.variant is None:
            return a
        return replace(a, source=f"{a.source}; {self.variant} shares the workload's n-gram prior (no published "
                                 f"acceptance separates the variants)")

    def launch_fields(self) -> dict[str, Any]:
        return {"draft": None, "method": KIND, "ngram_max": NGRAM_MAX, "draft_weights_quant": None,
                "ngram_variant": self.variant}


def variant_name(method: str) -> str | None:
    """'ngram_mod' (as --method spells it after parsing) -> 'ngram-mod'; None for anything else."""
    return method.replace("_", "-") if method.startswith(VARIANT_PREFIX) else None


ENTRY = MethodEntry(KIND, lambda target, draft, workload: NgramLookup(workload),
                    lambda target, workload: ([NgramLookup(workload)], []))
