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
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from ..core import constants
from ..core.constants import MAX_VOCAB
from ..core.errors import ConfigError
from ..core.jsonio import read_json, read_json_object
from ..core.spec import ModelSpec, TokenizerFingerprint

__all__ = [
    "VOCAB_TYPES",
    "ConfigFacts",
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
# tokenizer_config.json tokenizer_class -> vocab type, for the config-only basis (substring, first hit).
_CLASS_TYPES = (("llama", "SPM"), ("gemma", "SPM"), ("mistral", "SPM"), ("t5", "UGM"), ("albert", "UGM"),
                ("xlnet", "UGM"), ("bert", "WPM"), ("mpnet", "WPM"), ("qwen", "BPE"), ("gpt2", "BPE"),
                ("gptneox", "BPE"), ("roberta", "BPE"), ("bloom", "BPE"), ("codegen", "BPE"))
_SPECIAL_TYPES = ("bos", "eos", "unk", "pad", "cls", "sep")
# Ids without a token tolerated below the largest id beyond one per token present (real files: a few).
MAX_TOKENIZER_GAPS = 4096


class ConfigFacts(NamedTuple):
    """The config-side numbers a fingerprint needs (hashable, so full parses can be cached)."""

    vocab_size: int | None = None  # config.json vocab_size (embedding rows)
    bos_id: int | None = None
    eos_ids: tuple[int, ...] = ()
    pad_id: int | None = None
    unk_id: int | None = None

    @classmethod
    def from_configs(cls, config: Mapping[str, Any] | None,
                     generation_config: Mapping[str, Any] | None = None) -> ConfigFacts:
        """Config ids as gguf-py reads them (ints only), generation_config's eos list first."""
        cfg, gen = config or {}, generation_config or {}
        eos = _ids(gen.get("eos_token_id")) or _ids(cfg.get("eos_token_id"))
        vocab = cfg.get("vocab_size")
        bos = _ids(cfg.get("bos_token_id")) or _ids(gen.get("bos_token_id"))
        return cls(vocab_size=vocab if _is_id(vocab) and vocab > 0 else None, bos_id=_first(bos),
                   eos_ids=eos, pad_id=_first(_ids(cfg.get("pad_token_id"))),
                   unk_id=_first(_ids(cfg.get("unk_token_id"))))

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> ConfigFacts:
        return cls(vocab_size=spec.vocab or None, bos_id=spec.bos_token_id, eos_ids=tuple(spec.eos_token_ids))


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


# --- small validators ---------------------------------------------------------------------------


def _is_id(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < MAX_VOCAB


def _ids(value: Any) -> tuple[int, ...]:
    if _is_id(value):
        return (value,)
    if isinstance(value, list):
        return tuple(v for v in value if _is_id(v))
    return ()


def _first(ids: tuple[int, ...]) -> int | None:
    return ids[0] if ids else None


def _content(entry: Any) -> str | None:
    """A special token as tokenizer_config writes it: a string or {"content": ...}."""
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) and isinstance(entry.get("content"), str):
        return entry["content"]
    return None


# --- tokenizer_config / special_tokens_map / chat template (cheap) ------------------------------


class _SideFiles(NamedTuple):
    config: dict[str, Any]  # tokenizer_config.json, special_tokens_map.json filling gaps
    chat_template: Any
    origin: str


def _read_side_files(files: Mapping[str, Path]) -> _SideFiles:
    tc: dict[str, Any] = {}
    origins = []
    if "tokenizer_config.json" in files:
        tc = read_json_object(files["tokenizer_config.json"], what="tokenizer_config.json")
        origins.append("tokenizer_config.json")
    if "special_tokens_map.json" in files:
        stm = read_json_object(files["special_tokens_map.json"], what="special_tokens_map.json")
        for typ in _SPECIAL_TYPES:
            if _content(tc.get(f"{typ}_token")) is None and _content(stm.get(f"{typ}_token")) is not None:
                tc[f"{typ}_token"] = stm[f"{typ}_token"]
        origins.append("special_tokens_map.json")
    template = tc.get("chat_template")
    # gguf-py SpecialVocab: chat_template.jinja, else chat_template.json, when tokenizer_config has none.
    if template is None and "chat_template.jinja" in files:
        template = _read_text(files["chat_template.jinja"])
        origins.append("chat_template.jinja")
    elif template is None and "chat_template.json" in files:
        ct = read_json_object(files["chat_template.json"], what="chat_template.json")
        template = ct.get("chat_template")
        origins.append("chat_template.json")
    return _SideFiles(tc, template, " + ".join(origins))


def _read_text(path: Path) -> str:
    data = _read_bounded(path, what="chat template")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"Cannot read chat template '{path}': not UTF-8 text ({e.reason} at byte {e.start}). "
                          f"Re-save it as UTF-8.", path) from e


