"""Special tokens: tokenizer_config.json, special_tokens_map.json, chat templates and config ids.

Why separate: the cheap side of a tokenizer (everything but tokenizer.json) decides the special
ids and add_bos/add_eos, derived the way llama.cpp's converter does (gguf-py `SpecialVocab`), and
is read both at load time (the "config" basis) and for a full fingerprint (the "tokens" basis).
Every read is bounded and every failure is a ConfigError naming the file; config.json's ids
come in as `ConfigFacts`, the fallbacks when the tokenizer files name no id.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..core import constants
from ..core.errors import ConfigError
from ..core.jsonio import read_json_object
from ..core.spec import ModelSpec
from .tokenizer_table import is_id

# tokenizer_config.json tokenizer_class -> vocab type, for the config-only basis (substring, first hit).
_CLASS_TYPES = (("llama", "SPM"), ("gemma", "SPM"), ("mistral", "SPM"), ("t5", "UGM"), ("albert", "UGM"),
                ("xlnet", "UGM"), ("bert", "WPM"), ("mpnet", "WPM"), ("qwen", "BPE"), ("gpt2", "BPE"),
                ("gptneox", "BPE"), ("roberta", "BPE"), ("bloom", "BPE"), ("codegen", "BPE"))
_SPECIAL_TYPES = ("bos", "eos", "unk", "pad", "cls", "sep")


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
        eos = config_ids(gen.get("eos_token_id")) or config_ids(cfg.get("eos_token_id"))
        vocab = cfg.get("vocab_size")
        bos = config_ids(cfg.get("bos_token_id")) or config_ids(gen.get("bos_token_id"))
        return cls(vocab_size=vocab if is_id(vocab) and vocab > 0 else None, bos_id=first_id(bos),
                   eos_ids=eos, pad_id=first_id(config_ids(cfg.get("pad_token_id"))),
                   unk_id=first_id(config_ids(cfg.get("unk_token_id"))))

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> ConfigFacts:
        return cls(vocab_size=spec.vocab or None, bos_id=spec.bos_token_id, eos_ids=tuple(spec.eos_token_ids))


def config_ids(value: Any) -> tuple[int, ...]:
    """The ids of a config value: one id or a list of them (other entries dropped)."""
    if is_id(value):
        return (value,)
    if isinstance(value, list):
        return tuple(v for v in value if is_id(v))
    return ()


def first_id(ids: tuple[int, ...]) -> int | None:
    """The first id, or None."""
    return ids[0] if ids else None


def _content(entry: Any) -> str | None:
    """A special token as tokenizer_config writes it: a string or {"content": ...}."""
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) and isinstance(entry.get("content"), str):
        return entry["content"]
    return None


class SideFiles(NamedTuple):
    """What the tokenizer side files say: merged tokenizer_config, the chat template, where from."""

    config: dict[str, Any]  # tokenizer_config.json, special_tokens_map.json filling gaps
    chat_template: Any
    origin: str


def read_side_files(files: Mapping[str, Path]) -> SideFiles:
    """tokenizer_config.json, gaps filled from special_tokens_map.json, and the chat template."""
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
    return SideFiles(tc, template, " + ".join(origins))


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


def class_vocab_type(tc: Mapping[str, Any], files: Mapping[str, Path]) -> tuple[str, str | None]:
    """(vocab type, tokenizer class) guessed from tokenizer_class or a tokenizer.model file."""
    cls = str(tc.get("tokenizer_class") or "")
    low = cls.lower().replace("_", "")
    for needle, vtype in _CLASS_TYPES:
        if needle in low:
            return vtype, cls
    if "tokenizer.model" in files:
        return "SPM", "sentencepiece"  # tokenizer.model is a SentencePiece model (llama.cpp reads it as SPM)
    return "UNKNOWN", cls or None


def special_contents(tc: dict[str, Any], post_processor: Any) -> tuple[dict[str, str], dict[str, bool], list[str]]:
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


def resolve_ids(contents: Mapping[str, str], lookup: Mapping[str, int], facts: ConfigFacts) -> dict[str, int]:
    """Special ids: token content looked up among added/special tokens, else config.json's id."""
    out = {typ: lookup[c] for typ, c in contents.items() if c in lookup}
    fallback = {"bos": facts.bos_id, "eos": first_id(facts.eos_ids), "pad": facts.pad_id, "unk": facts.unk_id}
    for typ, tid in fallback.items():
        if typ not in out and tid is not None:
            out[typ] = tid
    return out


_ID_KEY = re.compile(r"^[0-9]{1,9}$")

def decoder_added_tokens(tc: Mapping[str, Any]) -> dict[str, int]:
    """tokenizer_config.json added_tokens_decoder {"id": {"content": ...}} -> content -> id."""
    dec = tc.get("added_tokens_decoder")
    out: dict[str, int] = {}
    if isinstance(dec, dict):
        for k, v in dec.items():
            c = _content(v)
            # ASCII digits, at most 9 ("²" is isdigit() but not int(); 5000 digits pass Python's int limit)
            if c is not None and _ID_KEY.match(str(k)) and is_id(int(k)):
                out.setdefault(c, int(k))
    return out
