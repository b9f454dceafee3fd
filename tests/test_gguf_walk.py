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

from planner.core.errors import HeaderError
from planner.sources import gguf_header
from planner.sources.gguf_header import SkippedArray, parse_header, read_header
from tests.test_gguf import ARR, STR, U32, write_gguf

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
    reads: list[int] = []
    real = gguf_header._read
    monkeypatch.setattr(gguf_header, "_FIRST_READ_BYTES", first_read)
    monkeypatch.setattr(gguf_header, "_read", lambda fh, n: reads.append(n) or real(fh, n))
    h = read_header(model)
    assert h.metadata["tokenizer.ggml.tokens"] == tuple(TOKENS) == whole.metadata["tokenizer.ggml.tokens"]
    assert h.metadata["tokenizer.ggml.merges"] == SkippedArray(int(STR), len(MERGES))
    assert (h.metadata["after"], h.tensors, h.data_offset) == (7, whole.tensors, whole.data_offset)
    # read on at least doubling (each read from the start): a few reads, never far past the header (the
    # tensor data is never read)
    assert max(reads) <= max(first_read, 2 * whole.data_offset)
    assert reads == sorted(reads) and all(b >= min(2 * a, model.stat().st_size) for a, b in itertools.pairwise(reads))
    assert len(reads) <= 2 + max(0, whole.data_offset // first_read).bit_length()


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