def _read_bounded(path: Path, *, what: str) -> bytes:
    """Bounded raw read (used for the Jinja template, which is not JSON)."""
    max_bytes = constants.JSON_MAX_BYTES
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise ConfigError(f"Cannot read {what} '{path}': {size} bytes is larger than the {max_bytes}-byte "
                              f"limit for this kind of file.", path)
        with path.open("rb") as fh:
            return fh.read(size + 1)  # read(n) allocates n bytes up front: ask for the size, not the cap
    except OSError as e:
        raise ConfigError(f"Cannot read {what} '{path}': {e.strerror or e}.", path) from e


def _class_vocab_type(tc: Mapping[str, Any], files: Mapping[str, Path]) -> tuple[str, str | None]:
    cls = str(tc.get("tokenizer_class") or "")
    low = cls.lower().replace("_", "")
    for needle, vtype in _CLASS_TYPES:
        if needle in low:
            return vtype, cls
    if "tokenizer.model" in files:
        return "SPM", "sentencepiece"  # tokenizer.model is a SentencePiece model (llama.cpp reads it as SPM)
    return "UNKNOWN", cls or None


# --- special ids and add_bos/add_eos (gguf-py SpecialVocab, simplified) ------------------------


def _special_contents(tc: dict[str, Any], post_processor: Any) -> tuple[dict[str, str], dict[str, bool], list[str]]:
    """Special token contents per type and the add_* flags, as SpecialVocab derives them.

    Order (gguf-py vocab.py `_try_load_from_tokenizer_json`): cls stands in for a missing bos and
    sep for a missing eos; the post-processor's TemplateProcessing decides add_bos (first special
    is bos/cls) and add_eos (a trailing special becomes eos); tokenizer_config's explicit
    add_bos_token/add_eos_token booleans win.
    """
    contents = {typ: c for typ in _SPECIAL_TYPES if (c := _content(tc.get(f"{typ}_token"))) is not None}
    if "bos" not in contents and "cls" in contents:
        contents["bos"] = contents["cls"]
    if "eos" not in contents and "sep" in contents:
        contents["eos"] = contents["sep"]
    add: dict[str, bool] = {}
    notes: list[str] = []
    processors = []
    if isinstance(post_processor, dict):
        inner = post_processor.get("processors")
        processors = [p for p in inner if isinstance(p, dict)] if isinstance(inner, list) else [post_processor]
    for proc in processors:
        if proc.get("type") == "RobertaProcessing":
            add["bos"] = add["eos"] = True
        elif proc.get("type") == "TemplateProcessing":
            single = proc.get("single")
            if not isinstance(single, list) or len(single) <= 1:
                continue
            first = _template_special(single[0])
            last = _template_special(single[-1])
            if first is not None:
                contents.setdefault("bos", first)
                add["bos"] = first in (contents.get("bos"), contents.get("cls"))
            if last is not None:
                if contents.get("eos") not in (None, last):
                    notes.append(f"post-processor appends '{last}', which becomes the eos token (as in gguf-py)")
                contents["eos"] = last
                add["eos"] = True
    for typ in ("bos", "eos"):
        flag = tc.get(f"add_{typ}_token")
        if isinstance(flag, bool):
            add[typ] = flag
    return contents, add, notes


def _template_special(item: Any) -> str | None:
    if isinstance(item, dict) and isinstance(item.get("SpecialToken"), dict):
        sid = item["SpecialToken"].get("id")
        return sid if isinstance(sid, str) else None
    return None


def _resolve_ids(contents: Mapping[str, str], lookup: Mapping[str, int], facts: ConfigFacts) -> dict[str, int]:
    """Special ids: token content looked up among added/special tokens, else config.json's id."""
    out = {typ: lookup[c] for typ, c in contents.items() if c in lookup}
    fallback = {"bos": facts.bos_id, "eos": _first(facts.eos_ids), "pad": facts.pad_id, "unk": facts.unk_id}
    for typ, tid in fallback.items():
        if typ not in out and tid is not None:
            out[typ] = tid
    return out


def _decoder_added_tokens(tc: Mapping[str, Any]) -> dict[str, int]:
    """tokenizer_config.json added_tokens_decoder {"id": {"content": ...}} -> content -> id."""
    dec = tc.get("added_tokens_decoder")
    out: dict[str, int] = {}
    if isinstance(dec, dict):
        for k, v in dec.items():
            c = _content(v)
            if c is not None and str(k).isdigit() and _is_id(int(k)):
                out.setdefault(c, int(k))
    return out


