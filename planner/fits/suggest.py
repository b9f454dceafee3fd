"""Suggest: single changes that would make a Problem fit, each with the headroom it leaves.

Its own module because each suggestion re-asks fit.py about a changed Problem (KV dtype,
shorter context, fewer sequences, a smaller draft, lighter weights, more GPUs, no draft) and
ranks the answers; the verdict (verdict.py) only calls `suggest` when the problem does not fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..core.constants import FIT_MAX_GPUS
from ..core.spec import ModelSpec
from .fit import Problem, evaluate, headroom, heads_refuse_tp
from .machine import with_overrides
from .memory import kv_format, kv_per_token
from .split import resident_tensors

# Engine facts used here live in the engine files (engines/*.py): kv_suggestion and weights_ladder
# (the suggestions' ladders).
SUGGESTION_ORDER = ("kv_dtype", "context", "batch", "draft", "weights", "gpus", "no_draft")


@dataclass(frozen=True)
class Suggestion:
    """One change on its own, and the headroom it leaves on the tightest device."""

    kind: str
    change: str
    value: str | int
    headroom_bytes: int
    fits: bool


def _suggest_kv(p: Problem) -> list[Suggestion]:
    cand = p.settings.resolved_engine.kv_suggestion
    if cand is None:
        return []
    s = p.settings
    now = kv_per_token(p.target, s)
    new_s = replace(s, kv_dtype=cand)
    if kv_per_token(p.target, new_s) >= now:
        return []
    q = replace(p, settings=new_s, draft_settings=replace(p.draft_settings or s, kv_dtype=cand))
    h = headroom(q)
    fmt = kv_format(cand, p.target.dtype, s.resolved_engine)
    return [Suggestion("kv_dtype", f"KV cache as {fmt} (--kv-dtype {cand})", cand, h, h >= 0)]


def _suggest_limits(p: Problem, mc: int, mb: int) -> list[Suggestion]:
    out = []
    s = p.settings
    if 0 < mc < s.context:
        h = min(d.headroom_bytes for d in evaluate(p, mc, s.batch))
        out.append(Suggestion("context", f"shorter context: --context {mc}", mc, h, True))
    if s.batch > 1 and 0 < mb < s.batch:
        h = min(d.headroom_bytes for d in evaluate(p, s.context, mb))
        out.append(Suggestion("batch", f"fewer sequences: --batch {mb}", mb, h, True))
    return out


def _first_fitting(cands: Sequence[tuple[str, Problem]]) -> tuple[str, int] | None:
    """The first candidate that fits, else the last one (the smallest), with its headroom."""
    last = None
    for label, q in cands:
        h = headroom(q)
        if h >= 0:
            return label, h
        last = (label, h)
    return last


def _suggest_weights(p: Problem) -> list[Suggestion]:
    s = p.settings
    now = sum(t.nbytes for t in resident_tensors(p.target, s))
    cands = []
    e = s.resolved_engine
    for scheme in e.weights_ladder:
        new_s = replace(s, weights_dtype=scheme, group_size=e.quant_group_size or s.group_size)
        if sum(t.nbytes for t in resident_tensors(p.target, new_s)) < now:
            cands.append((scheme, replace(p, settings=new_s, draft_settings=p.draft_settings or s)))
    best = _first_fitting(cands)
    if best is None:
        return []
    scheme, h = best
    return [Suggestion("weights", f"target weights as {scheme} (--weights-dtype {scheme})", scheme, h, h >= 0)]


def _suggest_draft(p: Problem, smaller: Sequence[ModelSpec]) -> list[Suggestion]:
    if p.draft is None:
        return []
    now = sum(t.nbytes for t in resident_tensors(p.draft, p.draft_settings or p.settings))
    cands = sorted((d for d in smaller if d.weights.resident_bytes < now),
                   key=lambda d: d.weights.resident_bytes, reverse=True)
    best = _first_fitting([(d.id, replace(p, draft=d)) for d in cands])
    if best is None:
        return []
    ref, h = best
    return [Suggestion("draft", f"a smaller draft: --draft {ref}", ref, h, h >= 0)]


def _suggest_gpus(p: Problem) -> list[Suggestion]:
    m, lay = p.machine, p.layout
    if m.kind != "gpu" or lay.draft_device is not None:
        return []
    grow_pp = lay.pp > 1 and lay.tp == 1
    for n in range(lay.n_devices + 1, FIT_MAX_GPUS + 1):
        if grow_pp:
            if n > p.target.n_layers:
                break
            new = replace(lay, pp=n)
        else:
            if n % lay.pp or any(heads_refuse_tp(x, n // lay.pp, p.settings.resolved_engine) for x in (p.target, p.draft) if x):
                continue  # tensor parallel must divide the attention and KV heads (the rule fit refuses with)
            new = replace(lay, tp=n // lay.pp)
        q = replace(p, machine=with_overrides(m, n_devices=max(n, m.n_devices)), layout=new)
        h = headroom(q)
        if h >= 0:
            flag = f"--pp {new.pp}" if grow_pp else f"--tp {new.tp}" + (f" --pp {new.pp}" if new.pp > 1 else "")
            return [Suggestion("gpus", f"{n} GPUs: --gpus {n} {flag}", n, h, True)]
    return []


def _suggest_no_draft(p: Problem) -> list[Suggestion]:
    if p.draft is None:
        return []
    h = headroom(replace(p, draft=None, draft_settings=None, layout=replace(p.layout, draft_device=None)))
    return [Suggestion("no_draft", "no draft (plain decoding)", "", h, h >= 0)]


def suggest(p: Problem, mc: int, mb: int, smaller_drafts: Sequence[ModelSpec] = ()) -> tuple[Suggestion, ...]:
    """Single changes ranked: those that fit first, then in SUGGESTION_ORDER (least intrusive first)."""
    out = [*_suggest_kv(p), *_suggest_limits(p, mc, mb), *_suggest_draft(p, smaller_drafts),
           *_suggest_weights(p), *_suggest_gpus(p), *_suggest_no_draft(p)]
    return tuple(sorted(out, key=lambda x: (not x.fits, SUGGESTION_ORDER.index(x.kind))))
