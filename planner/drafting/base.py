"""What a way of drafting contributes to a plan: the `DraftingMethod` protocol.

Why a seam: a separate small draft model is one way to draft; EAGLE-3 heads, the MTP layers a
model ships and n-gram lookup are others. Each differs in what stays resident, which engines run
it with which target, what one drafted token costs, how often drafts are accepted and how it is
launched. `plan/` (recommend, check, report) and the CLI faces (memory, fit) talk to methods
through this protocol only; each method is one file in this folder.

The ledger and fit below this layer stay in terms of what is resident: a method hands them its
resident model (`resident_model()`: the draft checkpoint, an EAGLE head or MTP layers as a
ModelSpec; None for n-gram lookup), so memory and fit need no knowledge of methods.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..core.spec import ModelSpec
from ..engines.base import Engine, Verdict, method_verdict
from ..fits.memory import Settings
from ..pairing.pair import PairReport
from ..speed import acceptance as acc
from ..speed.roofline import MachineLike


@dataclass(frozen=True)
class Compatibility:
    """Whether an engine runs a method with a target, and at what cost to acceptance.

    `verdict`: the engine's own check of the plain algorithm; `fallback`: the path it offers when
    it refuses (None when it has none, or did not refuse); `tli_alpha`: a vocabulary translation's
    published acceptance at this pair's overlap, which caps the prior; `report`: the full pair
    report (None for methods that pair nothing, such as n-gram lookup).
    """

    verdict: Verdict
    fallback: str | None
    tli_alpha: float | None
    report: PairReport | None

    @property
    def runs(self) -> bool:
        """The engine runs it: plainly, or through its fallback."""
        return self.verdict.compatible or self.fallback is not None


def engine_support(engine: Engine, kind: str) -> Compatibility:
    """Compatibility of a method that pairs nothing with the target (n-gram lookup, early exit): only
    whether the engine runs that kind of drafting, with its source or the reason it does not."""
    return Compatibility(verdict=method_verdict(engine, kind), fallback=None, tli_alpha=None,
                         report=None)


@runtime_checkable
class DraftingMethod(Protocol):
    """One way to draft tokens for a target. Implementations: drafting/draft_model.py."""

    # read-only members (properties), so frozen dataclasses satisfy the protocol
    @property
    def kind(self) -> str: ...  # "draft_model", "eagle3", "mtp", "ngram", "early_exit"

    @property
    def label(self) -> str: ...  # what tables show: the draft's id

    @property
    def ref(self) -> str | None: ...  # what launch commands name: the path or Hub id the user gave

    def resident_model(self) -> ModelSpec | None:
        """The extra model resident beside the target (its weights, KV cache and activations), or None."""
        ...

    def compatibility(self, target: ModelSpec, engine: Engine, *, context: int | None = None) -> Compatibility:
        """The engine's verdict on running this method with `target`."""
        ...

    def settings_for(self, s: Settings) -> Settings:
        """The deployment's settings as they apply to the method's resident model (its own weight format)."""
        ...

    def step_s(self, machine: MachineLike, s: Settings) -> float:
        """Roofline time of drafting one token (one forward of the draft on the deployment context)."""
        ...

    def acceptance_prior(self, target: ModelSpec) -> acc.Acceptance:
        """Acceptance before anything is measured: published measurements for this kind of pair."""
        ...

    def launch_fields(self) -> dict[str, Any]:
        """The engines.LaunchInput fields this method sets (the draft reference, ...)."""
        ...


# build(target, the --draft reference or None, workload) -> the method, for the faces that judge one plan
Build = Callable[[ModelSpec, "str | None", "str | None"], DraftingMethod]
# self_draft(target, workload) -> (the methods of this kind that draft for `target` with no checkpoint from the
# user, one line per reason none does)
SelfDraft = Callable[[ModelSpec, "str | None"], "tuple[list[DraftingMethod], list[str]]"]


@dataclass(frozen=True)
class MethodEntry:
    """A drafting method as the registry (drafting/__init__.py METHODS) holds it: its kind, how the CLI builds
    one, and how `self_drafting` offers it (None: it needs a checkpoint from the user, as a draft model does).

    Why: adding a method is its file (the class and its ENTRY) plus one line in METHODS; nothing else
    branches on the kind.
    """

    kind: str
    build: Build
    self_draft: SelfDraft | None = None
