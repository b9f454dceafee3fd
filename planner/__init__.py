"""spec-planner: will a target + draft fit, pair up, and speed up generation here?

The public API is cheap to import (no torch, no huggingface_hub at import time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.errors import PlannerError

__version__ = "0.1.0"
__all__ = ["PlannerError", "__version__", "ledger", "load_spec"]

if TYPE_CHECKING:
    from .fits.memory import ledger
    from .sources import load_spec


def __getattr__(name: str) -> Any:
    # Lazy re-exports keep `import planner` fast.
    if name == "load_spec":
        from .sources import load_spec

        return load_spec
    if name == "ledger":
        from .fits.memory import ledger

        return ledger
    raise AttributeError(name)
