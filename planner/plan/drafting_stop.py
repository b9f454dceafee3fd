"""Which drafting policy a plan is priced under: every round K, or an engine's confidence stop.

Why: llama-server stops drafting after the first draft token under --spec-draft-p-min (default 0.75,
Engine.default_stop), so a llama.cpp plan priced as "K every round" is not what the engine runs unless
the command says --spec-draft-p-min 0. A plan takes the policy the user asked for (--draft-p-min), else
the engine's default; K is then the most a round drafts (--spec-draft-n-max). Only drafts that carry a
draft probability stop on it (a draft model, an EAGLE-3 head); n-gram lookup and MTP draft K.
"""

from __future__ import annotations

from .. import engines
from ..engines.base import DRAFT_MODEL, EAGLE3
from ..speed.adaptive import Adaptive

CONFIDENCE_STOPPED = frozenset({DRAFT_MODEL, EAGLE3})


def policy_for(engine: str, kind: str, asked: Adaptive | None = None) -> Adaptive | None:
    """The confidence stop this engine applies to a `kind` draft (None: every round drafts K)."""
    if kind not in CONFIDENCE_STOPPED:
        return None
    if asked is not None:
        return asked
    default = engines.get(engine).default_stop
    return Adaptive(*default) if default is not None else None
