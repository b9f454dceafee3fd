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
from ..engines.base import METHOD_KINDS
from ..sources import load_spec
from . import heads
from .base import Compatibility, DraftingMethod
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

METHODS: dict[str, type] = {DRAFT_MODEL: DraftModel, EAGLE3: Eagle3, MTP: MtpLayers, NGRAM: NgramLookup,
                            EARLY_EXIT: EarlyExit}


def ngram_variants() -> tuple[str, ...]:
    """Every engine's own n-gram drafters as --method spells them ('ngram_mod'), each once."""
    return tuple(dict.fromkeys(v.replace("-", "_") for e in engines.all_engines() for v in e.ngram_variants))


def self_drafting(target: ModelSpec, engine: str, *, workload: str | None = None,
                  kinds: Sequence[str] | None = None) -> tuple[list[DraftingMethod], list[str]]:
    """The methods that draft for `target` without a checkpoint from the user, and why others are left out.

    Returns:
        (methods the engine runs, one line per method it does not run or that does not apply).
    """
    wanted = set(kinds) if kinds is not None else set(METHOD_KINDS) - {DRAFT_MODEL}
    e = engines.get(engine)
    found: list[DraftingMethod] = []
    left: list[str] = []
    if EAGLE3 in wanted:
        catalogued = heads.for_target(target)
        found += [Eagle3(h, workload) for h in catalogued]
        if not catalogued:
            left.append(f"{EAGLE3}: no catalogued EAGLE-3 head for {target.id} (catalogs/heads)")
    if MTP in wanted:
        if target.mtp is not None:
            found.append(MtpLayers(target, workload))
        else:
            left.append(f"{MTP}: {target.id} ships no MTP layers")
    if NGRAM in wanted:
        found.append(NgramLookup(workload))
    for v in sorted(name for k in wanted if (name := variant_name(k))):  # --method ngram-mod: that variant
        if v in e.ngram_variants:
            found.append(NgramLookup(workload, variant=v))
        else:
            left.append(f"{v}: {e.name} has no n-gram drafter '{v}' (its own: {', '.join(e.ngram_variants) or 'none'})")
    if EARLY_EXIT in wanted:
        found.append(EarlyExit(target))
    runs = [m for m in found if m.kind in e.methods]
    left += [f"{m.kind}: {e.method_refusals.get(m.kind, f'{e.name} does not run it')}" for m in found
             if m.kind not in e.methods]
    return runs, list(dict.fromkeys(left))


def make_method(kind: str, target: ModelSpec, draft: str | None, *, workload: str | None = None) -> DraftingMethod:
    """One method of `kind` for `target`, for the faces that judge one plan (memory, fit, check).

    draft_model takes --draft; eagle3 takes --draft (a catalogued head's repo or a head directory: config.json
    + safetensors), else the target's catalogued head;
    mtp, ngram and early_exit take nothing.

    Raises:
        UsageError: eagle3 with no head given or catalogued; draft_model without --draft.
        PlannerError: a draft or head that cannot be read.
    """
    if kind == DRAFT_MODEL:
        if not draft:
            raise UsageError("Cannot use --method draft_model without --draft: name the draft checkpoint.")
        return DraftModel(load_spec(draft), draft)
    if kind == EAGLE3:
        known = {e.id: e for e in heads.entries()}
        if draft in known:
            return Eagle3(known[draft].head(), workload)
        if draft:
            return Eagle3(heads.from_dir(draft, targets=(target.id,)), workload)
        found = heads.for_target(target)
        if not found:
            raise UsageError(f"Cannot use --method eagle3 for '{target.id}': no EAGLE-3 head is catalogued for it "
                             f"(catalogs/heads). Pass --draft HEAD_DIR (config.json + safetensors).")
        return Eagle3(found[0], workload)
    if kind == MTP:
        return MtpLayers(target, workload)
    if kind == NGRAM:
        return NgramLookup(workload)
    if kind in ngram_variants():
        return NgramLookup(workload, variant=variant_name(kind))
    if kind == EARLY_EXIT:
        return EarlyExit(target)
    raise UsageError(f"Cannot use --method '{kind}': expected one of {', '.join(METHODS)}.")


__all__ = ["DRAFT_MODEL", "EAGLE3", "EARLY_EXIT", "METHODS", "MTP", "NGRAM", "Compatibility", "DraftModel",
           "DraftingMethod", "Eagle3", "EarlyExit", "MtpLayers", "NgramLookup", "make_method", "ngram_variants",
           "self_drafting"]
