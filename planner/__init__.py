"""spec-planner: will a target + draft fit, pair up, and speed up generation here?

Importing `planner` is cheap (no torch, no huggingface_hub). The Python entry points:
`planner.sources.load_spec` (a model from a folder, GGUF, the HF cache/Hub or the catalog),
`planner.fits.memory.ledger` (its memory ledger), `planner.fits.verdict.fit` (one machine),
`planner.pairing.pair.pair` (compatibility per engine), `planner.plan.recommend.recommend`
(the best draft x K x KV dtype); docs/architecture.md maps the rest.
"""

from __future__ import annotations

import contextlib as _contextlib
import os as _os
import signal as _signal
import sys as _sys

if _os.path.basename(_sys.argv[0] if _sys.argv else "") in ("planner", "spec-planner"):
    # The console script: Ctrl-C while the CLI is still importing ends quietly with 130, not a
    # KeyboardInterrupt traceback (planner/cli.py restores the default handler once the command starts).
    with _contextlib.suppress(ValueError):  # not the main thread: leave Python's handler
        _signal.signal(_signal.SIGINT, lambda *_: _os._exit(130))

from .core.errors import PlannerError
from .core.version import __version__

__all__ = ["PlannerError", "__version__"]
