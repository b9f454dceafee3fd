"""Verdict: the whole answer for one Problem on one machine (FitResult, fit()).

Its own module because it composes the others: the per-device ledger and the largest context
and batch (fit.py), the term that dominates the tightest device, the one-device ledger as
`planner memory` shows it (memory.py + budget.py), and the single changes (suggest.py) and the
cheapest combinations (search.py) when it does not fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..core.spec import ModelSpec
from .budget import overhead_for
from .fit import DeviceFit, Problem, evaluate, fits, max_batch, max_context
from .memory import Ledger, ledger
from .search import Combination, search
from .suggest import Suggestion, suggest


@dataclass(frozen=True)
class FitResult:
    """Verdict, per-device ledger, limits, what dominates, and the fixes when it does not fit."""

    problem: Problem
    devices: tuple[DeviceFit, ...]
    max_context: int
    max_context_limit: str  # "memory" | "model" (the target's max context fits)
    max_batch: int
    dominant: dict
    suggestions: tuple[Suggestion, ...]
    ledger: Ledger
    combinations: tuple[Combination, ...] = ()  # changes together that fit, cheapest first (search.py)

    @property
    def fits(self) -> bool:
        return all(d.headroom_bytes >= 0 for d in self.devices)

    @property
    def headroom_bytes(self) -> int:
        return min(d.headroom_bytes for d in self.devices)


def dominant(devs: Sequence[DeviceFit]) -> dict:
    """The largest single term on the tightest device: {device, role, term, bytes, share}."""
    d = min(devs, key=lambda x: x.headroom_bytes)
    terms = [("runtime", "overhead", d.overhead_bytes), ("runtime", "communication buffers", d.comm_bytes)]
    for s in d.shares:
        terms += [(s.role, "weights", s.weights_bytes), (s.role, "KV cache", s.kv_cache_bytes),
                  (s.role, "activations", s.activation_bytes)]
    role, term, n = max(terms, key=lambda x: x[2])
    return {"device": d.budget.index, "role": role, "term": term, "bytes": n,
            "share": n / d.used_bytes if d.used_bytes else 0.0}


def single_device_ledger(p: Problem) -> Ledger:
    """memory.ledger() of the pair (one device's view, as `planner memory`), with this machine's overhead."""
    overhead, src = overhead_for(p.machine.kind, p.settings)
    led = ledger(p.target, p.settings, p.draft)
    return replace(led, overhead_bytes=overhead, overhead_source=src)


def fit(p: Problem, *, smaller_drafts: Sequence[ModelSpec] = ()) -> FitResult:
    """Verdict for `p` with the per-device split, the largest context and batch, and suggestions.

    Args:
        p: target (+ draft), machine, settings, layout, utilisation.
        smaller_drafts: candidate drafts for the "smaller draft" suggestion.

    Returns:
        The FitResult; `suggestions` and `combinations` are empty when it fits.

    Raises:
        UsageError: a layout the machine cannot hold, or bad settings.

    Example:
        >>> from planner.sources import load_spec
        >>> from planner.fits.fit import Problem
        >>> from planner.fits.machine_lookup import get_machine
        >>> from planner.fits.memory import Settings
        >>> r = fit(Problem(load_spec("llama-3.1-8b"), get_machine("rtx-4090"), Settings(resolved_engine=engines.get("llama.cpp"))))
        >>> r.fits, r.max_context_limit
        (True, 'memory')
    """
    devs = evaluate(p, p.settings.context, p.settings.batch)
    mc, limit = max_context(p)
    mb = max_batch(p)
    ok = fits(devs)
    sugg = () if ok else suggest(p, mc, mb, smaller_drafts)
    return FitResult(problem=p, devices=devs, max_context=mc, max_context_limit=limit, max_batch=mb,
                     dominant=dominant(devs), suggestions=sugg, ledger=single_device_ledger(p),
                     combinations=() if ok else search(p))

