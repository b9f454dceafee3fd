"""Drafting methods: how tokens are drafted for a target (one file per method, protocol in base.py).

`METHODS` names each method by its kind; `plan/` and the CLI faces build methods with
`draft_model(spec, ref)` (a separate checkpoint) and later with the other kinds' constructors.
"""

from __future__ import annotations

from .base import Compatibility, DraftingMethod
from .draft_model import KIND as DRAFT_MODEL
from .draft_model import DraftModel

METHODS: dict[str, type] = {DRAFT_MODEL: DraftModel}

__all__ = ["DRAFT_MODEL", "METHODS", "Compatibility", "DraftModel", "DraftingMethod"]