# --- the id -> token table (tokenizer.json / vocab.json) ---------------------------------------


class _Table(NamedTuple):
    model: str  # BPE | Unigram | WordPiece | WordLevel
    tokens: tuple[str, ...]
    vocab_size: int  # distinct tokens, added included (len(tokenizer))
    base_vocab_size: int  # model vocabulary without added tokens (HF tokenizer.vocab_size)
    added: dict[str, int]  # added token content -> id
    special: tuple[str, ...]  # added tokens flagged special, by id
    gaps: int


def _model_vocab(model: Mapping[str, Any], origin: str) -> tuple[str, dict[str, int]]:
    kind = model.get("type")
    vocab = model.get("vocab")
    if kind is None:  # files written before tokenizers 0.10 omit "type"
        kind = "Unigram" if isinstance(vocab, list) else "BPE" if "merges" in model else \
            "WordPiece" if "continuing_subword_prefix" in model else "WordLevel"
    if kind == "Unigram":
        if not isinstance(vocab, list):
            raise _bad(origin, "model.vocab", "a list of [piece, score]", type(vocab).__name__)
        table: dict[str, int] = {}
        for i, item in enumerate(vocab):
            if not (isinstance(item, list) and item and isinstance(item[0], str)):
                raise _bad(origin, f"model.vocab[{i}]", "[piece, score]", repr(item)[:40])
            table.setdefault(item[0], i)
        return kind, table
    if kind not in ("BPE", "WordPiece", "WordLevel"):
        raise ConfigError(f"Cannot read tokenizer model from '{origin}': model type '{kind}' is not supported "
                          f"(expected BPE, Unigram, WordPiece or WordLevel). Pair with a GGUF or catalog name "
                          f"instead.", origin, key="model.type")
    if not isinstance(vocab, dict):
        raise _bad(origin, "model.vocab", "an object {token: id}", type(vocab).__name__)
    ids = vocab.values()
    # One pass in C for the common case; the slow loop only runs to name the offending entry.
    if not all(type(t) is int for t in ids) or (ids and (min(ids) < 0 or max(ids) >= MAX_VOCAB)):
        tok, tid = next((k, v) for k, v in vocab.items() if not _is_id(v))
        raise _bad(origin, f"model.vocab[{tok!r}]", f"an integer id in [0, {MAX_VOCAB})", repr(tid)[:40])
    return str(kind), vocab


def _bad(origin: str, key: str, expected: str, got: str) -> ConfigError:
    return ConfigError(f"Cannot read tokenizer vocabulary from '{origin}': '{key}' is malformed (expected "
                       f"{expected}, got {got}). Re-save the tokenizer with a current tokenizers release.",
                       origin, key=key)


