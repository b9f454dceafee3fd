"""GGUF `tokenizer.ggml.*` keys -> TokenizerFingerprint, with llama.cpp's defaults.

Why llama.cpp's defaults: a GGUF pair is checked against llama.cpp's draft rule
(common/speculative.cpp `common_speculative_are_compatible`: same vocab type, same
add_bos/add_eos and ids, |n_vocab| within 128, equal token text from id 5 on), and
llama.cpp fills absent keys from the tokenizer model (src/llama-vocab.cpp
`llama_vocab::impl::load`), so the fingerprint must hold what llama.cpp will use.

vocab_hash = sha256 of the token strings joined with "\\x00" (UTF-8), the same
definition the Hugging Face fingerprint uses, so a GGUF and its source repo match.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..core.errors import ConfigError
from ..core.spec import TokenizerFingerprint
from .gguf_header import ARRAY, BOOL, INT32, INTEGER_TYPES, STRING, GGUFHeader, SkippedArray

# tokenizer.ggml.model -> llama.cpp vocab type (llama-vocab.cpp load(): "llama" SPM, "bert" WPM,
# "gpt2"/"hybriddna"/"whitespace"/"gemma4" BPE, "t5" UGM, "rwkv" RWKV, "plamo2" PLAMO2, "none"/"no_vocab" NONE).
VOCAB_TYPES = {"llama": "SPM", "gpt2": "BPE", "bert": "WPM", "t5": "UGM", "rwkv": "RWKV", "plamo2": "PLAMO2",
               "none": "NONE", "no_vocab": "NONE", "gemma4": "BPE", "hybriddna": "BPE", "whitespace": "BPE"}
# Default (bos, eos, unk) ids per tokenizer model before the GGUF keys override them (same source).
_DEFAULT_IDS: dict[str, tuple[int | None, int | None, int | None]] = {
    "llama": (1, 2, 0), "bert": (101, None, 100), "gpt2": (11, 11, None), "hybriddna": (11, 11, None),
    "whitespace": (11, 11, None), "t5": (None, 1, 2), "rwkv": (None, None, None), "plamo2": (1, 2, 0),
    "gemma4": (None, None, None),
}
# add_bos / add_eos defaults per vocab type (llama-vocab.cpp: SPM and WPM add BOS, UGM adds EOS).
_DEFAULT_ADD = {"SPM": (True, False), "WPM": (True, False), "UGM": (False, True), "RWKV": (False, False)}
# BPE pre-tokenizers for which llama.cpp sets add_bos = true before reading the keys.
_BPE_ADD_BOS_PRE = frozenset({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
                              "lfm2", "jina-v5-nano", "tekken", "chameleon"})
# BPE pre-tokenizers whose BOS default is "none" (ChatGLM-4).
_BPE_NO_BOS_PRE = frozenset({"glm4", "chatglm-bpe"})
CONTROL = 3  # llama_token_type LLAMA_TOKEN_TYPE_CONTROL (gguf.constants.TokenType.CONTROL)


def vocab_hash(tokens: tuple[str, ...]) -> str:
    """sha256 of the token strings (id order) joined with NUL, UTF-8 encoded, trailing `[PAD{i}]` dropped.

    Same definition as planner/sources/tokenizer.py `vocab_digest` (HF files): convert_hf_to_gguf
    pads the token list up to config vocab_size with `[PAD{i}]` fillers, which the HF tokenizer
    does not have, so they are left out for a GGUF to match its source repository.
    """
    n = len(tokens)
    while n and tokens[n - 1] == f"[PAD{n - 1}]":
        n -= 1
    return hashlib.sha256("\x00".join(tokens[:n]).encode("utf-8", "surrogatepass")).hexdigest()


def _typed(h: GGUFHeader, key: str, want: Any, what: str) -> Any:
    """The value of `key` if present with an allowed type; None if absent; ConfigError otherwise."""
    if key not in h.metadata:
        return None
    vt = h.value_types[key]
    ok = vt in want if isinstance(want, frozenset) else vt == want
    if not ok:
        raise ConfigError(f"Cannot read tokenizer of '{h.path}': key '{key}' must be {what} (got GGUF type "
                          f"{vt}). Re-convert the model with a current llama.cpp.", h.path, key=key)
    return h.metadata[key]


def _token_id(h: GGUFHeader, key: str, default: int | None, n: int) -> int | None:
    # llama.cpp: a default id outside the vocab is disabled; a key outside it is ignored (default kept).
    if default is not None and default >= n:
        default = None
    v = _typed(h, key, INTEGER_TYPES, "an integer")
    if v is None or v < 0 or v >= n:
        return default
    return int(v)


def fingerprint(h: GGUFHeader) -> TokenizerFingerprint | None:
    """The tokenizer as llama.cpp will load it, or None when the file has no tokenizer.ggml.model.

    Raises:
        ConfigError: a tokenizer key has the wrong type (tokens not strings, token_type not int32),
            or the tokenizer model is one llama.cpp does not know.
    """
    model = _typed(h, "tokenizer.ggml.model", STRING, "a string")
    if model is None:
        return None
    vtype = VOCAB_TYPES.get(model)
    if vtype is None:
        raise ConfigError(f"Cannot read tokenizer of '{h.path}': tokenizer.ggml.model '{model:.40}' is not one "
                          f"llama.cpp knows (expected one of {', '.join(sorted(VOCAB_TYPES))}).", h.path,
                          key="tokenizer.ggml.model")
    tokens = _typed(h, "tokenizer.ggml.tokens", (ARRAY, STRING), "an array of strings")
    counted = isinstance(tokens, SkippedArray)  # a ledger's read: the table's length, not its strings
    n = tokens.count if counted else len(tokens) if tokens is not None else _vocab_size_key(h)
    tokens = None if counted else tuple(tokens) if tokens is not None else None
    pre = _typed(h, "tokenizer.ggml.pre", STRING, "a string")
    add_bos, add_eos = _add_flags(h, vtype, pre)
    bos_default, eos_default, unk_default = _DEFAULT_IDS.get(model, (None, None, None))
    if vtype == "BPE" and pre in _BPE_NO_BOS_PRE:
        bos_default = None
    bos = _token_id(h, "tokenizer.ggml.bos_token_id", bos_default, n)
    eos = _token_id(h, "tokenizer.ggml.eos_token_id", eos_default, n)
    eog = [i for i in (eos, _token_id(h, "tokenizer.ggml.eot_token_id", None, n),
                       _token_id(h, "tokenizer.ggml.eom_token_id", None, n)) if i is not None]
    template = _typed(h, "tokenizer.chat_template", STRING, "a string")
    return TokenizerFingerprint(
        vocab_type=vtype, vocab_size=n, vocab_hash=vocab_hash(tokens) if tokens is not None else None,
        source="gguf", tokens=tokens, bos_id=bos, eos_id=eos, eos_ids=tuple(dict.fromkeys(eog)),
        pad_id=_token_id(h, "tokenizer.ggml.padding_token_id", None, n), add_bos=add_bos, add_eos=add_eos,
        pre=pre, chat_template_hash=hashlib.sha256(template.encode("utf-8")).hexdigest() if template else None,
        special_tokens=_control_tokens(h, tokens), model_name=model,
        basis="tokens" if tokens is not None else "count" if counted else "config",
        vocab_size_source=("GGUF tokenizer.ggml.tokens" if tokens is not None else
                           "GGUF tokenizer.ggml.tokens (length only)" if counted else "GGUF {arch}.vocab_size"),
        unk_id=_token_id(h, "tokenizer.ggml.unknown_token_id", unk_default, n), has_chat_template=bool(template))


def _vocab_size_key(h: GGUFHeader) -> int:
    arch = h.architecture or ""
    v = h.metadata.get(f"{arch}.vocab_size")
    return int(v) if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def _add_flags(h: GGUFHeader, vtype: str, pre: str | None) -> tuple[bool, bool]:
    """add_bos/add_eos: llama.cpp's per-type defaults, then the GGUF keys, then the Gemma 4 override."""
    add_bos, add_eos = _DEFAULT_ADD.get(vtype, (False, False))
    if vtype == "BPE" and pre in _BPE_ADD_BOS_PRE:
        add_bos = True
    key_bos = _typed(h, "tokenizer.ggml.add_bos_token", BOOL, "true or false")
    key_eos = _typed(h, "tokenizer.ggml.add_eos_token", BOOL, "true or false")
    add_bos = add_bos if key_bos is None else bool(key_bos)
    add_eos = add_eos if key_eos is None else bool(key_eos)
    if vtype == "BPE" and pre == "gemma4":
        add_bos = True  # llama.cpp PR #21500: forced for Gemma 4
    return add_bos, add_eos


def _control_tokens(h: GGUFHeader, tokens: tuple[str, ...] | None) -> tuple[str, ...]:
    types = _typed(h, "tokenizer.ggml.token_type", (ARRAY, INT32), "an array of int32")
    if types is None or tokens is None:
        return ()
    if len(types) < len(tokens):  # llama.cpp refuses the file ("Index out of array bounds for toktypes")
        raise ConfigError(f"Cannot read tokenizer of '{h.path}': tokenizer.ggml.token_type has {len(types)} "
                          f"entries for {len(tokens)} tokens. Re-convert the model.", h.path,
                          key="tokenizer.ggml.token_type")
    return tuple(tok for tok, t in zip(tokens, types[:len(tokens)], strict=True) if t == CONTROL)

