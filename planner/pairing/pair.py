"""Target x draft -> PairReport: can each engine run the plain draft algorithm, and if not, what then.

Why per engine: each engine checks something different, and none says why it refused.
llama.cpp compares vocab type, BOS/EOS, n_vocab and every token's text, and reports any
failure as "draft model vocab type must match target model"; vLLM and transformers compare
only config.json vocab_size (so a same-tokenizer Qwen2.5 pair whose embeddings are padded
differently is refused, while two unrelated tokenizers of equal size pass); mlx-lm compares
the tokenizer's base vocabulary size. We name the rule that fails, the fallback that applies
(TLI / UAG) and what it costs, from published measurements (catalogs/heterogeneous_vocab.json).

This module's one job is the report: it asks each engine for its verdict and composes the
tokenizer comparison (vocab.py), the fallbacks (heterogeneous.py) and the advice (advice.py)
into a PairReport and its `--json` schema, so callers need one entry point.

Pure computation over ModelSpec + TokenizerFingerprint (sources/tokenizer.py builds those).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .. import engines
from ..core.spec import ModelSpec, TokenizerFingerprint
from ..engines.base import Side, Verdict, weakest_basis
from .advice import (
    Advice,
    context_advice,
    family_match,
    hetero_advice,
    lineage_advice,
    moe_advice,
    size_advice,
)
from .heterogeneous import Heterogeneous, heterogeneous_for
from .vocab import Overlap, compare_tokenizers, vocab_overlap


@dataclass(frozen=True)
class PairReport:
    target: str
    draft: str
    verdicts: Mapping[str, Verdict]
    same_tokenizer: bool | None
    overlap: Overlap | None
    family_match: bool
    differences: tuple[str, ...]
    advice: tuple[Advice, ...]
    heterogeneous: Heterogeneous | None
    basis: str  # weakest fingerprint basis of the two: tokens | catalog | config | none
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "verdicts", MappingProxyType(dict(self.verdicts)))

    def incompatible(self, names: Sequence[str] | None = None) -> bool:
        """True when every engine in `names` (default: all) refuses the plain algorithm (CLI exit 1)."""
        return all(not self.verdicts[e].compatible for e in (names or self.verdicts))


# --- the report ---------------------------------------------------------------------------------


def pair(target: ModelSpec, draft: ModelSpec, *, target_tokenizer: TokenizerFingerprint | None = None,
         draft_tokenizer: TokenizerFingerprint | None = None, context: int | None = None) -> PairReport:
    """Check a draft against a target for llama.cpp, vLLM, transformers and mlx-lm.

    Args:
        target, draft: the two models (sources.load_spec).
        target_tokenizer, draft_tokenizer: fingerprints to compare; default the specs' own
            (`sources.tokenizer.fingerprint_for(spec)` gives the full token table when files exist).
        context: deployment context in tokens, for the draft-context advice (default: target max).

    Returns:
        PairReport with a verdict per engine, named differences, overlap, advice.

    Raises:
        ConfigError: the heterogeneous-vocabulary catalog is missing or malformed.

    Example:
        >>> from planner.sources import load_spec
        >>> r = pair(load_spec("qwen2.5-7b"), load_spec("qwen2.5-0.5b"))
        >>> r.verdicts["vllm"].failed_rule, r.verdicts["llama.cpp"].compatible
        ('vocab_size', True)
    """
    t = Side(target, target_tokenizer if target_tokenizer is not None else target.tokenizer)
    d = Side(draft, draft_tokenizer if draft_tokenizer is not None else draft.tokenizer)
    same, diffs = compare_tokenizers(t, d)
    verdicts = {e.name: e.pair_rule(t, d, same) for e in engines.all_engines()}
    ov = vocab_overlap(t.fp, d.fp, target_rows=target.vocab, draft_rows=draft.vocab)
    fam = family_match(target, draft, same)
    advice = (lineage_advice(t, d, fam, same) + size_advice(target, draft) + moe_advice(target)
              + context_advice(target, draft, context))
    hetero = None
    if same is not True or any(not v.compatible for v in verdicts.values()):
        hetero = heterogeneous_for(ov)
        advice.append(hetero_advice(hetero, same, verdicts))
    basis = weakest_basis(t, d)
    notes = []
    if basis in ("config", "count", "none"):
        notes.append("no token tables or catalog tokenizer facts on both sides: verdicts use config vocab_size "
                     "and bos/eos ids only (lower confidence)")
    elif basis == "catalog":
        notes.append("verdicts from catalog tokenizer facts (family tags and sizes), not token tables")
    return PairReport(target=target.id, draft=draft.id, verdicts=verdicts, same_tokenizer=same, overlap=ov,
                      family_match=fam, differences=tuple(diffs), advice=tuple(advice), heterogeneous=hetero,
                      basis=basis, notes=tuple(notes))


def to_json(r: PairReport) -> dict[str, Any]:
    """The `planner pair --json` schema (docs/pairing.md)."""
    def verdict(v: Verdict) -> dict[str, Any]:
        return {"compatible": v.compatible, "failed_rule": v.failed_rule, "fallback": v.fallback,
                "detail": v.detail, "confidence": v.confidence}

    h = r.heterogeneous
    return {
        "target": r.target, "draft": r.draft,
        "engines": {e: verdict(v) for e, v in r.verdicts.items()},
        "same_tokenizer": r.same_tokenizer,
        "vocab_overlap": round(r.overlap.of_draft, 6) if r.overlap else None,
        "family_match": r.family_match,
        "advice": [{"severity": a.severity, "code": a.code, "message": a.message} for a in r.advice],
        "differences": list(r.differences),
        "overlap": None if r.overlap is None else {
            "intersection": r.overlap.intersection, "draft_rows": r.overlap.draft_rows,
            "target_rows": r.overlap.target_rows, "of_draft": round(r.overlap.of_draft, 6),
            "of_target": round(r.overlap.of_target, 6), "basis": r.overlap.basis},
        "heterogeneous": None if h is None else {
            "algorithms": [dict(a) for a in h.algorithms],
            "tli_acceptance": None if h.tli_acceptance is None else {
                "value": h.tli_acceptance.value, "upper": h.tli_acceptance.upper,
                "detail": h.tli_acceptance.detail, "sources": list(h.tli_acceptance.sources)},
            "homogeneous_reference": dict(h.homogeneous_reference) if h.homogeneous_reference else None},
        "basis": r.basis, "notes": list(r.notes),
    }
