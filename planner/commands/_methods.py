"""`--draft REF`, `--method` and `--workload` as drafting methods, for the faces that take them.

Why not in _common.py: every command imports _common, and a drafting method pulls in pairing and
speed; `catalog`, `machines` and the other faces that take no --draft start faster without them.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import UsageError
from ..core.spec import ModelSpec
from ..drafting import (
    DRAFT_MODEL,
    EAGLE3,
    EARLY_EXIT,
    METHODS,
    MTP,
    NGRAM,
    DraftingMethod,
    DraftModel,
    Eagle3,
    EarlyExit,
    MtpLayers,
    NgramLookup,
)
from ..drafting import heads as heads_catalog
from ..drafting.priors import WORKLOADS
from ..sources import load_spec


def load_method(ref: str | None, **kw: Any) -> DraftingMethod | None:
    """--draft REF as a drafting method (a separate draft checkpoint), or None without --draft.

    Raises:
        PlannerError: the draft cannot be read (same forms as the target).
    """
    if not ref:
        return None
    return DraftModel(load_spec(ref, **kw), ref)


def parse_methods(text: str | None) -> tuple[str, ...] | None:
    """--method 'eagle3,ngram' -> ('eagle3', 'ngram'); None or '' -> None (all).

    Raises:
        UsageError: an unknown method name.
    """
    if not text:
        return None
    out = tuple(dict.fromkeys(m.strip().lower().replace("-", "_") for m in text.split(",") if m.strip()))
    bad = [m for m in out if m not in METHODS]
    if bad:
        raise UsageError(f"Cannot use --method '{bad[0]}': expected one of {', '.join(METHODS)}.")
    return out


def parse_workload(text: str) -> str:
    """--workload chat | code | reasoning.

    Raises:
        UsageError: another value.
    """
    w = text.strip().lower()
    if w not in WORKLOADS:
        raise UsageError(f"Cannot use --workload '{text}': expected one of {', '.join(WORKLOADS)}.")
    return w


def method_for(kind: str, target: ModelSpec, draft: str | None, *, workload: str | None = None,
               **kw: Any) -> DraftingMethod | None:
    """One `--method` for the faces that size one plan (memory, fit): the resident part it adds.

    draft_model takes --draft; eagle3 takes --draft (a head directory) or the target's catalogued head;
    mtp, ngram and early_exit take nothing.

    Raises:
        UsageError: eagle3 with no head given or catalogued; draft_model without --draft.
        PlannerError: a draft or head that cannot be read.
    """
    if kind == DRAFT_MODEL:
        if not draft:
            raise UsageError("Cannot use --method draft_model without --draft: name the draft checkpoint.")
        return load_method(draft, **kw)
    if kind == EAGLE3:
        if draft:
            return Eagle3(heads_catalog.from_dir(draft, targets=(target.id,)), workload)
        found = heads_catalog.for_target(target)
        if not found:
            raise UsageError(f"Cannot use --method eagle3 for '{target.id}': no EAGLE-3 head is catalogued for it "
                             f"(catalogs/heads). Pass --draft HEAD_DIR (config.json + safetensors).")
        return Eagle3(found[0], workload)
    if kind == MTP:
        return MtpLayers(target, workload)
    if kind == NGRAM:
        return NgramLookup(workload)
    if kind == EARLY_EXIT:
        return EarlyExit(target)
    raise UsageError(f"Cannot use --method '{kind}': expected one of {', '.join(METHODS)}.")
