"""Which drafting policy a plan is priced under: every round K, or an engine's confidence stop.

Why: llama-server can stop drafting after the first draft token under --spec-draft-p-min; whether
that beats drafting K every round depends on the costs (a long draft past Metal's 8-token switch
costs mul_mm; a stop avoids wasted drafts where the draft is unsure, but its short rounds land on
the verify sizes k-quants run without mul_mv_ext). A plan takes the policy the user asked for
(--draft-p-min, or --k alone: every round K); otherwise the engine's suggested stop
(Engine.default_stop: llama-server's p-min 0.75, the setting the published llama-server sweeps ran
and the model is calibrated on), with every round drafting K priced beside it and named in a note
when it prices better. Only drafts that carry a draft probability stop on it (a draft model, an
EAGLE-3 head); n-gram lookup and MTP draft K.
"""

from __future__ import annotations

from ..engines.base import DRAFT_MODEL, EAGLE3, Engine
from ..speed.adaptive import Adaptive

CONFIDENCE_STOPPED = frozenset({DRAFT_MODEL, EAGLE3})


def policies_for(engine: Engine, kind: str, asked: Adaptive | None = None) -> tuple[Adaptive | None, ...]:
    """The drafting policies to price for a `kind` draft on `engine`, the plan's first (None: every round K)."""
    if kind not in CONFIDENCE_STOPPED:
        return (None,)
    if asked is not None:
        return (asked,)
    default = engine.default_stop
    return (None,) if default is None else (Adaptive(*default), None)
