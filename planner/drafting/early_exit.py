"""Early-exit self-speculation (transformers `assistant_early_exit`, LayerSkip checkpoints): the
target drafts with its own first L layers and its output head, then verifies with all of them.

Resident: no second copy of the weights; the drafting pass keeps its own KV cache for the L layers
(transformers' EarlyExitCandidateGenerator runs the model as its own assistant, with the
assistant's cache, generation/candidate_generator.py:1157-1200), so the resident model is those L
layers' cache and activations, with no weight bytes. Compatible only where the engine has it
(transformers; Engine.methods). Cost per drafted token: a forward of the first L layers plus the
lm_head. Acceptance: high only for checkpoints trained to exit early (LayerSkip), assumed and
labelled uncertain either way (priors.py); L defaults to a quarter of the layers, as transformers'
own example runs facebook/layerskip-llama3.2-1B (16 layers) with assistant_early_exit=4.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..core.spec import ModelSpec, WeightInventory
from ..engines.base import EARLY_EXIT, Engine
from ..fits.memory import Settings
from ..speed import acceptance as acc
from ..speed import roofline
from ..speed.roofline import MachineLike
from . import priors
from .base import Compatibility, MethodEntry, engine_support

KIND = EARLY_EXIT
EXIT_SHARE = 4  # L = n_layers // 4 (transformers' LayerSkip example: layer 4 of 16)


def exit_layer(target: ModelSpec) -> int:
    """The default exit layer: a quarter of the decoder, at least 1."""
    return max(1, target.n_layers // EXIT_SHARE)


def layerskip(target: ModelSpec) -> bool:
    """A checkpoint trained for early exit (LayerSkip recipe): its name says so."""
    return "layerskip" in target.id.lower()


def first_layers(target: ModelSpec, n: int, *, with_weights: bool) -> ModelSpec:
    """The target cut after layer n: its first n layers (+ head, embedding, norms when `with_weights`)."""
    kept = tuple(t for t in target.weights.tensors if t.layer is None or t.layer < n) if with_weights else ()
    params = sum(t.numel for t in kept)
    inv = WeightInventory(tensors=kept, source=target.weights.source, params_total=params, params_active=params,
                          notes=(f"first {n} of {target.n_layers} layers",))
    return replace(target, id=f"{target.id} [:{n}]", layers=target.layers[:n], weights=inv, mtp=None,
                   provenance={"weights": f"the first {n} layers of {target.id}"})


@dataclass(frozen=True)
class EarlyExit:
    """The target's first `layer` layers draft (None: exit_layer(target))."""

    target: ModelSpec
    layer: int | None = None
    kind: str = KIND

    @property
    def exit_at(self) -> int:
        return self.layer or exit_layer(self.target)

    @property
    def label(self) -> str:
        return f"{self.target.id} early exit @{self.exit_at}"

    @property
    def ref(self) -> str | None:
        return None

    def resident_model(self) -> ModelSpec:
        return first_layers(self.target, self.exit_at, with_weights=False)

    def compatibility(self, target: ModelSpec, engine: Engine, *, context: int | None = None) -> Compatibility:
        return engine_support(engine, KIND)

    def settings_for(self, s: Settings) -> Settings:
        return s

    def step_s(self, machine: MachineLike, s: Settings) -> float:
        spec = first_layers(self.target, self.exit_at, with_weights=True)
        return roofline.forward_cost(spec, machine, n=1, context=s.context, settings=s).seconds

    def acceptance_prior(self, target: ModelSpec) -> acc.Acceptance:
        return priors.prior(KIND, variant="layerskip" if layerskip(target) else None)

    def launch_fields(self) -> dict[str, Any]:
        return {"draft": None, "method": KIND, "exit_layer": self.exit_at, "draft_weights_quant": None}


ENTRY = MethodEntry(KIND, lambda target, draft, workload: EarlyExit(target),
                    lambda target, workload: ([EarlyExit(target)], []))
