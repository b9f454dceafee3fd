"""Leaping over a skipped string array (sources/gguf_values.py `_Cursor._leap_over`) never changes a header.

Why: a plain ledger needs a token table's length, not its strings, and walking 262k length prefixes was most
of a GGUF ledger's time (issue #33). The leap finds the key after the table by search; each check here
compares with the exact parse (leap=False, every string walked) and counts the strings walked, so a leap
that is not taken, or one that lands wrong and is kept, fails.
"""

from __future__ import annotations

import pytest
from gguf import GGUFEndian

from planner.core.errors import HeaderError
from planner.sources import gguf_values
from planner.sources.gguf_header import DEFAULT_SKIP, LEDGER_SKIP, parse_header, read_header
from tests.test_gguf import ARR, F32, I32, STR, U32, write_gguf

N = gguf_values.LEAP_MIN_STRINGS + 10
TOKENS = [f"t{i}" * (1 + i % 5) for i in range(N)]
MERGES = [f"m{i} n{i}" for i in range(N)]
TENSORS = [("token_embd.weight", "F16", (N, 8)), ("blk.0.attn_q.weight", "Q8_0", (32, 32))]


def tokenizer_kv(tokens=TOKENS, between=()) -> list:
    return [("tokenizer.ggml.model", "gpt2", STR), ("tokenizer.ggml.tokens", tokens, ARR, STR), *between,
            ("tokenizer.ggml.scores", [0.5] * len(tokens), ARR, F32),
            ("tokenizer.ggml.token_type", [1] * len(tokens), ARR, I32),
            ("tokenizer.ggml.merges", MERGES, ARR, STR), ("tokenizer.ggml.bos_token_id", 3, U32),
            ("general.file_type", 7, U32)]


@pytest.fixture
def walked(monkeypatch) -> list[int]:
    """Strings walked one by one (the exact path), counted."""
    counts: list[int] = []
    real = gguf_values._walk

    def counting(buf, pos, n, endian, parts):
        out = real(buf, pos, n, endian, parts)
        counts.append(out[0])
        return out

    monkeypatch.setattr(gguf_values, "_walk", counting)
    return counts


def exact(path, skip):
    return parse_header(path.read_bytes(), str(path), skip=skip, leap=False)


def same(a, b) -> None:
    assert dict(a.metadata) == dict(b.metadata)
    assert dict(a.value_types) == dict(b.value_types)
    assert (a.tensors, a.data_offset, a.alignment) == (b.tensors, b.data_offset, b.alignment)


@pytest.mark.parametrize("endian", [GGUFEndian.LITTLE, GGUFEndian.BIG])
def test_a_ledger_read_leaps_over_both_tables_and_gets_the_exact_header(tmp_path, walked, endian):
    f = write_gguf(tmp_path / "m.gguf", kv=tokenizer_kv(), tensors=TENSORS, endian=endian)
    want = exact(f, LEDGER_SKIP)
    walked.clear()
    same(read_header(f, skip=LEDGER_SKIP), want)
    assert sum(walked) == 0  # neither the tokens nor the merges were walked
    assert want.metadata["tokenizer.ggml.tokens"].count == N


def test_a_pairing_read_walks_the_tokens_it_keeps_and_leaps_over_the_merges(tmp_path, walked):
    f = write_gguf(tmp_path / "m.gguf", kv=tokenizer_kv(), tensors=TENSORS)
    want = exact(f, DEFAULT_SKIP)
    walked.clear()
    got = read_header(f, skip=DEFAULT_SKIP)
    same(got, want)
    assert got.metadata["tokenizer.ggml.tokens"] == tuple(TOKENS)
    assert sum(walked) == N  # the kept tokens, once; the merges not at all


def test_a_token_that_looks_like_the_next_key_falls_back_to_the_walk(tmp_path, walked):
    # "tokenizer.ggml.scores" as a token, its length right before it and a 2-byte token after it (whose length
    # reads as value type 2): the search's first place reads as a key, and only the rest of the header shows
    # it is not one.
    decoy = [*TOKENS[:-5], "tokenizer.ggml.scores", "ab", *TOKENS[-3:]]
    f = write_gguf(tmp_path / "m.gguf", kv=tokenizer_kv(decoy), tensors=TENSORS)
    want = exact(f, LEDGER_SKIP)
    walked.clear()
    same(read_header(f, skip=LEDGER_SKIP), want)
    assert sum(walked) >= len(decoy)  # the leap was undone: the exact walk ran


def test_a_next_key_in_another_namespace_is_not_skipped(tmp_path, walked):
    # the leap finds the next `tokenizer.` key; a `general.` key between is missed there, and the parse that
    # missed it cannot line up with the tensor infos, so the walk finds it
    f = write_gguf(tmp_path / "m.gguf", kv=tokenizer_kv(between=[("general.note", "between", STR)]),
                   tensors=TENSORS)
    want = exact(f, LEDGER_SKIP)
    walked.clear()
    got = read_header(f, skip=LEDGER_SKIP)
    same(got, want)
    assert got.metadata["general.note"] == "between"
    assert sum(walked) >= N  # the leap was undone


def test_a_table_that_is_the_last_key_is_walked(tmp_path, walked):
    f = write_gguf(tmp_path / "m.gguf", kv=[("tokenizer.ggml.tokens", TOKENS, ARR, STR)], tensors=TENSORS)
    same(read_header(f, skip=LEDGER_SKIP), exact(f, LEDGER_SKIP))
    assert sum(walked) == 2 * N  # the exact parse and the read: tensor infos follow, no key to leap to


def test_a_broken_header_after_a_leap_gives_the_exact_paths_error(tmp_path):
    f = write_gguf(tmp_path / "m.gguf", kv=tokenizer_kv(), tensors=TENSORS)
    data = f.read_bytes()
    name = b"blk.0.attn_q.weight"
    at = data.index(name) + len(name) + 4 + 16 + 4  # the tensor's offset, past its n_dims, dims and type
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(data[:at] + (3).to_bytes(8, "little") + data[at + 8:])  # misaligned
    with pytest.raises(HeaderError) as exact_error:
        exact(bad, LEDGER_SKIP)
    with pytest.raises(HeaderError) as leapt:
        read_header(bad, skip=LEDGER_SKIP)
    assert "not a multiple of the alignment" in str(leapt.value)
    assert str(leapt.value) == str(exact_error.value)
