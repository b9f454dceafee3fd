"""Tokenizer files, catalog facts or GGUF keys -> TokenizerFingerprint (what pairing compares).

Why here: tokenizer.json, tokenizer_config.json, special_tokens_map.json and chat
templates come from strangers, so every read is bounded and every failure is a
`ConfigError` naming the file. We parse the JSON ourselves (never transformers, and
not the tokenizers library either: it is not needed to read a table) and derive the
special ids and add_bos/add_eos the way llama.cpp's converter does (gguf-py
`SpecialVocab`), so the llama.cpp verdict matches what a converted GGUF would hold.

Three bases, cheapest first (`TokenizerFingerprint.basis`):
- "config": tokenizer_config.json, special_tokens_map.json, config and generation_config only.
  `fingerprint_from_located` builds this at load time and never opens tokenizer.json
  (a 150k-262k vocabulary is 7-33 MB of JSON), so `planner memory` stays fast.
- "catalog": the catalog entry's "tokenizer" facts (family tag, sizes, special ids).
- "tokens": the full id -> token table, from tokenizer.json (or vocab.json) when pairing asks
  (`fingerprint_for(spec)`, cached per file state); GGUF files get theirs from gguf_tokenizer.py.

Layout: tokenizer_special.py (side files, special ids and add_bos/add_eos, ConfigFacts),
tokenizer_table.py (the bounded id -> token table), and this module: the three builders and the
digests that identify a vocabulary, a tokenizer.json section or a chat template.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core import constants
from ..core.errors import ConfigError
from ..core.jsonio import read_json, read_json_object
from ..core.spec import ModelSpec, TokenizerFingerprint
from .located import Located
from .tokenizer_special import (
    ConfigFacts,
    class_vocab_type,
    config_ids,
    decoder_added_tokens,
    read_side_files,
    resolve_ids,
    special_contents,
)
from .tokenizer_table import build_table, is_id, malformed, model_vocab, table_vocab_type

__all__ = [
    "VOCAB_TYPES",
    "fingerprint_for",
    "fingerprint_from_catalog",
    "fingerprint_from_files",
    "fingerprint_from_located",
    "section_digest",
    "vocab_digest",
]

# llama.cpp vocabulary types (include/llama.h enum llama_vocab_type), plus UNKNOWN for a
# config-only guess that found nothing.
VOCAB_TYPES = ("SPM", "BPE", "WPM", "UGM", "RWKV", "PLAMO2", "NONE", "UNKNOWN")


# --- digests ------------------------------------------------------------------------------------


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def vocab_digest(tokens: Sequence[str]) -> str:
    """sha256 of the token strings in id order joined with NUL (UTF-8), trailing `[PAD{i}]` dropped.

    Same definition as sources/gguf_tokenizer.py `vocab_hash`, so a GGUF and its source repo
    match; dropping the trailing fillers that convert_hf_to_gguf pads a GGUF's list with (up to
    config vocab_size) makes padded conversions match too. Pairing compares the tables
    themselves when both are present; the digest is an identity for reports and caches.

    Example:
        >>> vocab_digest(["a", "b"]) == vocab_digest(["a", "b", "[PAD2]", "[PAD3]"])
        True
    """
    n = len(tokens)
    while n and tokens[n - 1] == f"[PAD{n - 1}]":
        n -= 1
    return _sha("\x00".join(tokens[:n]).encode("utf-8", "surrogatepass"))


def section_digest(section: Any) -> str | None:
    """Digest of a tokenizer.json section (normalizer, pre_tokenizer) in canonical JSON; None if absent."""
    if section is None:
        return None
    return _sha(json.dumps(section, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"))


def _template_digest(template: Any) -> str | None:
    if isinstance(template, str):
        return _sha(template.encode("utf-8", "surrogatepass"))
    if isinstance(template, list) and template:
        return section_digest(template)
    return None


# --- public builders ----------------------------------------------------------------------------


def _as_files(files: Mapping[str, Path] | Iterable[str | Path]) -> dict[str, Path]:
    if isinstance(files, Mapping):
        return {str(k): Path(v) for k, v in files.items()}
    return {Path(p).name: Path(p) for p in files}


def fingerprint_from_located(loc: Located, text_config: Mapping[str, Any] | None = None) -> TokenizerFingerprint | None:
    """The load-time fingerprint: catalog facts, else the cheap tokenizer side files; never tokenizer.json.

    Args:
        loc: a `resolve.Located` (catalog entry, tokenizer files, config, generation_config).
        text_config: the normalised text config (vocab_size, special ids); `loc.config` when None.

    Returns:
        A "catalog" or "config" basis fingerprint, or None when there is nothing to read.

    Raises:
        ConfigError: a tokenizer side file or the catalog facts are malformed.
    """
    cfg = dict(loc.config or {})
    cfg.update(text_config or {})
    facts = ConfigFacts.from_configs(cfg, loc.generation_config)
    entry = loc.catalog_entry or {}
    if isinstance(entry.get("tokenizer"), dict):
        return fingerprint_from_catalog(entry["tokenizer"], facts, origin=f"catalog:{entry.get('id')}")
    files = _as_files(loc.tokenizer_files or {})
    if not files:
        return None
    return _light(files, facts)


def _light(files: dict[str, Path], facts: ConfigFacts) -> TokenizerFingerprint:
    side = read_side_files(files)
    tc = side.config
    vtype, cls = class_vocab_type(tc, files)
    contents, add, notes = special_contents(tc, None)
    ids = resolve_ids(contents, decoder_added_tokens(tc), facts)
    notes.append("tokenizer.json not parsed at load time: vocab_size is config.json's; pairing reads the table")
    return TokenizerFingerprint(
        vocab_type=vtype, vocab_size=facts.vocab_size or 0, vocab_hash=None, source=side.origin or "config.json",
        bos_id=ids.get("bos"), eos_id=ids.get("eos"), eos_ids=facts.eos_ids or config_ids(ids.get("eos")),
        pad_id=ids.get("pad"), unk_id=ids.get("unk"), add_bos=add.get("bos"), add_eos=add.get("eos"),
        chat_template_hash=_template_digest(side.chat_template), model_name=cls, basis="config",
        vocab_size_source="config.json vocab_size (tokenizer.json not read)", config_vocab_size=facts.vocab_size,
        has_chat_template=side.chat_template is not None, notes=tuple(notes))


def fingerprint_from_files(files: Mapping[str, Path] | Iterable[str | Path], *,
                           facts: ConfigFacts | None = None) -> TokenizerFingerprint | None:
    """The full fingerprint from tokenizer.json (or vocab.json) plus the side files.

    Args:
        files: tokenizer files by name (`Located.tokenizer_files`) or as paths (`ModelSpec.tokenizer_files`).
        facts: config-side vocab_size and special ids (fallbacks, as gguf-py uses config.json).

    Returns:
        A "tokens" basis fingerprint; a "config" one when only side files exist; None when none do.

    Raises:
        ConfigError: a file is too large (TOKENIZER_JSON_MAX_BYTES), not JSON, or malformed.

    Example:
        >>> fp = fingerprint_from_files(["tests/fixtures/tokenizers/all-MiniLM-L6-v2/tokenizer.json"])
        >>> fp.vocab_type, fp.vocab_size, fp.tokens[101]
        ('WPM', 30522, '[CLS]')
    """
    fs = _as_files(files)
    facts = facts or ConfigFacts()
    if "tokenizer.json" not in fs and "vocab.json" not in fs:
        return _light(fs, facts) if fs else None
    key = tuple(sorted((n, str(p), *_stat(p)) for n, p in fs.items()))
    return _full_cached(key, facts)


def _stat(p: Path) -> tuple[int, int]:
    try:
        st = p.stat()
    except OSError as e:
        raise ConfigError(f"Cannot read tokenizer file '{p}': {e.strerror or e}.", p) from e
    return st.st_size, st.st_mtime_ns


@lru_cache(maxsize=8)
def _full_cached(key: tuple, facts: ConfigFacts) -> TokenizerFingerprint:
    return _full({n: Path(p) for n, p, *_ in key}, facts)


def _full(files: dict[str, Path], facts: ConfigFacts) -> TokenizerFingerprint:
    side = read_side_files(files)
    tc = side.config
    if "tokenizer.json" in files:
        path = files["tokenizer.json"]
        origin = str(path)
        tj = read_json_object(path, max_bytes=constants.TOKENIZER_JSON_MAX_BYTES, what="tokenizer.json")
        model = tj.get("model")
        if not isinstance(model, dict):
            raise malformed(origin, "model", "an object {\"type\": ..., \"vocab\": ...}", type(model).__name__)
        kind, vocab = model_vocab(model, origin)
        table = build_table(kind, vocab, tj.get("added_tokens"), origin)
        vtype = table_vocab_type(kind, tj)
        norm_h, pre_h = section_digest(tj.get("normalizer")), section_digest(tj.get("pre_tokenizer"))
        post = tj.get("post_processor")
        source = "tokenizer.json" + (f" + {side.origin}" if side.origin else "")
    else:  # slow GPT-2 style files: vocab.json (+ merges.txt); added tokens live in tokenizer_config.json
        path = files["vocab.json"]
        origin = str(path)
        vocab = read_json(path, max_bytes=constants.TOKENIZER_JSON_MAX_BYTES, what="vocab.json")
        if not isinstance(vocab, dict):
            raise malformed(origin, "(top level)", "an object {token: id}", type(vocab).__name__)
        kind, vocab = model_vocab({"type": "BPE", "vocab": vocab}, origin)
        dec = [{"id": i, "content": c, "special": True} for c, i in decoder_added_tokens(tc).items()]
        table = build_table(kind, vocab, dec, origin)
        vtype, norm_h, pre_h, post = "BPE", None, None, None
        source = "vocab.json" + (f" + {side.origin}" if side.origin else "")
    lookup = {**decoder_added_tokens(tc), **table.added}
    contents, add, notes = special_contents(tc, post)
    ids = resolve_ids(contents, lookup, facts)
    if table.gaps:
        notes.append(f"{table.gaps} id(s) below the largest have no token (converted GGUFs hold [PAD{{i}}] there)")
    return TokenizerFingerprint(
        vocab_type=vtype, vocab_size=table.vocab_size, vocab_hash=vocab_digest(table.tokens), source=source,
        tokens=table.tokens, bos_id=ids.get("bos"), eos_id=ids.get("eos"),
        eos_ids=facts.eos_ids or config_ids(ids.get("eos")), pad_id=ids.get("pad"), unk_id=ids.get("unk"),
        add_bos=add.get("bos"), add_eos=add.get("eos"), normalizer_hash=norm_h, pre_tokenizer_hash=pre_h,
        chat_template_hash=_template_digest(side.chat_template), special_tokens=table.special,
        model_name=table.model, basis="tokens", vocab_size_source=f"{Path(origin).name} ({len(table.tokens)} ids)",
        base_vocab_size=table.base_vocab_size, config_vocab_size=facts.vocab_size,
        has_chat_template=side.chat_template is not None, notes=tuple(notes))


def fingerprint_for(spec: ModelSpec) -> TokenizerFingerprint | None:
    """The best fingerprint for pairing: a token table when one can be read, else what the spec holds.

    Parses tokenizer.json only here (cached by path, size and mtime), never at load time.

    Raises:
        ConfigError: a tokenizer file is malformed or too large.
    """
    fp = spec.tokenizer
    if fp is not None and fp.tokens is not None:
        return fp
    files = _as_files(spec.tokenizer_files)
    if "tokenizer.json" in files or "vocab.json" in files:
        facts = ConfigFacts.from_spec(spec)
        if fp is not None:
            facts = facts._replace(pad_id=fp.pad_id, unk_id=fp.unk_id)
        return fingerprint_from_files(files, facts=facts)
    return fp


_CATALOG_INT_KEYS = ("vocab_size", "bos_id", "eos_id", "pad_id", "base_vocab_size")


def fingerprint_from_catalog(facts_in: Mapping[str, Any], config: ConfigFacts | None = None, *,
                             origin: str) -> TokenizerFingerprint:
    """A fingerprint from catalog tokenizer facts (no token table: compare by family tag and sizes).

    Expected keys: vocab_type (SPM/BPE/UGM/WPM), family (equal tags = identical id -> token
    tables), vocab_size (len(tokenizer)), bos_id, eos_id, pad_id, add_bos, add_eos,
    chat_template (bool), source; optional base_vocab_size (HF tokenizer.vocab_size).

    Raises:
        ConfigError: a fact has the wrong type.
    """
    config = config or ConfigFacts()
    vtype = str(facts_in.get("vocab_type", "")).upper()
    if vtype not in VOCAB_TYPES:
        raise ConfigError(f"Cannot read tokenizer facts from '{origin}': 'vocab_type' must be one of "
                          f"{', '.join(VOCAB_TYPES[:4])} (got {facts_in.get('vocab_type')!r}). Fix the catalog entry.",
                          origin, key="tokenizer.vocab_type")
    for k in _CATALOG_INT_KEYS:
        v = facts_in.get(k)
        if v is not None and not is_id(v):
            raise ConfigError(f"Cannot read tokenizer facts from '{origin}': '{k}' must be a non-negative integer "
                              f"(got {v!r}). Fix the catalog entry.", origin, key=f"tokenizer.{k}")
    if not facts_in.get("vocab_size"):
        raise ConfigError(f"Cannot read tokenizer facts from '{origin}': 'vocab_size' is required (expected "
                          f"len(tokenizer), got {facts_in.get('vocab_size')!r}). Fix the catalog entry.",
                          origin, key="tokenizer.vocab_size")
    flags = {k: facts_in.get(k) for k in ("add_bos", "add_eos", "chat_template")}
    for k, v in flags.items():
        if v is not None and not isinstance(v, bool):
            raise ConfigError(f"Cannot read tokenizer facts from '{origin}': '{k}' must be true or false "
                              f"(got {v!r}). Fix the catalog entry.", origin, key=f"tokenizer.{k}")
    family = facts_in.get("family")
    src = str(facts_in.get("source") or "catalog")
    eos = facts_in.get("eos_id")
    return TokenizerFingerprint(
        vocab_type=vtype, vocab_size=int(facts_in["vocab_size"]), vocab_hash=None, source=f"{origin} ({src})",
        bos_id=facts_in.get("bos_id"), eos_id=eos, eos_ids=config.eos_ids or config_ids(eos), pad_id=facts_in.get("pad_id"),
        add_bos=flags["add_bos"], add_eos=flags["add_eos"], family=str(family) if family else None,
        basis="catalog", vocab_size_source=f"catalog ({src})", base_vocab_size=facts_in.get("base_vocab_size"),
        config_vocab_size=config.vocab_size, has_chat_template=flags["chat_template"])
