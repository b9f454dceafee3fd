"""Tokenizer fingerprints: real files (a BERT tokenizer), tokenizers built offline, bounds, laziness.

Every expected value comes from the `tokenizers` library reading the same file (id_to_token,
get_vocab_size, token_to_id), from hashlib, or from the construction itself.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from pathlib import Path

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from planner.core import constants
from planner.core.errors import ConfigError
from planner.sources import load_spec
from planner.sources.tokenizer import (
    fingerprint_for,
    fingerprint_from_catalog,
    fingerprint_from_files,
    vocab_digest,
)
from planner.sources.tokenizer_special import ConfigFacts

from .conftest import FIXTURES, model_dir

BERT = FIXTURES / "tokenizers" / "all-MiniLM-L6-v2"
SYLLABLES = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "zu", "qua", "xe", "do", "fi", "gu", "he",
             "ja", "bo", "cy", "wu"]


# --- builders shared with test_pairing ------------------------------------------------------------


def corpus(seed: int, lines: int = 1500) -> list[str]:
    """Deterministic pseudo-text: a different seed gives other words, so other BPE merges."""
    rng = random.Random(seed)
    words = ["".join(rng.choices(SYLLABLES, k=rng.randint(1, 4))) for _ in range(400)]
    return [" ".join(rng.choices(words, k=12)) for _ in range(lines)]


def trained_bpe(seed: int = 0, vocab_size: int = 320, specials=("<s>", "</s>", "<pad>"),
                bos: str | None = "<s>") -> Tokenizer:
    """A byte-level BPE (GPT-2/Llama-3 style) trained offline; `bos` prepended by the post-processor."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(specials), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(seed), trainer)
    if bos:
        tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                           special_tokens=[(bos, tok.token_to_id(bos))])
    return tok


def word_tokenizer(words, *, prefix: str, specials, spm: bool = False, bos: str | None = None) -> Tokenizer:
    """A BPE tokenizer with a hand-made vocabulary: specials first, then prefix + word (no merges).

    spm=True builds the SentencePiece-style export (byte_fallback, Metaspace '▁') that llama.cpp
    converts as SPM; otherwise byte-level ('Ġ') BPE.
    """
    vocab = {s: i for i, s in enumerate(specials)}
    for w in words:
        vocab.setdefault(prefix + w, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], byte_fallback=spm, unk_token=specials[0] if spm else None))
    tok.add_special_tokens(list(specials))
    if spm:
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
    if bos:
        tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", special_tokens=[
            (bos, tok.token_to_id(bos))])
    return tok


