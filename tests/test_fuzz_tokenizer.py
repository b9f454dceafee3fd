"""Fuzz the tokenizer readers: tokenizer.json (BPE, Unigram, WordPiece), vocab.json, tokenizer_config.json,
special_tokens_map.json and chat templates, read for a fingerprint and through `planner pair`.

Base inputs are written by the `tokenizers` library itself (Tokenizer.to_str, tests/fuzz/tokenizer_inputs.py),
so they are the exact layout real repositories hold; the side files follow transformers' save_pretrained.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from planner.sources.tokenizer import fingerprint_from_files
from planner.sources.tokenizer_special import ConfigFacts

from .fuzz.harness import (
    HOSTILE_STRINGS,
    dump_json,
    extreme_variants,
    field_variants,
    fuzz_settings,
    mutate_bytes,
    mutate_json,
    pick,
    run_cli,
    run_reader,
    scratch,
)
from .fuzz.tokenizer_inputs import TOKENIZER_CONFIG, TOKENIZER_MODEL_CONFIG, TOKENIZERS

SPECIAL_MAP = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": {"content": "<unk>"}}
VOCAB_JSON = {"a": 0, "b": 1, "ab": 2, "<|endoftext|>": 3}


@st.composite
def hostile_tokenizer_files(draw: st.DrawFn) -> dict[str, bytes]:
    """A tokenizer directory with one or more files mutated (JSON fields or raw bytes)."""
    files: dict[str, object] = {}
    kind = pick(draw, ["bpe", "unigram", "wordpiece", "vocab.json", "side-only"])
    if kind in TOKENIZERS:
        files["tokenizer.json"] = TOKENIZERS[kind]
    elif kind == "vocab.json":
        files["vocab.json"] = VOCAB_JSON
        files["merges.txt"] = b"#version: 0.2\na b\n"
    files["tokenizer_config.json"] = TOKENIZER_CONFIG
    if draw(st.booleans()):
        files["special_tokens_map.json"] = SPECIAL_MAP
    if draw(st.integers(0, 3)) == 0:
        files["chat_template.jinja"] = pick(draw, [s.encode("utf-8", "surrogatepass") for s in HOSTILE_STRINGS]
                                            + [b"\xff\xfe{{", b"{% raw %}" * 1000])
    targets = [n for n, v in files.items() if isinstance(v, dict)]
    out: dict[str, bytes] = {}
    hit = set(draw(st.lists(st.sampled_from(targets), min_size=1, max_size=2)))
    for name, value in files.items():
        if isinstance(value, bytes):
            out[name] = value
        elif name not in hit:
            out[name] = json.dumps(value).encode()
        elif draw(st.integers(0, 4)) == 0:
            out[name] = draw(mutate_bytes(json.dumps(value).encode()))
        else:
            out[name] = dump_json(draw(mutate_json(value, max_ops=3)))
    return out


def _write(d: Path, files: dict[str, bytes]) -> dict[str, Path]:
    for name, data in files.items():
        (d / name).write_bytes(data)
    return {name: d / name for name in files}


def test_base_tokenizers_are_valid(tmp_path):
    sizes = {"bpe": 18, "unigram": 4, "wordpiece": 5}
    for kind, tj in TOKENIZERS.items():
        d = tmp_path / kind
        d.mkdir()
        paths = _write(d, {"tokenizer.json": json.dumps(tj).encode(),
                           "tokenizer_config.json": json.dumps(TOKENIZER_CONFIG).encode()})
        fp = fingerprint_from_files(paths)
        assert fp.basis == "tokens" and fp.vocab_size == sizes[kind], kind
    fp = fingerprint_from_files(_write(tmp_path, {"vocab.json": json.dumps(VOCAB_JSON).encode()}))
    assert fp.vocab_size == 4 and fp.tokens == ("a", "b", "ab", "<|endoftext|>")


@fuzz_settings(300)
@given(hostile_tokenizer_files())
def test_fuzz_tokenizer_reader(files):
    with scratch() as d:
        paths = _write(d, files)
        facts = ConfigFacts(vocab_size=18, bos_id=0, eos_ids=(1,))
        run_reader(lambda: fingerprint_from_files(paths, facts=facts), list(paths.values()),
                   input_bytes=sum(map(len, files.values())))


@fuzz_settings(30, cli=True)
@given(hostile_tokenizer_files())
def test_fuzz_tokenizer_cli(files):
    with scratch() as d:
        good, bad = d / "target", d / "draft"
        good.mkdir()
        bad.mkdir()
        _write(good, {"config.json": json.dumps(TOKENIZER_MODEL_CONFIG).encode(),
                      "tokenizer.json": json.dumps(TOKENIZERS["bpe"]).encode(),
                      "tokenizer_config.json": json.dumps(TOKENIZER_CONFIG).encode()})
        paths = _write(bad, {"config.json": json.dumps(TOKENIZER_MODEL_CONFIG).encode(), **files})
        run_cli(["pair", str(good), str(bad), "--json"], list(paths.values()))


def test_every_number_in_each_tokenizer_file_at_an_extreme(tmp_path):
    """Ids, scores and sizes one at a time at values just under the caps (a 16M-entry table from a
    60-byte file was the bug this found: ids now bound the table, not the largest id alone)."""
    docs = {**{f"{k}/tokenizer.json": v for k, v in TOKENIZERS.items()},
            "bpe/tokenizer_config.json": TOKENIZER_CONFIG, "vocab/vocab.json": VOCAB_JSON}
    for where, doc in docs.items():
        sub, name = where.split("/")
        for i, (_path, _value, bad) in enumerate(extreme_variants(doc)):
            d = tmp_path / f"{sub}-{name}-{i}"
            d.mkdir()
            files = {name: json.dumps(bad).encode()}
            if name == "tokenizer_config.json":
                files["tokenizer.json"] = json.dumps(TOKENIZERS["bpe"]).encode()
            paths = _write(d, files)
            run_reader(lambda paths=paths: fingerprint_from_files(paths), [d / name],
                       input_bytes=sum(map(len, files.values())))


def test_every_field_of_each_tokenizer_file_wrong(tmp_path):
    """Each field (to depth 3: model.vocab entries, added_tokens items, post_processor parts) at a wrong type."""
    docs = {"bpe/tokenizer.json": TOKENIZERS["bpe"], "unigram/tokenizer.json": TOKENIZERS["unigram"],
            "bpe/tokenizer_config.json": TOKENIZER_CONFIG, "bpe/special_tokens_map.json": SPECIAL_MAP,
            "vocab/vocab.json": VOCAB_JSON}
    for where, doc in docs.items():
        sub, name = where.split("/")
        for i, (_path, _value, bad) in enumerate(field_variants(doc, (None, -1, "x", [], {}))):
            d = tmp_path / f"{sub}-{name}-{i}"
            d.mkdir()
            files = {name: dump_json(bad)}
            if name != "tokenizer.json" and sub == "bpe":
                files["tokenizer.json"] = json.dumps(TOKENIZERS["bpe"]).encode()
            paths = _write(d, files)
            run_reader(lambda paths=paths: fingerprint_from_files(paths), [d / name], trace=False)
