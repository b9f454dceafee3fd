"""The classic method: a separate, smaller model of the same tokenizer drafts K tokens per round.

Resident: the whole draft checkpoint (weights, its own KV cache, activations). Compatible where
the engine's draft check passes (engines/*.py `pair_rule`), or through the engine's heterogeneous-
vocabulary fallback (vLLM TLI, transformers UAG), whose published acceptance caps the prior.
Cost per drafted token: one forward of the draft. Acceptance prior: the published pairs of the two
families (catalogs/pairs), else the family default, each normalised to reference conditions and moved
by this pair's draft size, instruct/base match, draft format, workload and temperature
(speed/acceptance_prior.py, catalogs/acceptance.json).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core import memo, paths
from ..core.constants import catalog_dir
from ..core.errors import UsageError
from ..core.spec import ModelSpec
from ..engines import Engine
from ..engines.base import SampledRule
from ..fits.memory import Settings
from ..pairing import pair as pairing
from ..sources import load_spec, quantised
from ..speed import acceptance as acc
from ..speed import acceptance_prior, roofline
from ..speed.roofline import MachineLike
from .base import Compatibility, MethodEntry

KIND = "draft_model"


@dataclass(frozen=True)
class DraftModel:
    """A draft checkpoint: `spec` as loaded, `ref` as the user named it (path, Hub id or catalog name)."""

    spec: ModelSpec
    ref: str
    weights_dtype: str | None = None  # --draft-weights-dtype: the draft's own format (None: as the target's)
    kind: str = KIND
    workload: str | None = None  # --workload chat | code | reasoning (None: chat, as the catalogued prompts)
    temperature: float | None = None  # sampling temperature (None: greedy or the engine default)
    acceptance_rule: SampledRule | None = None  # the engine's Engine.sampled_acceptance (None: rejection sampling)

    @property
    def label(self) -> str:
        return self.spec.id

    def resident_model(self) -> ModelSpec:
        return self.spec

    def compatibility(self, target: ModelSpec, engine: Engine, *, context: int | None = None) -> Compatibility:
        """The pair report's verdict for `engine`; a refusal with a fallback carries TLI's acceptance cap.

        The cap is the number `planner pair` prints for the pair (heterogeneous.tli_acceptance), applied
        whenever the engine needs the fallback, same tokenizer included: vLLM PR #38174 measured 0.61 for
        Qwen2.5-7B + Qwen2.5-0.5B (overlap 0.998, refused only over embedding padding) on the TLI path,
        against 0.80 for a same-vocabulary Llama pair on the plain path.
        """
        # the same verdicts on every machine of a report: once per (target, draft, context) (issue #33)
        report = memo.per_pair(target, self.spec, ("pair", context, str(catalog_dir())),
                               lambda: pairing.pair(target, self.spec, context=context))
        verdict = report.verdicts[engine.name]
        refused = not verdict.compatible
        fallback = verdict.fallback if refused and engine.heterogeneous_fallback else None
        tli = None
        if fallback and report.heterogeneous and report.heterogeneous.tli_acceptance:
            est = report.heterogeneous.tli_acceptance
            tli = est.value if est.value is not None else est.upper  # below the measured range: its bound
        return Compatibility(verdict=verdict, fallback=fallback, tli_alpha=tli, report=report)

    def settings_for(self, s: Settings) -> Settings:
        """The draft's settings: its own weights format, else the target's; sized as stored where the engine
        needs an int4 checkpoint of the draft (SGLang) and none is catalogued, as the launch then loads it."""
        d = replace(s, weights_dtype=self.weights_dtype) if self.weights_dtype else s
        if (d.resolved_engine.draft_int4_needs_checkpoint and quantised.is_int4(d.weights_dtype)
                and quantised.int4_repo(self.launch_ref) is None):
            return replace(d, weights_dtype=None)
        return d

    def step_s(self, machine: MachineLike, s: Settings) -> float:
        return roofline.draft_step_s(self.spec, machine, context=s.context, settings=self.settings_for(s))

    def acceptance_prior(self, target: ModelSpec) -> acc.Acceptance:
        # a function of the two specs and this draft's conditions, not of the machine: once per value (issue #33)
        key = ("acceptance_prior", self.weights_dtype, self.workload, self.temperature, self.acceptance_rule,
               str(catalog_dir()))
        return memo.per_pair(target, self.spec, key, lambda: self._acceptance_prior(target))

    def _acceptance_prior(self, target: ModelSpec) -> acc.Acceptance:
        cond = acceptance_prior.conditions_for(target, self.spec, draft_quant=self.weights_dtype,
                                               workload=self.workload, temperature=self.temperature,
                                               rule=self.acceptance_rule)
        return acceptance_prior.prior(target.family, self.spec.family, cond)

    @property
    def launch_ref(self) -> str:
        """What a launch command names: the path the user gave, else the full model id (never a catalog
        alias such as 'llama-3.2-1b-instruct', which no engine resolves)."""
        return self.ref if paths.exists(self.ref) else self.spec.id

    def launch_fields(self) -> dict[str, Any]:
        return {"draft": self.launch_ref, "draft_weights_quant": self.weights_dtype}


def conditioned(methods: Sequence[Any], *, temperature: float | None = None,
                workload: str | None = None, rule: SampledRule | None = None) -> list[Any]:
    """The methods with every draft model told the sampling temperature, workload and the engine's rule for
    keeping a sampled draft token, which its acceptance prior depends on (a value the draft already carries
    wins); other methods unchanged."""
    return [replace(m, temperature=m.temperature if m.temperature is not None else temperature,
                    workload=m.workload or workload, acceptance_rule=m.acceptance_rule or rule)
            if isinstance(m, DraftModel) else m for m in methods]


def _build(target: ModelSpec, draft: str | None, workload: str | None) -> DraftModel:
    """--method draft_model takes --draft: the draft checkpoint.

    Raises:
        UsageError: no --draft.
    """
    if not draft:
        raise UsageError("Cannot use --method draft_model without --draft: name the draft checkpoint.")
    return DraftModel(load_spec(draft), draft)


ENTRY = MethodEntry(KIND, _build)  # a separate checkpoint: never offered by self_drafting
