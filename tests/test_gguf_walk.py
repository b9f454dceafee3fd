"""The string-array walk (sources/gguf_header.py `_walk`): resumed where the bytes read end, never trusting a length.

Why: a 262k-token vocabulary's header (~6.5 MB) runs past the first 4 MiB read; the reader reads on into the
same buffer and walks on from the next string instead of parsing the whole header again (issue #33: a GGUF
ledger no slower than a folder's). Each check compares with a parse of the whole file in one buffer, which
never reads on, so the walk across read boundaries must give back exactly the same header.
"""

from __future__ import annotations

import itertools
import struct

import pytest
from gguf import GGUFEndian

from planner.core.errors import HeaderError
from planner.sources import gguf_header, gguf_values
from planner.sources.gguf_header import LEDGER_SKIP, SkippedArray, parse_header, read_header
from tests.test_gguf import ARR, F32, I32, STR, U32, write_gguf

TOKENS = [f"tok{i}" * (1 + i % 7) for i in range(600)]
MERGES = [f"m{i} n{i}" for i in range(500)]


@pytest.fixture
def model(tmp_path):
    return write_gguf(tmp_path / "m.gguf", kv=[("tokenizer.ggml.tokens", TOKENS, ARR, STR),
                                                ("tokenizer.ggml.merges", MERGES, ARR, STR), ("after", 7, U32)],
                      tensors=[("blk.0.attn_q.weight", "F16", (8, 8))])


@pytest.mark.parametrize("first_read", [24, 100, 1000, 5003, 1 << 22])
def test_reading_on_mid_array_gives_the_whole_files_header(model, first_read, monkeypatch):
    whole = parse_header(model.read_bytes(), str(model))
    reads: list[tuple[int, int]] = []
    real = gguf_header._read
    monkeypatch.setattr(gguf_header, "_FIRST_READ_BYTES", first_read)
    monkeypatch.setattr(gguf_header, "_read", lambda fh, n: reads.append((fh.tell(), n)) or real(fh, n))
    h = read_header(model)
    assert h.metadata["tokenizer.ggml.tokens"] == tuple(TOKENS) == whole.metadata["tokenizer.ggml.tokens"]
    assert h.metadata["tokenizer.ggml.merges"] == SkippedArray(int(STR), len(MERGES))
    assert (h.metadata["after"], h.tensors, h.data_offset) == (7, whole.tensors, whole.data_offset)
    # read on in windows, forward only, from the first read to the file's end (it is smaller than a 64 KiB
    # window: one more read at most), nothing read twice
    size = model.stat().st_size
    assert reads[0] == (0, min(first_read, size))
    assert reads[1:] in ([], [(reads[0][1], size - reads[0][1])])


def _lie(data: bytes, token: str, length: int) -> bytes:
    """The file with the length prefix of `token`'s string replaced by `length`."""
    raw = token.encode()
    at = data.index(struct.pack("<Q", len(raw)) + raw)
    return data[:at] + struct.pack("<Q", length) + data[at + 8:]


@pytest.mark.parametrize("array, token", [("tokens", TOKENS[300]), ("tokens", TOKENS[-1]),
                                          ("merges", MERGES[250]), ("merges", MERGES[-1])])
@pytest.mark.parametrize("first_read", [100, 1 << 22])
def test_a_length_past_the_file_is_refused_at_any_read_size(model, tmp_path, array, token, first_read,
                                                            monkeypatch):
    """A kept array (tokens) and a skipped one (merges): the lying length is named, nothing is allocated for it."""
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(_lie(model.read_bytes(), token, 1 << 40))
    monkeypatch.setattr(gguf_header, "_FIRST_READ_BYTES", first_read)
    with pytest.raises(HeaderError, match=rf"array 'tokenizer\.ggml\.{array}'.*string of {1 << 40} bytes"):
        read_header(bad)
    with pytest.raises(HeaderError, match=rf"array 'tokenizer\.ggml\.{array}'"):
        parse_header(bad.read_bytes(), "mem")


