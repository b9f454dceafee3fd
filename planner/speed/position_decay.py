"""MTP layers reused past their depth: the acceptance per position falls, as a published run measured.

Why a module: an MTP checkpoint trains one layer per future position (`num_nextn_predict_layers`,
`mtp_num_hidden_layers`); an engine asked for K drafts beyond that runs the last layer again on its own
output (vLLM: "Enabling num_speculative_tokens > 1 will run multiple times of forward on same MTP layer,
which may result in lower acceptance rate", vllm/config/speculative.py, MTP branch; llama.cpp draft-mtp
drafts n_max tokens with the one layer). One constant alpha for every position then over-states the
far positions and the best K climbs with the verify curve; a per-position decay makes it interior.

The model (conditional acceptance a_i = P(draft i accepted | drafts 1..i-1 accepted)):

    a_i = alpha                            i <= depth   (each trained layer at its own position)
    a_i = alpha * d ** (i - depth)         i >  depth   (the last layer reused i - depth times)

`d` is catalogs/calibration any/any/mtp.reused_layer_decay: the median over positions of the per-step
factor (a_i / a_1) ** (1 / (i - 1)) of one published per-position run of a one-layer MTP head (Qwen3.6-27B,
vLLM 0.20.1, K = 6, club-3090 issue #105). One run: the figure is low confidence, and the plan says so.
Published runs at K past their depth are converted to alpha under the same model (`alpha_at`), so the
decay is not counted twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.calibration import ANY, get
from ..core.errors import UsageError
from .rounds import bisect_increasing, expected_accepted

TERM = "mtp.reused_layer_decay"


@dataclass(frozen=True)
class PositionDecay:
    """How acceptance falls past the trained MTP layers: `depth` positions keep alpha, each further one
    multiplies it by `factor` once more; `source` says where the factor comes from."""

    depth: int
    factor: float
    source: str

    def __post_init__(self) -> None:
        if self.depth < 1 or not 0.0 < self.factor <= 1.0:
            raise UsageError(f"Cannot use an MTP position decay of depth {self.depth}, factor {self.factor}: "
                             f"expected depth >= 1 and 0 < factor <= 1.")

    def rates(self, alpha: float, k: int) -> tuple[float, ...]:
        """Conditional acceptance a_1..a_K.

        # a_i = alpha (i <= depth); alpha * d**(i - depth) (i > depth)
        """
        return tuple(alpha * self.factor ** max(0, i - self.depth) for i in range(1, k + 1))

    def describe(self) -> str:
        return (f"positions past the {self.depth} MTP layer(s) accept {self.factor:g}x the one before "
                f"({self.source})")


def reused_layer(depth: int) -> PositionDecay:
    """The catalogued decay for a head of `depth` trained MTP layers."""
    e = get(ANY, ANY, TERM)
    return PositionDecay(depth=depth, factor=e.value, source=e.source)


def rates(alpha: float, decay: PositionDecay, k: int) -> tuple[float, ...]:
    """Conditional acceptance a_1..a_K under the decay (PositionDecay.rates)."""
    return decay.rates(alpha, k)


def expected(alpha: float, decay: PositionDecay, k: int) -> float:
    """Tokens per round E(K) with the decayed rates: 1 + sum_{j=1..K} prod_{i<=j} a_i."""
    return expected_accepted(rates(alpha, decay, k), k)


def alpha_at(tokens: float, k: int, decay: PositionDecay) -> float:
    """The first-position alpha at which E(K) under the decay equals `tokens` (bonus included).

    # E(K, alpha) rises monotonically in alpha: bisection; a value past what alpha = 1 gives (the decay
    # caps E below K+1) returns 1.
    """
    if k < 1 or tokens < 1.0:
        raise UsageError(f"Cannot invert E(K) = {tokens} at K = {k}: expected K >= 1 and E >= 1.")
    if tokens >= expected(1.0, decay, k):
        return 1.0
    return bisect_increasing(lambda a: expected(a, decay, k), tokens)
