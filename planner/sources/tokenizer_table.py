"""The id -> token table of a tokenizer.json model (or a slow vocab.json), read from a stranger's file.

Why separate: this is the one place that trusts nothing about a vocabulary. The model type is
checked, every id is bounded to [0, MAX_VOCAB), a malformed entry is named in a ConfigError, and
a table cannot claim many more unused ids than it holds tokens (a 60-byte file could otherwise
ask for a 16M-entry list). Gaps become "[PAD{i}]" as convert_hf_to_gguf writes them, and the BPE
models that llama.cpp converts as SPM are recognised here, so tokenizer.py only assembles.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple, TypeGuard

from ..core.constants import MAX_VOCAB
from ..core.errors import ConfigError

# Ids without a token tolerated below the largest id beyond one per token present (real files: a few).
MAX_TOKENIZER_GAPS = 4096


def is_id(x: Any) -> TypeGuard[int]:
    """A token id a table can hold: an int (not a bool) in [0, MAX_VOCAB)."""
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < MAX_VOCAB


class TokenTable(NamedTuple):
    """The id -> token table and the counts a fingerprint reports."""

    model: str  # BPE | Unigram | WordPiece | WordLevel
    tokens: tuple[str, ...]
    vocab_size: int  # distinct tokens, added included (len(tokenizer))
    base_vocab_size: int  # model vocabulary without added tokens (HF tokenizer.vocab_size)
    added: dict[str, int]  # added token content -> id
    special: tuple[str, ...]  # added tokens flagged special, by id
    gaps: int


def model_vocab(model: Mapping[str, Any], origin: str) -> tuple[str, dict[str, int]]:
    """(model type, token -> id) of a tokenizer.json `model` section, every id checked."""
    kind = model.get("type")
    vocab = model.get("vocab")
    if kind is None:  # files written before tokenizers 0.10 omit "type"
        kind = "Unigram" if isinstance(vocab, list) else "BPE" if "merges" in model else \
            "WordPiece" if "continuing_subword_prefix" in model else "WordLevel"
    if kind == "Unigram":
        if not isinstance(vocab, list):
            raise malformed(origin, "model.vocab", "a list of [piece, score]", type(vocab).__name__)
        table: dict[str, int] = {}
        for i, item in enumerate(vocab):
            if not (isinstance(item, list) and item and isinstance(item[0], str)):
                raise malformed(origin, f"model.vocab[{i}]", "[piece, score]", repr(item)[:40])
            table.setdefault(item[0], i)
        return kind, table
    if kind not in ("BPE", "WordPiece", "WordLevel"):
        raise ConfigError(f"Cannot read tokenizer model from '{origin}': model type '{kind}' is not supported "
                          f"(expected BPE, Unigram, WordPiece or WordLevel). Pair with a GGUF or catalog name "
                          f"instead.", origin, key="model.type")
    if not isinstance(vocab, dict):
        raise malformed(origin, "model.vocab", "an object {token: id}", type(vocab).__name__)
    ids = vocab.values()
    # One pass in C for the common case; the slow loop only runs to name the offending entry.
    if not all(type(t) is int for t in ids) or (ids and (min(ids) < 0 or max(ids) >= MAX_VOCAB)):
        tok, tid = next((k, v) for k, v in vocab.items() if not is_id(v))
        raise malformed(origin, f"model.vocab[{tok!r}]", f"an integer id in [0, {MAX_VOCAB})", repr(tid)[:40])
    return str(kind), vocab


def malformed(origin: str, key: str, expected: str, got: str) -> ConfigError:
    """The ConfigError for a malformed vocabulary entry, naming the key."""
    return ConfigError(f"Cannot read tokenizer vocabulary from '{origin}': '{key}' is malformed (expected "
                       f"{expected}, got {got}). Re-save the tokenizer with a current tokenizers release.",
                       origin, key=key)


def build_table(kind: str, vocab: dict[str, int], added_tokens: Any, origin: str) -> TokenTable:
    """The id -> token table of a model vocabulary plus its added tokens, gaps bounded and padded."""
    by_id = {tid: tok for tok, tid in reversed(vocab.items())}  # reversed: the first token wins an id
    added: dict[str, int] = {}
    special: list[tuple[int, str]] = []
    if added_tokens is not None and not isinstance(added_tokens, list):
        raise malformed(origin, "added_tokens", "a list", type(added_tokens).__name__)
    for i, a in enumerate(added_tokens or []):
        if not (isinstance(a, dict) and is_id(a.get("id")) and isinstance(a.get("content"), str)):
            raise malformed(origin, f"added_tokens[{i}]", "{\"id\": int, \"content\": str}", repr(a)[:60])
        by_id[a["id"]] = a["content"]
        added.setdefault(a["content"], a["id"])
        if a.get("special"):
            special.append((a["id"], a["content"]))
    size = max(by_id) + 1 if by_id else 0
    # The table is sized by the largest id, which costs the file one number: bound the unused ids
    # by the ids actually present, so a 60-byte file cannot claim a 16M-entry table.
    max_gaps = max(len(by_id), MAX_TOKENIZER_GAPS)
    if size - len(by_id) > max_gaps:
        raise malformed(origin, "ids", f"at most {max_gaps} ids without a token below the largest id",
                   f"{size - len(by_id)} unused ids below id {size - 1}")
    table: list[str | None] = [None] * size
    for tid, tok in by_id.items():
        table[tid] = tok
    # A gap (an id no token uses) is what convert_hf_to_gguf writes as "[PAD{i}]".
    tokens = tuple(f"[PAD{i}]" if t is None else t for i, t in enumerate(table))
    distinct = len(set(vocab) | set(added))
    return TokenTable(kind, tokens, distinct, len(vocab), added, tuple(c for _, c in sorted(special)),
                  size - len(by_id))


def _spm_like(tj: Mapping[str, Any]) -> bool:
    """A BPE tokenizer.json that llama.cpp converts as SPM (Llama 2, Mistral v0.1, Gemma, Phi-3).

    Those are SentencePiece BPE models exported with byte_fallback and the '▁' space marker;
    convert_hf_to_gguf writes them as tokenizer.ggml.model "llama" (LlamaHfVocab / sentencepiece).
    """
    model = tj.get("model") or {}
    if model.get("byte_fallback") is True:
        return True
    text = json.dumps([tj.get("pre_tokenizer"), tj.get("decoder")], ensure_ascii=False)
    return "Metaspace" in text or '"String": "▁"' in text


def table_vocab_type(kind: str, tj: Mapping[str, Any]) -> str:
    """llama.cpp vocab type (SPM/BPE/UGM/WPM/NONE) of a tokenizer.json model type."""
    if kind == "BPE":
        return "SPM" if _spm_like(tj) else "BPE"
    return {"Unigram": "UGM", "WordPiece": "WPM"}.get(kind, "NONE")