def test_a_length_that_stays_inside_the_file_shifts_the_walk_and_is_caught_later(model, tmp_path):
    """A length that lies but lands inside the file: the walk goes on from the wrong place and the header
    fails there (as it did before the fast walk), with one line naming the file."""
    bad = tmp_path / "shifted.gguf"
    bad.write_bytes(_lie(model.read_bytes(), TOKENS[10], 3))
    with pytest.raises(HeaderError, match=r"Cannot read GGUF header of '.*shifted\.gguf'"):
        read_header(bad)


VOCAB = [f"t{i}" for i in range(5000)]  # past LEAP_MIN_STRINGS: a ledger read leaps over it


@pytest.fixture
def vocab_model(tmp_path, request):
    endian = getattr(request, "param", GGUFEndian.LITTLE)
    return write_gguf(tmp_path / "v.gguf", endian=endian, kv=[
        ("tokenizer.ggml.model", "llama", STR),
        ("tokenizer.ggml.tokens", VOCAB, ARR, STR),
        ("tokenizer.ggml.scores", [float(-i) for i in range(len(VOCAB))], ARR, F32),
        ("tokenizer.ggml.token_type", [1] * len(VOCAB), ARR, I32),
        ("tokenizer.ggml.merges", MERGES, ARR, STR),
        ("tokenizer.ggml.bos_token_id", 1, U32)],
        tensors=[(f"blk.{i}.attn_q.weight", "F16", (8, 8)) for i in range(40)])


@pytest.mark.parametrize("vocab_model", [GGUFEndian.LITTLE, GGUFEndian.BIG], indirect=True)
@pytest.mark.parametrize("first_read", [24, 333, 4096, 1 << 22])
@pytest.mark.parametrize("windows", [(16, 64), (1 << 16, 1 << 23)])
def test_tiny_windows_give_the_whole_files_header_and_skip_the_fixed_tables(vocab_model, first_read, windows,
                                                                           monkeypatch):
    """Windows of 16-64 bytes cut every string, key, array header and tensor info somewhere: each read of the
    header, kept or leapt, equals the parse of the whole file in one buffer; a ledger read never reads the
    scores' and token types' bytes (5,000 x 4 each)."""
    monkeypatch.setattr(gguf_header, "_FIRST_READ_BYTES", first_read)
    monkeypatch.setattr(gguf_values, "_MIN_WINDOW", windows[0])
    monkeypatch.setattr(gguf_values, "_MAX_WINDOW", windows[1])
    data = vocab_model.read_bytes()
    reads: list[tuple[int, int]] = []
    real = gguf_header._read
    monkeypatch.setattr(gguf_header, "_read", lambda fh, n: reads.append((fh.tell(), n)) or real(fh, n))
    for skip in (gguf_header.DEFAULT_SKIP, LEDGER_SKIP):
        reads.clear()
        assert read_header(vocab_model, skip=skip) == parse_header(data, str(vocab_model), skip=skip, leap=False)
        assert all(a0 + n0 <= a1 for (a0, n0), (a1, _) in itertools.pairwise(reads)), reads  # nothing twice
    scores = data.index(b"tokenizer.ggml.scores") + len("tokenizer.ggml.scores") + 4 + 4 + 8
    types = data.index(b"tokenizer.ggml.token_type")
    if first_read < scores:  # the ledger read's windows leave the scores' values out
        tables = range(scores + windows[1], types - len("tokenizer.ggml.token_type") - 8)
        assert not any(a < tables.stop and a + n > tables.start for a, n in reads), reads


@pytest.mark.parametrize("cut", [24, 200, 3000, 30_000, 45_000, 60_000, -100, -1])
def test_a_truncated_file_fails_as_the_whole_bytes_parse_does(vocab_model, tmp_path, cut, monkeypatch):
    """Cut anywhere (mid-table, mid-skipped-table, mid-tensor-infos, in the data): the windowed read's error is
    the one-buffer parse's, word for word, for both reads."""
    monkeypatch.setattr(gguf_values, "_MIN_WINDOW", 32)
    data = vocab_model.read_bytes()[:cut]
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(data)
    for skip in (gguf_header.DEFAULT_SKIP, LEDGER_SKIP):
        with pytest.raises(HeaderError) as whole:
            parse_header(data, str(bad), skip=skip, leap=False)
        with pytest.raises(HeaderError) as windowed:
            read_header(bad, skip=skip)
        assert str(windowed.value) == str(whole.value)
