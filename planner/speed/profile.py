"""Machine profiles: what `planner probe` measured (cost curves, acceptance, diagnosis), as data.

Why torch-free and apart from its file format and its diagnosis: `planner probe` writes a
profile once, on the machine that matters; `recommend`, `check`, `report` and the speed model
read it anywhere, without torch. These frozen dataclasses are what crosses those modules;
speed/profile_file.py reads and writes them as JSON, speed/diagnosis.py explains them.

Speed model terms (docs/speed.md "The model"): t_v(n) is one target forward of n new tokens of one
sequence over a KV prefix of the deployment context, t_d one draft step, t_o the per-round overhead
(sampling, comparison, cache rollback). One round with K drafted tokens costs
K*t_d + t_v(K+1) + t_o and yields E(K) = (1 - alpha^(K+1)) / (1 - alpha) tokens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

SCHEMA_VERSION = 1
SEVERITIES = ("ok", "info", "warning", "problem")


@dataclass(frozen=True)
class ModelCurve:
    """Measured cost of one model on one machine.

    `verify_s[n-1]` = t_v(n), seconds for one forward of n new tokens of one sequence at the
    profile's context; `step_s` = one decode step (t_v(1) for a target, t_d for a draft).
    `method`: synthetic (all layers instantiated), synthetic-extrapolated (a few layers timed,
    scaled by layer count), real (transformers, real weights) or imported:<tool>.
    `measured_n` lists the n actually measured when the others were interpolated (empty = all).
    """

    id: str
    verify_s: tuple[float, ...]
    step_s: float
    method: str
    measured_n: tuple[int, ...] = ()
    rollback_s: float = 0.0
    layers_timed: int | None = None
    layers_total: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def ratios(self) -> tuple[float, ...]:
        """t_v(n) / t_v(1) for n = 1..len(verify_s)."""
        return verify_ratios(self.verify_s)


@dataclass(frozen=True)
class MeasuredAcceptance:
    """Measured acceptance of a draft against a target (teacher-forced, docs/probe.md "What it measures").

    `alpha` = mean over positions of sum_x min(p(x), q(x)) at `temperature` (Leviathan et al.
    2023, = 1 - total variation); `greedy_match` = P(argmax q = argmax p); `per_position[k-1]`
    = a_k, the chance that drafted token k is accepted given tokens 1..k-1 were. The spread is
    over prompts (per-prompt alpha: std, min, max) and per prompt kind.
    """

    alpha: float
    greedy_match: float
    per_position: tuple[float, ...]
    temperature: float
    prompts: int
    positions: int
    alpha_std: float = 0.0
    alpha_min: float = 0.0
    alpha_max: float = 0.0
    by_kind: Mapping[str, float] = field(default_factory=dict)
    source: str = "measured"

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_kind", MappingProxyType(dict(self.by_kind)))


@dataclass(frozen=True)
class Finding:
    """One diagnosis: a stable `code`, a severity (ok/info/warning/problem), a sentence, the ratio."""

    code: str
    severity: str
    message: str
    value: float | None = None


@dataclass(frozen=True)
class Profile:
    """A machine profile: what `planner probe` measured and what later commands read."""

    device: str
    device_name: str
    backend: str
    dtype: str
    context: int
    target: ModelCurve
    draft: ModelCurve | None
    overhead_s: float
    acceptance: MeasuredAcceptance | None = None
    diagnosis: tuple[Finding, ...] = ()
    overhead_parts: Mapping[str, float] = field(default_factory=dict)
    versions: Mapping[str, str] = field(default_factory=dict)
    timestamp: str = ""
    budget_s: float | None = None
    elapsed_s: float | None = None
    notes: tuple[str, ...] = ()
    schema: int = SCHEMA_VERSION
    unreliable: str | None = None  # why the probe's timings cannot be trusted (probe/sanity.py), None: they can

    def __post_init__(self) -> None:
        object.__setattr__(self, "overhead_parts", MappingProxyType(dict(self.overhead_parts)))
        object.__setattr__(self, "versions", MappingProxyType(dict(self.versions)))

    @property
    def max_k(self) -> int:
        """Largest K the target curve covers (t_v(K+1) measured)."""
        return len(self.target.verify_s) - 1


def verify_ratios(verify_s: Sequence[float]) -> tuple[float, ...]:
    """t_v(n) / t_v(1) for each n: 1.0 everywhere is perfectly batch-parallel verification."""
    return tuple(t / verify_s[0] for t in verify_s)
