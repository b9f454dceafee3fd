"""Drafting methods: how tokens are drafted for a target (one file per method, protocol in base.py).

`METHODS` names each method by its kind. `plan/` and the CLI faces build them with their
constructors (`DraftModel(spec, ref)`, `Eagle3(head)`, `MtpLayers(target)`, `NgramLookup()`,
`EarlyExit(target)`), or ask `self_drafting(...)` for every method that needs no separate
checkpoint from the user: the catalogued EAGLE-3 heads of the target, its own MTP layers,
n-gram lookup and early exit, kept to what the engine runs (the rest is named, with the
engine's reason, in `refused`).
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import engines
from ..core.errors import UsageError
from ..core.spec import ModelSpec
from ..engines import Engine
from . import draft_model, eagle3, early_exit, mtp, ngram
from .base import Compatibility, DraftingMethod, MethodEntry
from .draft_model import KIND as DRAFT_MODEL
from .draft_model import DraftModel
from .eagle3 import KIND as EAGLE3
from .eagle3 import Eagle3
from .early_exit import KIND as EARLY_EXIT
from .early_exit import EarlyExit
from .mtp import KIND as MTP
from .mtp import MtpLayers
from .ngram import KIND as NGRAM
from .ngram import NgramLookup, variant_name

# The registry: kind -> its entry (how the CLI builds one, how self_drafting offers it). Adding a method is its
# file (a class implementing DraftingMethod and an ENTRY) and one line here; the order is the order offered.
METHODS: dict[str, MethodEntry] = {e.kind: e for e in (draft_model.ENTRY, eagle3.ENTRY, mtp.ENTRY, ngram.ENTRY,
                                                       early_exit.ENTRY)}


def ngram_variants() -> tuple[str, ...]:
    """Every engine's own n-gram drafters as --method spells them ('ngram_mod'), each once."""
    return tuple(dict.fromkeys(v.replace("-", "_") for e in engines.all_engines() for v in e.ngram_variants))


def self_drafting(target: ModelSpec, engine: Engine, *, workload: str | None = None,
                  kinds: Sequence[str] | None = None) -> tuple[list[DraftingMethod], list[str]]:
    """The methods that draft for `target` without a checkpoint from the user, and why others are left out.

    Returns:
        (methods the engine runs, one line per method it does not run or that does not apply).
    """
    e = engine
    found: list[DraftingMethod] = []
    left: list[str] = []
    for kind, entry in METHODS.items():
        if entry.self_draft is None or (kinds is not None and kind not in kinds):
            continue
        offered, why = entry.self_draft(target, workload)
        found += offered
        left += why
    for v in sorted(name for k in kinds or () if (name := variant_name(k))):  # --method ngram-mod: that variant
        if v in e.ngram_variants:
            found.append(NgramLookup(workload, variant=v))
        else:
            left.append(f"{v}: {e.name} has no n-gram drafter '{v}' (its own: {', '.join(e.ngram_variants) or 'none'})")
    runs = [m for m in found if m.kind in e.methods]
    left += [f"{m.kind}: {e.method_refusals.get(m.kind, f'{e.name} does not run it')}" for m in found
             if m.kind not in e.methods]
    return runs, list(dict.fromkeys(left))


def make_method(kind: str, target: ModelSpec, draft: str | None, *, workload: str | None = None) -> DraftingMethod:
    """One method of `kind` for `target`, for the faces that judge one plan (memory, fit, check): the
    method's own `build` (draft_model takes --draft; eagle3 --draft or the catalogued head; the rest nothing).

    Raises:
        UsageError: an unknown kind, or one its build refuses (eagle3 with no head, draft_model without --draft).
        PlannerError: a draft or head that cannot be read.
    """
    entry = METHODS.get(kind)
    if entry is None and kind in ngram_variants():
        return NgramLookup(workload, variant=variant_name(kind))
    if entry is None:
        raise UsageError(f"Cannot use --method '{kind}': expected one of {', '.join(METHODS)}.")
    return entry.build(target, draft, workload)


__all__ = [
    "DRAFT_MODEL",
    "EAGLE3",
    "EARLY_EXIT",
    "METHODS",
    "MTP",
    "NGRAM",
    "Compatibility",
    "DraftModel",
    "DraftingMethod",
    "Eagle3",
    "EarlyExit",
    "MethodEntry",
    "MtpLayers",
    "NgramLookup",
    "make_method",
    "ngram_variants",
    "self_drafting",
]
