"""What `planner bench` needs installed, checked all at once before anything loads.

Why: missing packages once surfaced one per run (torch, then transformers after the first fix), each
after seconds of work (#31 item 10). importlib.util.find_spec looks without importing, so the check
costs nothing and names every missing package in one error with the pinned install line.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence

from ..core.constants import REAL_EXTRA_HINT
from ..core.errors import UsageError

# A local bench loads both models with transformers on torch (bench/models.py, bench/decode.py).
LOCAL_BENCH = ("torch", "transformers")


def missing(packages: Sequence[str], *, find: Callable[[str], object] = importlib.util.find_spec) -> list[str]:
    """The packages of `packages` that are not importable here, in their order."""
    return [p for p in packages if find(p) is None]


def require(packages: Sequence[str] = LOCAL_BENCH, *, what: str = "the bench",
            find: Callable[[str], object] = importlib.util.find_spec) -> None:
    """Raise one UsageError naming every missing package and the one install line that brings them all.

    Raises:
        UsageError: at least one of `packages` is not installed.
    """
    gone = missing(packages, find=find)
    if gone:
        raise UsageError(f"Cannot run {what}: {', '.join(gone)} {'is' if len(gone) == 1 else 'are'} not installed "
                         f"(expected {', '.join(packages)}). Install all it needs at once: '{REAL_EXTRA_HINT}'.")
