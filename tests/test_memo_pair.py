"""core/memo.per_pair and what uses it: a target-and-draft value computed once per report, not per machine."""

from __future__ import annotations

from planner import engines
from planner.core import memo
from planner.drafting.draft_model import DraftModel
from planner.pairing import pair as pairing
from planner.plan import candidates
from planner.sources import load_spec


class Box:
    def __init__(self, v: int) -> None:
        self.v = v


def test_per_pair_is_by_both_identities_and_clears() -> None:
    calls: list[tuple[int, int]] = []
    a, b1, b2 = Box(1), Box(2), Box(2)  # b1 and b2 equal in value, two objects

    def value(x: Box, y: Box) -> int:
        calls.append((x.v, y.v))
        return x.v * 10 + y.v
    assert memo.per_pair(a, b1, "k", lambda: value(a, b1)) == 12
    assert memo.per_pair(a, b1, "k", lambda: value(a, b1)) == 12
    assert memo.per_pair(a, b2, "k", lambda: value(a, b2)) == 12
    assert memo.per_pair(a, b1, "other", lambda: value(a, b1)) == 12
    assert len(calls) == 3  # b2 is another object, "other" another key; the repeat is not computed
    memo.clear()
    memo.per_pair(a, b1, "k", lambda: value(a, b1))
    assert len(calls) == 4


def test_a_drafts_pairing_is_computed_once_per_target_and_context(monkeypatch) -> None:
    target, draft = load_spec("llama-3.1-8b"), load_spec("llama-3.2-1b")
    seen = []
    real = pairing.pair

    def counting(*a, **k):
        seen.append(k.get("context"))
        return real(*a, **k)
    monkeypatch.setattr(pairing, "pair", counting)
    dm = DraftModel(spec=draft, ref="llama-3.2-1b")
    for name in ("vllm", "llama.cpp", "vllm"):
        c = dm.compatibility(target, engines.get(name), context=4096)
        assert c.verdict == real(target, draft, context=4096).verdicts[name]
    dm.compatibility(target, engines.get("vllm"), context=8192)
    assert seen == [4096, 8192]


def test_catalog_candidates_are_found_once_per_target(monkeypatch) -> None:
    target = load_spec("llama-3.1-8b")
    fam, _ = candidates.tokenizer_family(target)
    looked = []
    real = candidates.load_spec
    monkeypatch.setattr(candidates, "load_spec", lambda ref: looked.append(ref) or real(ref))
    first = candidates.catalog_candidates(target, fam)
    again = candidates.catalog_candidates(target, fam)
    assert [c.ref for c in first] == [c.ref for c in again] and first
    assert len(looked) == len(set(looked))  # each family member loaded once, not once per call
    assert all(c.spec.weights.resident_bytes <= target.weights.resident_bytes * candidates.MAX_DRAFT_SHARE
               for c in first)
