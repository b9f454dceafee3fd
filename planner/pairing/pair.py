"""Target x draft -> PairReport: can each engine run the plain draft algorithm, and if not, what then.

Why per engine: each engine checks something different, and none says why it refused.
llama.cpp compares vocab type, BOS/EOS, n_vocab and every token's text, and reports any
failure as "draft model vocab type must match target model"; vLLM and transformers compare
only config.json vocab_size (so a same-tokenizer Qwen2.5 pair whose embeddings are padded
differently is refused, while two unrelated tokenizers of equal size pass); mlx-lm compares
the tokenizer's base vocabulary size. We name the rule that fails, the fallback that applies
(TLI / UAG) and what it costs, from published measurements (catalogs/heterogeneous_vocab.json).

Pure computation over ModelSpec + TokenizerFingerprint (sources/tokenizer.py builds those).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from types import MappingProxyType
from typing import Any

from .. import engines
from ..core.constants import (
    PAIR_DRAFT_RATIO_MAX,
    PAIR_DRAFT_RATIO_TYPICAL,
    PAIR_DRAFT_RATIO_WARN,
    PAIR_DRAFT_TYPICAL_PARAMS,
    catalog_dir,
)
from ..core.errors import ConfigError
from ..core.spec import ModelSpec, TokenizerFingerprint
from ..engines.base import Side, Verdict, first_text_mismatch, weakest_basis

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Advice:
    severity: str  # error | warning | info
    code: str  # family, instruct, chat_template, draft_size, moe, context, vocabulary, heterogeneous
    message: str


@dataclass(frozen=True)
class Overlap:
    """Vocabulary intersection after space-marker normalisation (vLLM VocabMapping convention)."""

    intersection: int
    draft_rows: int  # draft config vocab_size: the denominator vLLM reports ("% of draft")
    target_rows: int
    of_draft: float
    of_target: float
    basis: str  # tokens | catalog


@dataclass(frozen=True)
class AcceptanceEstimate:
    """Expected TLI acceptance from published (overlap, acceptance) points; one pair per point."""

    value: float | None
    upper: float | None
    detail: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class Heterogeneous:
    """What a pair with different vocabularies (or vocab sizes) can still use, and at what cost."""

    overlap: Overlap | None
    algorithms: tuple[Mapping[str, Any], ...]
    tli_acceptance: AcceptanceEstimate | None
    homogeneous_reference: Mapping[str, Any] | None


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


# --- same tokenizer, differences, overlap -------------------------------------------------------


def _compare_tokenizers(t: Side, d: Side) -> tuple[bool | None, list[str]]:
    """Whether the two id -> token tables (and text processing) are the same; named differences."""
    diffs: list[str] = []
    tf, df = t.fp, d.fp
    same: bool | None = None
    if tf and df and tf.tokens is not None and df.tokens is not None:
        same_table = unpadded(tf.tokens) == unpadded(df.tokens)
        same = same_table and t.vocab_type == d.vocab_type
        if t.vocab_type != d.vocab_type:
            diffs.append(f"vocab_type: {t.vocab_type} vs {d.vocab_type}")
        if not same_table:
            n = min(len(tf.tokens), len(df.tokens))
            differing = sum(1 for i in range(n) if tf.tokens[i] != df.tokens[i])
            first = first_text_mismatch(tf, df, start=0, end=n)
            where = f", first at id {first}: {tf.tokens[first]!r} vs {df.tokens[first]!r}" if first is not None else ""
            diffs.append(f"vocab: {differing} of {n} shared ids differ{where}; sizes {len(tf.tokens)} vs "
                         f"{len(df.tokens)}")
        for name, a, b in (("normalizer", tf.normalizer_hash, df.normalizer_hash),
                           ("pre_tokenizer", tf.pre_tokenizer_hash, df.pre_tokenizer_hash),
                           ("pre", tf.pre, df.pre)):
            if a is not None and b is not None and a != b:
                diffs.append(f"{name}: differs ({a} vs {b})")
                same = False
    elif tf and df and tf.family and df.family:
        same = tf.family == df.family and t.vocab_type == d.vocab_type
        if not same:
            diffs.append(f"tokenizer family (catalog): {tf.family} vs {df.family}")
    if tf and df and tf.vocab_size != df.vocab_size and tf.basis != "config" and df.basis != "config":
        diffs.append(f"vocab_size (len(tokenizer)): {tf.vocab_size} vs {df.vocab_size}")
    if t.spec.vocab != d.spec.vocab:
        diffs.append(f"config vocab_size: {t.spec.vocab} vs {d.spec.vocab}"
                     + (" (embedding padding only)" if same else ""))
    for name, a, b in (("bos_id", t.bos, d.bos), ("eos_id", t.eos, d.eos),
                       ("pad_id", tf.pad_id if tf else None, df.pad_id if df else None),
                       ("add_bos", t.add_bos()[0], d.add_bos()[0]), ("add_eos", t.add_eos(), d.add_eos())):
        if a is not None and b is not None and a != b:
            diffs.append(f"{name}: {a} vs {b}")
    if tf and df and tf.chat_template_hash and df.chat_template_hash and tf.chat_template_hash != df.chat_template_hash:
        diffs.append("chat_template: differs")
    return same, diffs


def unpadded(tokens: Sequence[str]) -> Sequence[str]:
    """The table without the trailing `[PAD{i}]` fillers convert_hf_to_gguf adds up to config vocab_size."""
    n = len(tokens)
    while n and tokens[n - 1] == f"[PAD{n - 1}]":
        n -= 1
    return tokens[:n]


def space_prefixes(fp: TokenizerFingerprint) -> tuple[str, ...]:
    """The word-initial space marker(s) of a vocabulary (vLLM _detect_space_prefix, by vocab type)."""
    if fp.vocab_type in ("SPM", "UGM"):
        return ("▁",)
    if fp.vocab_type == "BPE":
        return ("Ġ",)
    return ("Ġ", "▁")  # vLLM's fallback when probing finds no marker (e.g. WordPiece)


def normalised_vocab(fp: TokenizerFingerprint, rows: int) -> dict[str, int]:
    """Normalised token string -> first id below `rows`; gap fillers `[PAD{i}]` are not tokens.

    Normalisation (vLLM _normalize_token): a leading space marker becomes a plain space.
    """
    prefixes = space_prefixes(fp)
    toks = (fp.tokens or ())[:rows]
    norm = toks
    for p in prefixes:  # one pass per marker, in C-level str methods; a token has at most one
        k = len(p)
        norm = [(" " + t[k:]) if t.startswith(p) else t for t in norm]
    out = dict(zip(reversed(norm), range(len(norm) - 1, -1, -1), strict=True))  # smallest id wins
    for i, t in enumerate(toks):
        if t.startswith("[PAD") and t == f"[PAD{i}]" and out.get(norm[i]) == i:
            del out[norm[i]]
    return out


def vocab_overlap(t: TokenizerFingerprint | None, d: TokenizerFingerprint | None, *, target_rows: int,
                  draft_rows: int) -> Overlap | None:
    """Intersection of the two vocabularies as vLLM's VocabMapping counts it.

    of_draft = |shared normalised tokens| / draft rows (config vocab_size), the figure vLLM logs
    as '% of draft' and PR #38174 reports as overlap. None when neither tables nor equal catalog
    families are known.
    """
    if t is None or d is None:
        return None
    if t.tokens is not None and d.tokens is not None:
        tn, dn = normalised_vocab(t, target_rows), normalised_vocab(d, draft_rows)
        inter, basis = len(tn.keys() & dn.keys()), "tokens"
    elif t.family and d.family and t.family == d.family:
        inter, basis = min(t.vocab_size, d.vocab_size, target_rows, draft_rows), "catalog"
    else:
        return None
    return Overlap(inter, draft_rows, target_rows, inter / max(draft_rows, 1), inter / max(target_rows, 1), basis)


# --- published measurements ---------------------------------------------------------------------


@lru_cache(maxsize=2)
def _catalog(directory: str) -> dict[str, Any]:
    from ..core.jsonio import read_json_object

    return read_json_object(f"{directory}/heterogeneous_vocab.json", what="heterogeneous vocabulary catalog")


def heterogeneous_catalog() -> dict[str, Any]:
    """catalogs/heterogeneous_vocab.json (published TLI acceptance, algorithms, sources).

    Raises:
        ConfigError: the catalog is missing or malformed.
    """
    data = _catalog(str(catalog_dir()))
    if not isinstance(data.get("tli_acceptance"), list) or not isinstance(data.get("algorithms"), list):
        raise ConfigError(f"Cannot read '{catalog_dir()}/heterogeneous_vocab.json': expected lists "
                          f"'tli_acceptance' and 'algorithms'. Restore the bundled catalog.")
    return data


def tli_acceptance(overlap: float, points: Sequence[Mapping[str, Any]]) -> AcceptanceEstimate:
    """Expected TLI acceptance at `overlap`, by linear interpolation between published TLI points.

    Each point is one model pair on one workload (vLLM PR #38174), so the estimate is an order of
    magnitude: acceptance also depends on how well the draft predicts the target.
    Above the highest TLI overlap the nearest point is used; below the lowest only an upper bound.
    """
    pts = sorted((float(p["overlap"]), float(p["acceptance"]), str(p["source"])) for p in points
                 if str(p.get("path", "")).startswith("TLI"))
    if not pts:
        return AcceptanceEstimate(None, None, "no published TLI measurement in the catalog", ())
    srcs = tuple(sorted({s for *_, s in pts}))
    lo, hi = pts[0], pts[-1]
    if overlap >= hi[0]:
        return AcceptanceEstimate(hi[1], None, f"overlap {overlap:.3f} >= the highest measured TLI overlap "
                                  f"{hi[0]}: nearest point, {hi[1]:.2f}", srcs)
    if overlap < lo[0]:
        return AcceptanceEstimate(None, lo[1], f"overlap {overlap:.3f} is below the measured range "
                                  f"({lo[0]}..{hi[0]}): expect acceptance under {lo[1]:.2f}", srcs)
    for (x0, y0, _), (x1, y1, _) in pairwise(pts):
        if x0 <= overlap <= x1:
            # linear: a = a0 + (overlap - o0) / (o1 - o0) * (a1 - a0)
            a = y0 + (overlap - x0) / (x1 - x0) * (y1 - y0)
            return AcceptanceEstimate(a, None, f"interpolated between published TLI points ({x0}, {y0}) and "
                                      f"({x1}, {y1}): {a:.2f}", srcs)
    raise AssertionError("unreachable: overlap inside the measured range")


def _heterogeneous(ov: Overlap | None) -> Heterogeneous:
    cat = heterogeneous_catalog()
    homog = next((p for p in cat["tli_acceptance"] if not str(p.get("path", "")).startswith("TLI")), None)
    est = tli_acceptance(ov.of_draft, cat["tli_acceptance"]) if ov is not None else None
    return Heterogeneous(ov, tuple(MappingProxyType(a) for a in cat["algorithms"]), est,
                         MappingProxyType(homog) if homog else None)


# --- family and size advice ---------------------------------------------------------------------


def _norm_family(f: str | None) -> str:
    return "".join(ch for ch in (f or "").lower() if ch.isalnum())


def family_match(target: ModelSpec, draft: ModelSpec, same_tokenizer: bool | None) -> bool:
    """Same family tag, or the same architecture with the same tokenizer (one lineage)."""
    if target.family and draft.family and _norm_family(target.family) == _norm_family(draft.family):
        return True
    return bool(same_tokenizer) and target.model_type == draft.model_type


def _b(n: int) -> str:
    return f"{n / 1e9:.2f}B"


def _size_advice(target: ModelSpec, draft: ModelSpec) -> list[Advice]:
    out = []
    t_act, d_act = target.params_active, draft.params_active
    ratio = d_act / t_act if t_act else float("inf")
    basis = "active " if target.moe else ""
    if d_act >= t_act:
        out.append(Advice("error", "draft_size", f"draft ({_b(d_act)} active) is not smaller than the target's "
                          f"{basis}parameters ({_b(t_act)}): a draft step costs as much as a target step, so "
                          f"speculation cannot be faster"))
    elif ratio > PAIR_DRAFT_RATIO_MAX:
        out.append(Advice("error", "draft_size", f"draft larger than useful: {_b(d_act)} is {ratio:.0%} of the "
                          f"target's {basis}{_b(t_act)}; even perfect acceptance caps the speed-up below 2x"))
    elif ratio > PAIR_DRAFT_RATIO_WARN:
        out.append(Advice("warning", "draft_size", f"draft is {ratio:.0%} of the target's {basis}parameters "
                          f"({_b(d_act)} of {_b(t_act)}); useful drafts are well under a tenth, and each draft "
                          f"step here costs about {ratio:.0%} of a target step"))
    elif ratio > PAIR_DRAFT_RATIO_TYPICAL:
        out.append(Advice("info", "draft_size", f"draft is {ratio:.0%} of the target's {basis}parameters "
                          f"({_b(d_act)} of {_b(t_act)}): above the usual tenth, gains shrink as the draft grows "
                          f"(Llama-3.1-8B + 3.2-1B at 15% still gave 1.71x in llama.cpp #5877)"))
    else:
        out.append(Advice("info", "draft_size", f"draft is {ratio:.1%} of the target's {basis}parameters "
                          f"({_b(d_act)} of {_b(t_act)}): within the usual range (under a tenth)"))
    lo, hi = PAIR_DRAFT_TYPICAL_PARAMS
    total = draft.params_total
    if total > hi:
        out.append(Advice("warning", "draft_size", f"draft has {_b(total)} parameters; drafts are typically "
                          f"{_b(lo)}-{_b(hi)}: a smaller one of the same family usually drafts faster"))
    elif total < lo:
        out.append(Advice("info", "draft_size", f"draft has {_b(total)} parameters, below the usual "
                          f"{_b(lo)}-{_b(hi)}: cheap steps, but acceptance is often low (SmolLM2-1.7B + 135M "
                          f"ran 30% slower in vLLM, issue #15025)"))
    return out


def _moe_advice(target: ModelSpec, k_hint: int = 4) -> list[Advice]:
    moe = target.moe
    if moe is None:
        return []
    # Verifying K+1 tokens routes each to top_k experts: up to min(E, (K+1)*top_k) experts per layer are
    # read, against top_k for one decode step, so verification costs more than on a dense model.
    touched = min(moe.experts, (k_hint + 1) * moe.experts_per_token)
    return [Advice("warning", "moe", f"MoE target: a decode step reads {_b(target.params_active)} active of "
                   f"{_b(target.params_total)} parameters, so size the draft against the active count; verifying "
                   f"K+1 tokens touches up to {touched} of {moe.experts} experts per layer (K={k_hint}, top-"
                   f"{moe.experts_per_token}) instead of {moe.experts_per_token}, which erodes the gain")]


def _context_advice(target: ModelSpec, draft: ModelSpec, context: int | None) -> list[Advice]:
    want = context or target.max_context
    what = "deployment context" if context else "target's max context"
    if draft.max_context >= want:
        return [Advice("info", "context", f"draft max context {draft.max_context} >= {what} {want}")]
    return [Advice("warning" if context else "info", "context",
                   f"draft max context {draft.max_context} < {what} {want}: past {draft.max_context} tokens the "
                   f"draft runs beyond its trained positions (acceptance falls) or the engine caps the draft's "
                   f"context (llama.cpp -cd, vLLM draft max_model_len)")]


def _lineage_advice(t: Side, d: Side, fam: bool, same: bool | None) -> list[Advice]:
    out = []
    tfam, dfam = t.spec.family or t.spec.model_type, d.spec.family or d.spec.model_type
    if fam:
        out.append(Advice("info", "family", f"same family/lineage ({tfam})"))
    else:
        out.append(Advice("warning", "family", f"different families ({tfam} vs {dfam}): drafts from another "
                          f"lineage predict the target worse; prefer a small model of the target's family"))
    ti, di = t.spec.instruct, d.spec.instruct
    if ti and di is False:
        out.append(Advice("warning", "instruct", "instruct target with a base draft: the draft has not learnt the "
                          "chat format, so acceptance drops on chat prompts; use the draft's instruct variant"))
    elif ti is False and di:
        out.append(Advice("warning", "instruct", "base target with an instruct draft: the draft is tuned to "
                          "answer in chat style; use the base variant for completion workloads"))
    tf, df = t.fp, d.fp
    if tf and df and tf.chat_template_hash and df.chat_template_hash and tf.chat_template_hash != df.chat_template_hash:
        out.append(Advice("warning", "chat_template", "chat templates differ: a prompt formatted for the target "
                          "looks foreign to the draft, lowering acceptance on chat traffic"))
    elif tf and df and tf.has_chat_template and df.has_chat_template is False:
        out.append(Advice("warning", "chat_template", "the target has a chat template and the draft none "
                          "(a base model): acceptance drops on chat prompts"))
    if same is False and t.spec.vocab == d.spec.vocab:
        out.append(Advice("error", "vocabulary", "same config vocab_size but different tokenizers: vLLM, "
                          "transformers and mlx-lm accept this pair, yet each draft id means another string to "
                          "the target and nearly every draft is rejected"))
    return out


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
    same, diffs = _compare_tokenizers(t, d)
    verdicts = {e.name: e.pair_rule(t, d, same) for e in engines.all_engines()}
    ov = vocab_overlap(t.fp, d.fp, target_rows=target.vocab, draft_rows=draft.vocab)
    fam = family_match(target, draft, same)
    advice = (_lineage_advice(t, d, fam, same) + _size_advice(target, draft) + _moe_advice(target)
              + _context_advice(target, draft, context))
    hetero = None
    if same is not True or any(not v.compatible for v in verdicts.values()):
        hetero = _heterogeneous(ov)
        advice.append(_hetero_advice(hetero, same, verdicts))
    basis = weakest_basis(t, d)
    notes = []
    if basis in ("config", "none"):
        notes.append("no token tables or catalog tokenizer facts on both sides: verdicts use config vocab_size "
                     "and bos/eos ids only (lower confidence)")
    elif basis == "catalog":
        notes.append("verdicts from catalog tokenizer facts (family tags and sizes), not token tables")
    return PairReport(target=target.id, draft=draft.id, verdicts=verdicts, same_tokenizer=same, overlap=ov,
                      family_match=fam, differences=tuple(diffs), advice=tuple(advice), heterogeneous=hetero,
                      basis=basis, notes=tuple(notes))


def _hetero_advice(h: Heterogeneous, same: bool | None, verdicts: Mapping[str, Verdict]) -> Advice:
    refused = [e for e, v in verdicts.items() if not v.compatible]
    ov = f"vocabulary overlap {h.overlap.of_draft:.1%} of the draft's rows" if h.overlap else "overlap unknown"
    est = h.tli_acceptance
    cost = ""
    if est is not None and est.value is not None:
        cost = f"; published TLI acceptance suggests about {est.value:.0%} ({est.detail})"
    elif est is not None and est.upper is not None:
        cost = f"; {est.detail}"
    ref = h.homogeneous_reference
    if ref is not None and cost:
        cost += (f", against ~{float(ref['acceptance']):.0%} for a same-vocabulary pair ({ref['draft']} -> "
                 f"{str(ref['target']).split(' ')[0]})")
    who = f"{', '.join(refused)} refuse the plain algorithm" if refused else "the tokenizers differ"
    sev = "warning" if same is not False or (h.overlap and h.overlap.of_draft >= 0.9) else "error"
    return Advice(sev, "heterogeneous", f"{who}: {ov}; SLEM (greedy) or TLI (sampling; vLLM: greedy drafting "
                  f"only) apply{cost}")


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