def _build_table(kind: str, vocab: Mapping[str, int], added_tokens: Any, origin: str) -> _Table:
    by_id = {tid: tok for tok, tid in reversed(vocab.items())}  # reversed: the first token wins an id
    added: dict[str, int] = {}
    special: list[tuple[int, str]] = []
    if added_tokens is not None and not isinstance(added_tokens, list):
        raise _bad(origin, "added_tokens", "a list", type(added_tokens).__name__)
    for i, a in enumerate(added_tokens or []):
        if not (isinstance(a, dict) and _is_id(a.get("id")) and isinstance(a.get("content"), str)):
            raise _bad(origin, f"added_tokens[{i}]", "{\"id\": int, \"content\": str}", repr(a)[:60])
        by_id[a["id"]] = a["content"]
        added.setdefault(a["content"], a["id"])
        if a.get("special"):
            special.append((a["id"], a["content"]))
    size = max(by_id) + 1 if by_id else 0
    # The table is sized by the largest id, which costs the file one number: bound the unused ids
    # by the ids actually present, so a 60-byte file cannot claim a 16M-entry table.
    max_gaps = max(len(by_id), MAX_TOKENIZER_GAPS)
    if size - len(by_id) > max_gaps:
        raise _bad(origin, "ids", f"at most {max_gaps} ids without a token below the largest id",
                   f"{size - len(by_id)} unused ids below id {size - 1}")
    table: list[str | None] = [None] * size
    for tid, tok in by_id.items():
        table[tid] = tok
    # A gap (an id no token uses) is what convert_hf_to_gguf writes as "[PAD{i}]".
    tokens = tuple(f"[PAD{i}]" if t is None else t for i, t in enumerate(table))
    distinct = len(set(vocab) | set(added))
    return _Table(kind, tokens, distinct, len(vocab), added, tuple(c for _, c in sorted(special)),
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


def _vocab_type(kind: str, tj: Mapping[str, Any]) -> str:
    if kind == "BPE":
        return "SPM" if _spm_like(tj) else "BPE"
    return {"Unigram": "UGM", "WordPiece": "WPM"}.get(kind, "NONE")


# --- public builders ----------------------------------------------------------------------------


def _as_files(files: Mapping[str, Path] | Iterable[str | Path]) -> dict[str, Path]:
    if isinstance(files, Mapping):
        return {str(k): Path(v) for k, v in files.items()}
    return {Path(p).name: Path(p) for p in files}


def fingerprint_from_located(loc: Any, text_config: Mapping[str, Any] | None = None) -> TokenizerFingerprint | None:
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
    side = _read_side_files(files)
    tc = side.config
    vtype, cls = _class_vocab_type(tc, files)
    contents, add, notes = _special_contents(tc, None)
    ids = _resolve_ids(contents, _decoder_added_tokens(tc), facts)
    notes.append("tokenizer.json not parsed at load time: vocab_size is config.json's; pairing reads the table")
    return TokenizerFingerprint(
        vocab_type=vtype, vocab_size=facts.vocab_size or 0, vocab_hash=None, source=side.origin or "config.json",
        bos_id=ids.get("bos"), eos_id=ids.get("eos"), eos_ids=facts.eos_ids or _ids(ids.get("eos")),
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
    side = _read_side_files(files)
    tc = side.config
    if "tokenizer.json" in files:
        path = files["tokenizer.json"]
        origin = str(path)
        tj = read_json_object(path, max_bytes=constants.TOKENIZER_JSON_MAX_BYTES, what="tokenizer.json")
        model = tj.get("model")
        if not isinstance(model, dict):
            raise _bad(origin, "model", "an object {\"type\": ..., \"vocab\": ...}", type(model).__name__)
        kind, vocab = _model_vocab(model, origin)
        table = _build_table(kind, vocab, tj.get("added_tokens"), origin)
        vtype = _vocab_type(kind, tj)
        norm_h, pre_h = section_digest(tj.get("normalizer")), section_digest(tj.get("pre_tokenizer"))
        post = tj.get("post_processor")
        source = "tokenizer.json" + (f" + {side.origin}" if side.origin else "")
    else:  # slow GPT-2 style files: vocab.json (+ merges.txt); added tokens live in tokenizer_config.json
        path = files["vocab.json"]
        origin = str(path)
        vocab = read_json(path, max_bytes=constants.TOKENIZER_JSON_MAX_BYTES, what="vocab.json")
        if not isinstance(vocab, dict):
            raise _bad(origin, "(top level)", "an object {token: id}", type(vocab).__name__)
        kind, vocab = _model_vocab({"type": "BPE", "vocab": vocab}, origin)
        dec = [{"id": i, "content": c, "special": True} for c, i in _decoder_added_tokens(tc).items()]
        table = _build_table(kind, vocab, dec, origin)
        vtype, norm_h, pre_h, post = "BPE", None, None, None
        source = "vocab.json" + (f" + {side.origin}" if side.origin else "")
    lookup = {**_decoder_added_tokens(tc), **table.added}
    contents, add, notes = _special_contents(tc, post)
    ids = _resolve_ids(contents, lookup, facts)
    if table.gaps:
        notes.append(f"{table.gaps} id(s) below the largest have no token (converted GGUFs hold [PAD{{i}}] there)")
    return TokenizerFingerprint(
        vocab_type=vtype, vocab_size=table.vocab_size, vocab_hash=vocab_digest(table.tokens), source=source,
        tokens=table.tokens, bos_id=ids.get("bos"), eos_id=ids.get("eos"),
        eos_ids=facts.eos_ids or _ids(ids.get("eos")), pad_id=ids.get("pad"), unk_id=ids.get("unk"),
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
        if v is not None and not _is_id(v):
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
        bos_id=facts_in.get("bos_id"), eos_id=eos, eos_ids=config.eos_ids or _ids(eos), pad_id=facts_in.get("pad_id"),
        add_bos=flags["add_bos"], add_eos=flags["add_eos"], family=str(family) if family else None,
        basis="catalog", vocab_size_source=f"catalog ({src})", base_vocab_size=facts_in.get("base_vocab_size"),
        config_vocab_size=config.vocab_size, has_chat_template=flags["chat_template"])