def tokenizer_dir(root: Path, label: str, tok: Tokenizer | None, *, base: str = "Qwen2.5-0.5B",
                  tokenizer_config: dict | None = None, vocab_size: int | None = None, **config) -> Path:
    """A model directory: reference config `base` (vocab_size defaulting to len(tokenizer)) + tokenizer files."""
    if vocab_size is None and tok is not None:
        vocab_size = tok.get_vocab_size(with_added_tokens=True)
    overrides = dict(config)
    if vocab_size is not None:
        overrides["vocab_size"] = vocab_size
    d = model_dir(root / label, base, **overrides)
    if tok is not None:
        tok.save(str(d / "tokenizer.json"))
    if tokenizer_config is not None:
        (d / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    return d


def bert_dir(root: Path, label: str = "bert", *, base: str = "Qwen2.5-0.5B", **config) -> Path:
    """The real BERT tokenizer files under a decoder config (the planner sizes decoders only)."""
    d = model_dir(root / label, base, vocab_size=30522, **config)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(BERT / name, d / name)
    return d


# --- a real tokenizer file ------------------------------------------------------------------------


def test_real_bert_tokenizer_matches_the_tokenizers_library():
    files = [BERT / n for n in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")]
    fp = fingerprint_from_files(files)
    ref = Tokenizer.from_file(str(BERT / "tokenizer.json"))
    assert fp.basis == "tokens" and fp.vocab_type == "WPM" and fp.model_name == "WordPiece"
    assert fp.vocab_size == ref.get_vocab_size(with_added_tokens=True) == 30522
    assert fp.base_vocab_size == ref.get_vocab_size(with_added_tokens=False)
    assert len(fp.tokens) == 30522
    assert all(fp.tokens[i] == ref.id_to_token(i) for i in range(30522))
    # gguf-py SpecialVocab: no bos/eos in tokenizer_config -> cls/sep stand in; the post-processor
    # "[CLS] $A [SEP]" sets add_bos and add_eos (what convert_hf_to_gguf writes for BERT).
    assert (fp.bos_id, fp.eos_id) == (ref.token_to_id("[CLS]"), ref.token_to_id("[SEP]"))
    assert fp.add_bos is True and fp.add_eos is True
    assert (fp.pad_id, fp.unk_id) == (ref.token_to_id("[PAD]"), ref.token_to_id("[UNK]"))
    assert fp.special_tokens == ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    assert fp.vocab_hash == hashlib.sha256("\x00".join(ref.id_to_token(i) for i in range(30522))
                                           .encode("utf-8")).hexdigest()
    tj = json.loads((BERT / "tokenizer.json").read_text())
    canon = json.dumps(tj["normalizer"], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert fp.normalizer_hash == hashlib.sha256(canon.encode()).hexdigest()
    assert fp.has_chat_template is False and fp.chat_template_hash is None


# --- tokenizers built offline ---------------------------------------------------------------------


def test_trained_byte_level_bpe(tmp_path):
    tok = trained_bpe(seed=1, vocab_size=320)
    d = tokenizer_dir(tmp_path, "bpe", tok, tokenizer_config={"bos_token": "<s>", "eos_token": "</s>",
                                                              "pad_token": "<pad>"})
    fp = fingerprint_from_files({"tokenizer.json": d / "tokenizer.json",
                                 "tokenizer_config.json": d / "tokenizer_config.json"},
                                facts=ConfigFacts(vocab_size=tok.get_vocab_size(True) + 64))
    assert fp.vocab_type == "BPE" and fp.model_name == "BPE"
    assert fp.vocab_size == tok.get_vocab_size(with_added_tokens=True)
    assert fp.base_vocab_size == tok.get_vocab_size(with_added_tokens=False)
    assert fp.tokens == tuple(tok.id_to_token(i) for i in range(fp.vocab_size))
    assert (fp.bos_id, fp.eos_id, fp.pad_id) == tuple(tok.token_to_id(t) for t in ("<s>", "</s>", "<pad>"))
    assert fp.add_bos is True  # TemplateProcessing "<s> $A"
    assert fp.add_eos is None  # nothing appended, tokenizer_config silent: llama.cpp's default decides
    # n_vocab as llama.cpp sees it: the converted list is padded to config vocab_size with [PAD{i}].
    assert fp.n_vocab == fp.vocab_size + 64
    assert fp.token_text(fp.vocab_size + 3) == f"[PAD{fp.vocab_size + 3}]"


def test_tokenizer_config_flag_overrides_post_processor(tmp_path):
    tok = trained_bpe(seed=2)
    d = tokenizer_dir(tmp_path, "x", tok, tokenizer_config={"bos_token": "<s>", "add_bos_token": False,
                                                            "add_eos_token": True, "eos_token": "</s>"})
    fp = fingerprint_from_files([d / "tokenizer.json", d / "tokenizer_config.json"])
    assert fp.add_bos is False and fp.add_eos is True


def test_sentencepiece_style_bpe_is_spm_and_unigram_is_ugm(tmp_path):
    spm = word_tokenizer(["a", "b", "c"], prefix="▁", specials=("<unk>", "<s>", "</s>"), spm=True)
    uni = Tokenizer(models.Unigram([("<unk>", 0.0), ("▁a", -1.0), ("▁b", -2.0)], unk_id=0))
    for name, tok, want in (("spm", spm, "SPM"), ("uni", uni, "UGM")):
        d = tokenizer_dir(tmp_path, name, tok)
        fp = fingerprint_from_files([d / "tokenizer.json"])
        assert fp.vocab_type == want
        assert fp.tokens == tuple(tok.id_to_token(i) for i in range(tok.get_vocab_size(True)))


def test_special_ids_fall_back_to_special_tokens_map_then_config(tmp_path):
    tok = trained_bpe(seed=3, bos=None)
    d = tokenizer_dir(tmp_path, "m", tok)
    (d / "special_tokens_map.json").write_text(json.dumps({"eos_token": {"content": "</s>"}}))
    fp = fingerprint_from_files([d / "tokenizer.json", d / "special_tokens_map.json"],
                                facts=ConfigFacts(bos_id=7, eos_ids=(9,)))
    assert fp.eos_id == tok.token_to_id("</s>")  # special_tokens_map beats config
    assert fp.bos_id == 7  # nothing names a bos token: config.json's id, as gguf-py does
    assert fp.eos_ids == (9,)  # generation stops on generation_config/config ids


def test_gaps_become_pad_fillers(tmp_path):
    tok = word_tokenizer(["a", "b"], prefix="Ġ", specials=("<|end|>",))
    tj = json.loads(tok.to_str())
    tj["added_tokens"].append({"id": 10, "content": "<|late|>", "special": True, "single_word": False,
                               "lstrip": False, "rstrip": False, "normalized": False})
    p = tmp_path / "tokenizer.json"
    p.write_text(json.dumps(tj))
    fp = fingerprint_from_files([p])
    assert len(fp.tokens) == 11 and fp.tokens[10] == "<|late|>"
    assert fp.tokens[3:10] == tuple(f"[PAD{i}]" for i in range(3, 10))
    assert fp.vocab_size == 4  # distinct tokens, as len(tokenizer)
    assert any("7 id(s)" in n for n in fp.notes)


def test_chat_template_digest_from_config_or_jinja(tmp_path):
    template = "{% for m in messages %}<|im_start|>{{ m['content'] }}<|im_end|>{% endfor %}"
    want = hashlib.sha256(template.encode()).hexdigest()
    tok = trained_bpe(seed=4)
    a = tokenizer_dir(tmp_path, "a", tok, tokenizer_config={"chat_template": template})
    b = tokenizer_dir(tmp_path, "b", tok, tokenizer_config={})
    (b / "chat_template.jinja").write_text(template)
    fa = fingerprint_from_files([a / "tokenizer.json", a / "tokenizer_config.json"])
    fb = fingerprint_from_files([b / "tokenizer.json", b / "tokenizer_config.json", b / "chat_template.jinja"])
    assert fa.chat_template_hash == fb.chat_template_hash == want
    assert fa.has_chat_template and fb.has_chat_template


def test_vocab_digest_drops_trailing_padding_only():
    toks = ["<s>", "a", "b"]
    want = hashlib.sha256("\x00".join(toks).encode()).hexdigest()
    assert vocab_digest(toks) == want
    assert vocab_digest([*toks, "[PAD3]", "[PAD4]"]) == want
    assert vocab_digest(["<s>", "[PAD1]", "b"]) != vocab_digest(["<s>", "b"])  # inner gaps are real ids


# --- bad input ------------------------------------------------------------------------------------


def test_tokenizer_json_read_is_bounded(tmp_path, monkeypatch):
    tok = trained_bpe(seed=5)
    p = tmp_path / "tokenizer.json"
    tok.save(str(p))
    monkeypatch.setattr(constants, "TOKENIZER_JSON_MAX_BYTES", p.stat().st_size - 1)
    with pytest.raises(ConfigError, match="larger than the"):
        fingerprint_from_files([p])


@pytest.mark.parametrize("content, match", [
    ("{oops", "invalid JSON"),
    (json.dumps({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}}), "model.vocab"),
    (json.dumps({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []}}), "model.vocab"),
    (json.dumps({"model": {"type": "Mystery", "vocab": {}}}), "not supported"),
    (json.dumps({"model": {"type": "Unigram", "vocab": [[1, 2]]}}), r"model.vocab\[0\]"),
    (json.dumps({"model": {"type": "BPE", "vocab": {"a": 0}}, "added_tokens": [{"id": "x"}]}), "added_tokens"),
    (json.dumps({"version": "1.0"}), "'model'"),
    (json.dumps([1, 2]), "expected a JSON object"),
])
def test_malformed_tokenizer_json_is_a_config_error(tmp_path, content, match):
    p = tmp_path / "tokenizer.json"
    p.write_text(content)
    with pytest.raises(ConfigError, match=match) as e:
        fingerprint_from_files([p])
    assert str(tmp_path) in str(e.value)


def test_malformed_catalog_facts():
    good = {"vocab_type": "BPE", "family": "x", "vocab_size": 10}
    assert fingerprint_from_catalog(good, origin="catalog:x").basis == "catalog"
    for bad, key in (({**good, "vocab_type": "WORD"}, "vocab_type"), ({**good, "vocab_size": -3}, "vocab_size"),
                     ({**good, "add_bos": "yes"}, "add_bos"), ({**good, "vocab_size": None}, "vocab_size")):
        with pytest.raises(ConfigError, match=key):
            fingerprint_from_catalog(bad, origin="catalog:x")


# --- load time: cheap; pairing time: full and cached ----------------------------------------------


def test_load_spec_never_parses_tokenizer_json(tmp_path):
    tc = {"bos_token": "<|begin|>", "eos_token": {"content": "<|end|>"}, "chat_template": "{{ x }}",
          "tokenizer_class": "PreTrainedTokenizerFast",
          "added_tokens_decoder": {"128000": {"content": "<|begin|>"}, "128001": {"content": "<|end|>"}}}
    d = tokenizer_dir(tmp_path, "lazy", None, base="Llama-3.1-8B", tokenizer_config=tc)
    (d / "tokenizer.json").write_text("{ this is not json")  # would raise if anything parsed it
    spec = load_spec(str(d))
    fp = spec.tokenizer
    assert fp.basis == "config" and fp.tokens is None
    assert (fp.bos_id, fp.eos_id) == (128000, 128001)
    assert fp.vocab_size == fp.config_vocab_size == 128256 and "not read" in fp.vocab_size_source
    assert fp.chat_template_hash == hashlib.sha256(b"{{ x }}").hexdigest()
    with pytest.raises(ConfigError, match="invalid JSON"):
        fingerprint_for(spec)  # pairing is what reads the table


def test_fingerprint_for_reads_the_table_once(tmp_path):
    tok = trained_bpe(seed=6)
    d = tokenizer_dir(tmp_path, "full", tok, tokenizer_config={"bos_token": "<s>"})
    spec = load_spec(str(d))
    first = fingerprint_for(spec)
    assert first.basis == "tokens" and first.config_vocab_size == spec.vocab
    assert fingerprint_for(spec) is first  # cached by path, size and mtime
    assert first.bos_id == tok.token_to_id("<s>")


def test_catalog_entry_gives_catalog_facts():
    spec = load_spec("qwen2.5-0.5b")
    fp = spec.tokenizer
    assert fp.basis == "catalog" and fp.family and fp.tokens is None
    # n_vocab = max(len(tokenizer), config vocab_size): the converted GGUF's list length.
    assert fp.n_vocab == max(fp.vocab_size, spec.vocab) and fp.config_vocab_size == spec.vocab
