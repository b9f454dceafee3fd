"""A plain ledger's GGUF read (`LEDGER_SKIP`): the token table's length, never its strings (issue #33).

Why: `planner memory model.gguf` needs how many vocabulary rows llama.cpp allocates, not the 262k strings
of a Gemma vocabulary; decoding them was most of a GGUF ledger's time. Each check compares the ledger's
read with the full read of the same real file, so the only thing allowed to differ is the tokenizer's
token table (kept as its length, basis "count"), and the ledger must come out byte for byte the same.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from planner import engines
from planner.core.constants import DEFAULT_CONTEXT
from planner.core.errors import HeaderError
from planner.fits.memory import Settings, ledger
from planner.render import text
from planner.sources import load_spec
from planner.sources.gguf import read_gguf
from planner.sources.gguf_header import LEDGER_SKIP, STRING, SkippedArray, read_header
from tests.test_gguf_real import GEMMA, SMOLLM, real
from tests.test_gguf_walk import TOKENS, _lie, model  # noqa: F401  (model: the fixture)

CASES = [(SMOLLM, 49_152), (GEMMA, 262_144)]  # the vocabulary sizes tests/test_gguf_real.py states


@pytest.mark.parametrize("name, n_tokens", CASES)
def test_the_ledger_read_keeps_everything_but_the_token_strings(name, n_tokens):
    path = real(name)
    full, quick = read_gguf(path), read_gguf(path, skip=LEDGER_SKIP)
    assert len(full.metadata["tokenizer.ggml.tokens"]) == n_tokens
    assert quick.metadata["tokenizer.ggml.tokens"] == SkippedArray(int(STRING), n_tokens)
    assert (quick.tensors, quick.data_offset, quick.alignment) == (full.tensors, full.data_offset, full.alignment)
    kept = {k: v for k, v in full.metadata.items() if k not in LEDGER_SKIP}
    assert {k: v for k, v in quick.metadata.items() if k not in LEDGER_SKIP} == kept
    assert dict(quick.value_types) == dict(full.value_types)


@pytest.mark.parametrize("name, n_tokens", CASES)
def test_the_ledger_spec_differs_only_in_its_token_table(name, n_tokens):
    path = str(real(name))
    full, quick = load_spec(path), load_spec(path, tokens=False)
    tok = quick.tokenizer
    assert tok is not None and full.tokenizer is not None
    assert (tok.basis, tok.tokens, tok.vocab_hash, tok.vocab_size) == ("count", None, None, n_tokens)
    assert full.tokenizer.basis == "tokens" and full.tokenizer.vocab_size == n_tokens
    assert dataclasses.replace(quick, tokenizer=full.tokenizer) == full
    s = Settings(context=8192, resolved_engine=engines.get("llama.cpp"))
    assert ledger(quick, s) == ledger(full, s)


def test_memory_on_a_gguf_prints_the_ledger_of_the_whole_read():
    """The CLI's plain ledger (the quick read) against the ledger of the spec read whole: the same JSON."""
    path = str(real(SMOLLM))
    out = subprocess.run([sys.executable, "-m", "planner", "memory", path, "--json", "--engine", "llama.cpp"],
                         capture_output=True, text=True, check=True, timeout=60)
    s = Settings(context=DEFAULT_CONTEXT, resolved_engine=engines.get("llama.cpp"))
    want = json.loads(json.dumps(text.ledger_json(ledger(load_spec(path), s), [])))
    got = json.loads(out.stdout)
    assert got.pop("schema_version") == 1 and got == want


@pytest.mark.parametrize("first_read", [100, 1 << 22])
def test_a_lying_length_in_a_counted_token_table_is_still_refused(model, tmp_path, first_read,  # noqa: F811
                                                                  monkeypatch):
    from planner.sources import gguf_header

    bad = tmp_path / "bad.gguf"
    bad.write_bytes(_lie(model.read_bytes(), TOKENS[300], 1 << 40))
    monkeypatch.setattr(gguf_header, "_FIRST_READ_BYTES", first_read)
    with pytest.raises(HeaderError, match=rf"array 'tokenizer\.ggml\.tokens'.*string of {1 << 40} bytes"):
        read_header(bad, skip=LEDGER_SKIP)
