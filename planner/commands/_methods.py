"""`--draft REF` as a drafting method, for the faces that take one (memory, fit).

Why not in _common.py: every command imports _common, and a drafting method pulls in pairing and
speed; `catalog`, `machines` and the other faces that take no --draft start faster without them.
"""

from __future__ import annotations

from typing import Any

from ..drafting import DraftingMethod, DraftModel
from ..sources import load_spec


def load_method(ref: str | None, **kw: Any) -> DraftingMethod | None:
    """--draft REF as a drafting method (a separate draft checkpoint), or None without --draft.

    Raises:
        PlannerError: the draft cannot be read (same forms as the target).
    """
    if not ref:
        return None
    return DraftModel(load_spec(ref, **kw), ref)
