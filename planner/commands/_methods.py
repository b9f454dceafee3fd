"""`--draft REF`, `--method` and `--workload` as drafting methods, for the faces that take them.

Why not in _common.py: every command imports _common, and a drafting method pulls in pairing and
speed; `catalog`, `machines` and the other faces that take no --draft start faster without them.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import UsageError
from ..core.spec import ModelSpec
from ..drafting import METHODS, DraftingMethod, DraftModel, make_method, ngram_variants
from ..drafting.priors import WORKLOADS
from ..sources import load_spec


def load_method(ref: str | None, *, kind: str | None = None, target: ModelSpec | None = None,
                workload: str | None = None, **kw: Any) -> DraftingMethod | None:
    """--draft REF (and --method KIND) as a drafting method, or None with neither.

    Without --method, --draft names a separate draft checkpoint; with it, drafting.make_method builds
    that kind (eagle3: --draft is the head's directory, else the target's catalogued head).

    Raises:
        UsageError: a --method that needs a --draft it was not given, or an unknown kind.
        PlannerError: the draft cannot be read (same forms as the target).
    """
    if kind is not None and target is not None:
        kinds = parse_methods(kind) or ()
        if len(kinds) != 1:
            raise UsageError(f"Cannot use --method '{kind}' here: name one method ({', '.join(METHODS)}, or an "
                             f"engine's own n-gram drafter: {', '.join(ngram_variants())}).")
        return make_method(kinds[0], target, ref, workload=workload)
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
    known = (*METHODS, *ngram_variants())  # the engines' own n-gram drafters too: ngram_mod, ngram_map_k, ...
    bad = [m for m in out if m not in known]
    if bad:
        raise UsageError(f"Cannot use --method '{bad[0]}': expected one of {', '.join(known)}.")
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


