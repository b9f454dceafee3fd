"""What a recommendation is asked: the target and its drafts, where it runs, the load, how plans are priced.

Why four small objects instead of one 22-parameter function: each answers one question a caller has
already settled at the edge (the CLI face, the machine-first report, a policy's scenario), and travels
whole into `plan.recommend.recommend`; a caller that re-plans changes one of them (`dataclasses.replace`)
instead of threading every keyword again (commands/recommend.py plans once more with the cheapest change
that fits). The engine arrives resolved (`Where.engine` is an `Engine`, never a name to look up again).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..core.constants import DEFAULT_CONTEXT, DEFAULT_MAX_K
from ..core.spec import ModelSpec
from ..drafting import DraftingMethod
from ..engines import Engine
from ..fits import fit
from ..fits.machine import Machine
from ..fits.memory import Settings
from ..speed.acceptance import Acceptance
from ..speed.adaptive import Adaptive
from ..speed.model import Costs

# (method, settings) -> Costs: a probe profile's measured costs (recommend's default is the roofline)
CostsFor = Callable[[DraftingMethod, Settings], Costs]


@dataclass(frozen=True)
class Target:
    """What to plan: the target model, the drafts and drafting kinds to consider, the weight formats.

    candidates: drafting methods to consider (None: catalog models sharing the target's tokenizer, and the
        target's own heads, MTP, n-gram, early exit); methods: drafting kinds to keep (None: every kind; with
        candidates, only those drafts). weights_dtype re-sizes both models' weights (int4, q4_k, fp8, ...) as
        `planner memory` does; a method's own weights_dtype, or draft_weights_dtype, wins for its model.
    """

    spec: ModelSpec
    ref: str  # what the user typed, for launch commands
    candidates: Sequence[DraftingMethod] | None = None
    methods: Sequence[str] | None = None
    weights_dtype: str | None = None
    draft_weights_dtype: str | None = None


@dataclass(frozen=True)
class Where:
    """Where it runs: the machine, the resolved engine, the tp/pp layout (None: the engine's default), the
    engine's memory utilisation and the KV cache types to try (None: the engine's kv_options)."""

    machine: Machine
    engine: Engine
    layout: fit.Layout | None = None
    utilization: float | None = None
    kv_dtypes: Sequence[str] | None = None


@dataclass(frozen=True)
class Workload:
    """The load: the deployment context, the concurrency that sizes memory and ranks the plans, a `--batch`
    list to price every usable plan at (roofline costs only), the prompts (chat | code | reasoning, for
    the acceptance priors of n-gram lookup and others) and the sampling temperature."""

    context: int = DEFAULT_CONTEXT
    batch: int = 1
    batches: Sequence[int] | None = None
    prompts: str | None = None
    temperature: float = 0.0


@dataclass(frozen=True)
class Pricing:
    """How plans are priced and judged: costs (None: the roofline of the machine), acceptance (--acceptance;
    method label -> probe-measured), the largest K considered, a K every plan is judged at (the one you
    deploy; None: the best K) and a confidence stop (llama.cpp --draft-p-min: K is then the most a round drafts)."""

    costs_for: CostsFor | None = None
    given_acceptance: Acceptance | None = None
    measured_acceptance: Mapping[str, Acceptance] | None = None
    k_max: int = DEFAULT_MAX_K
    k_fixed: int | None = None
    adaptive: Adaptive | None = None
