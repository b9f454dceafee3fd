"""spec-planner: will a target + draft fit, pair up, and speed up generation here?

Importing `planner` is cheap (no torch, no huggingface_hub). The Python entry points:
`planner.sources.load_spec` (a model from a folder, GGUF, the HF cache/Hub or the catalog),
`planner.fits.memory.ledger` (its memory ledger), `planner.fits.verdict.fit` (one machine),
`planner.pairing.pair.pair` (compatibility per engine), `planner.plan.recommend.recommend`
(the best draft x K x KV dtype); docs/architecture.md maps the rest.
"""

from __future__ import annotations

from .core.errors import PlannerError
from .core.version import __version__

__all__ = ["PlannerError", "__version__"]
