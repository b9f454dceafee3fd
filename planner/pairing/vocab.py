"""Vocab: are two tokenizers the same, which differences have names, and how much do they share.

Its own module because every engine rule and every fallback starts from this comparison: the
id -> token tables (and text processing) compared with each difference named, and the
vocabulary intersection after space-marker normalisation as vLLM's VocabMapping counts it.

Pure computation over engines.base.Side + TokenizerFingerprint (sources/tokenizer.py builds those).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.spec import TokenizerFingerprint
from ..engines.base import Side, first_text_mismatch


@dataclass(frozen=True)
class Overlap:
    """Vocabulary intersection after space-marker normalisation (vLLM VocabMapping convention)."""

    intersection: int
    draft_rows: int  # draft config vocab_size: the denominator vLLM reports ("% of draft")
    target_rows: int
    of_draft: float
    of_target: float
    basis: str  # tokens | catalog


def compare_tokenizers(t: Side, d: Side) -> tuple[bool | None, list[str]]:
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
    fields: tuple[tuple[str, object, object], ...] = (  # each field's target and draft value
        ("bos_id", t.bos, d.bos), ("eos_id", t.eos, d.eos),
        ("pad_id", tf.pad_id if tf else None, df.pad_id if df else None),
        ("add_bos", t.add_bos()[0], d.add_bos()[0]), ("add_eos", t.add_eos(), d.add_eos()))
    for name, tv, dv in fields:
        if tv is not None and dv is not None and tv != dv:
            diffs.append(f"{name}: {tv} vs {dv}")
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
    norm: Sequence[str] = toks
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

