"""GGUF source on tiny files written here: header reader, ggml type sizes, llama.cpp layer rules, tokenizer.

Files are written with gguf-py's GGUFWriter (the reference writer) or, for malformed
headers, byte by byte; expected values are worked by hand from the metadata written.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import struct
import time
from pathlib import Path

import numpy as np
import pytest
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFEndian, GGUFReader, GGUFValueType, GGUFWriter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import engines
from planner.core import dtypes
from planner.core.errors import ConfigError, HeaderError, ModelNotFound
from planner.core.spec import CHUNKED, FULL, MLA, NONE, SLIDING
from planner.fits.memory import Settings, kv_cache, kv_per_token, state_bytes_per_sequence
from planner.sources import load_spec
from planner.sources.gguf import read_gguf
from planner.sources.gguf_header import SkippedArray, ggml_type_table, parse_header, read_header
from planner.sources.gguf_tokenizer import vocab_hash

VT = GGUFValueType
U32, I32, F32, STR, BOOL, ARR = VT.UINT32, VT.INT32, VT.FLOAT32, VT.STRING, VT.BOOL, VT.ARRAY


# --- writing tiny GGUFs ---------------------------------------------------------------

def write_gguf(path: Path, arch: str = "llama", kv=(), tensors=(), *, endian=GGUFEndian.LITTLE,
               split_max_tensors: int = 0) -> Path:
    """kv: (key, value, GGUFValueType[, array element type]); tensors: (name, ggml type name, shape
    outermost-first, last dim = row length). Tensor bytes are sized by gguf-py's GGML_QUANT_SIZES."""
    w = GGUFWriter(str(path), arch, endianess=endian, split_max_tensors=split_max_tensors)
    for key, val, vtype, *sub in kv:
        w.add_key_value(key, val, vtype, sub[0] if sub else None)
    for name, tname, shape in tensors:
        qt = GGMLQuantizationType[tname]
        blck, size = GGML_QUANT_SIZES[qt]
        w.add_tensor(name, np.zeros((*shape[:-1], shape[-1] // blck * size), dtype=np.uint8), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def lm_kv(arch: str, *, layers: int, hidden: int, heads, kv_heads=None, ctx: int = 4096, ff=0, **keys) -> list:
    """The `{arch}.*` keys llama.cpp reads; list values become per-layer arrays."""
    def item(name, v):
        if isinstance(v, list):
            return (f"{arch}.{name}", v, ARR, I32)
        return (f"{arch}.{name}", v, U32)

    out = [item("block_count", layers), item("embedding_length", hidden), item("context_length", ctx),
           item("attention.head_count", heads)]
    if kv_heads is not None:
        out.append(item("attention.head_count_kv", kv_heads))
    if ff:
        out.append(item("feed_forward_length", ff))
    out += [item(k.replace("__", "."), v) for k, v in keys.items()]
    return out


def tok_kv(model: str, tokens: list[str], *, pre: str | None = None, types: list[int] | None = None, **ids) -> list:
    out = [("tokenizer.ggml.model", model, STR), ("tokenizer.ggml.tokens", tokens, ARR, STR)]
    if pre:
        out.append(("tokenizer.ggml.pre", pre, STR))
    if types is not None:
        out.append(("tokenizer.ggml.token_type", types, ARR, I32))
    for k, v in ids.items():
        out.append((f"tokenizer.ggml.{k}", v, BOOL if isinstance(v, bool) else U32))
    return out


TOKENS = ["<unk>", "<s>", "</s>", *[f"t{i}" for i in range(61)]]  # 64 tokens


def llama_cpp(ctx: int = 4096, **kw) -> Settings:
    return Settings(context=ctx, resolved_engine=engines.get("llama.cpp"), **kw)


# --- ggml types and exact tensor bytes --------------------------------------------------

FILE_TYPES = [name for _id, (name, _b, _s) in sorted(ggml_type_table().items()) if name != "Q8_1"]


def test_type_table_matches_gguf_py_except_q8_1():
    # planner.core.dtypes (ggml-common.h block structs) vs gguf-py GGML_QUANT_SIZES, type by type.
    # Q8_1 is the one known difference: ggml-common.h block_q8_1 = 2 halves + 32 quants = 36 B;
    # gguf-py still lists the old 2-float layout (40 B). It is a runtime-only type, never stored.
    table = ggml_type_table()
    assert len(table) == len(list(GGMLQuantizationType))  # every type gguf-py knows has a planner format
    for tid, (name, blck, size) in table.items():
        ref = GGML_QUANT_SIZES[GGMLQuantizationType(tid)]
        if name == "Q8_1":
            assert (blck, size) == (32, 36) and ref == (32, 40)
        else:
            assert (blck, size) == ref, name
    assert {"Q4_0", "Q4_K", "Q6_K", "IQ2_XXS", "IQ4_XS", "TQ1_0", "MXFP4", "NVFP4", "BF16"} <= set(FILE_TYPES)


def test_every_stored_type_has_exact_bytes(tmp_path):
    # One [3 x 256] tensor per ggml type: bytes = 3 * (256 / block) * block bytes. The writer
    # (gguf-py) lays tensors back to back padded to 32, so offsets check our sizes independently.
    tensors = [(f"w.{name}", name, (3, 256)) for name in FILE_TYPES]
    h = read_header(write_gguf(tmp_path / "types.gguf", tensors=tensors))
    assert [t.dtype for t in h.tensors] == FILE_TYPES
    for t in h.tensors:
        blck, size = GGML_QUANT_SIZES[GGMLQuantizationType[t.dtype]]
        assert t.nbytes == 3 * (256 // blck) * size == dtypes.nbytes(t.dtype, 768)
        assert t.shape == (3, 256) and t.numel == 768
    for a, b in itertools.pairwise(h.tensors):
        assert b.offset - a.offset == -(-a.nbytes // 32) * 32
    last = h.tensors[-1]
    assert h.data_offset + last.offset + -(-last.nbytes // 32) * 32 == Path(h.path).stat().st_size
    # hand-worked examples from ggml-common.h: Q4_0 18 B/32, Q4_K 144 B/256, Q6_K 210 B/256, MXFP4 17 B/32
    by = {t.dtype: t.nbytes for t in h.tensors}
    assert (by["Q4_0"], by["Q4_K"], by["Q6_K"], by["MXFP4"], by["F16"]) == (3 * 8 * 18, 3 * 144, 3 * 210,
                                                                               3 * 8 * 17, 768 * 2)


def test_matches_gguf_reader_on_metadata_and_tensors(tmp_path):
    kv = lm_kv("llama", layers=2, hidden=64, heads=4, kv_heads=[4, 2], ff=[128, 96]) + tok_kv(
        "llama", TOKENS, types=[2, 3, 3] + [1] * 61, bos_token_id=1, eos_token_id=2)
    tensors = [("token_embd.weight", "Q8_0", (64, 64)), ("blk.0.attn_q.weight", "Q4_K", (64, 256)),
               ("blk.1.ffn_up.weight", "BF16", (96, 64)), ("output_norm.weight", "F32", (64,))]
    path = write_gguf(tmp_path / "m.gguf", kv=kv, tensors=tensors)
    ours, ref = read_header(path, skip=frozenset()), GGUFReader(path)
    assert set(ours.metadata) == {k for k in ref.fields if not k.startswith("GGUF.")}
    for key, f in ref.fields.items():
        if key.startswith("GGUF."):
            continue
        want = f.contents()
        got = ours.metadata[key]
        assert (list(got) if isinstance(got, tuple) else got) == pytest.approx(want), key
    assert [(t.name, t.dtype, t.nbytes, t.offset) for t in ours.tensors] == [
        (t.name, t.tensor_type.name, int(t.n_bytes), int(t.data_offset) - ours.data_offset) for t in ref.tensors]
    assert [t.shape for t in ours.tensors] == [tuple(int(d) for d in reversed(t.shape)) for t in ref.tensors]


# --- every metadata value type, arrays, endianness ---------------------------------------

ALL_SCALARS = [("u8", 250, VT.UINT8), ("i8", -5, VT.INT8), ("u16", 65000, VT.UINT16), ("i16", -300, VT.INT16),
               ("u32", 4_000_000_000, VT.UINT32), ("i32", -70000, VT.INT32), ("f32", 0.5, VT.FLOAT32),
               ("b", True, VT.BOOL), ("s", "héllo ▁x", VT.STRING), ("u64", 2**63 + 5, VT.UINT64),
               ("i64", -(2**40), VT.INT64), ("f64", 1e-300, VT.FLOAT64)]


@pytest.mark.parametrize("endian", [GGUFEndian.LITTLE, GGUFEndian.BIG])
def test_every_value_type_round_trips(tmp_path, endian):
    kv = [(f"t.{k}", v, vt) for k, v, vt in ALL_SCALARS]
    kv += [(f"t.arr_{k}", [v, v], ARR, vt) for k, v, vt in ALL_SCALARS]
    kv += [("t.nested", [[1, 2], [3]], ARR, ARR)]
    h = read_header(write_gguf(tmp_path / "v.gguf", kv=kv, tensors=[("x", "F32", (2, 4))], endian=endian))
    assert h.big_endian is (endian == GGUFEndian.BIG)
    for k, v, vt in ALL_SCALARS:
        assert h.metadata[f"t.{k}"] == v and h.value_types[f"t.{k}"] == int(vt)
        assert h.metadata[f"t.arr_{k}"] == (v, v) and h.value_types[f"t.arr_{k}"] == (9, int(vt))
    assert h.metadata["t.nested"] == ((1, 2), (3,))
    # gguf-py refuses to write an empty array; llama.cpp reads them: one, written by hand
    empty = parse_header(bytes(Raw().u64(0).u64(1).s("t.empty").u32(9).u32(8).u64(0).b), "mem")
    assert empty.metadata["t.empty"] == () and empty.value_types["t.empty"] == (9, 8)
    assert h.tensors[0].shape == (2, 4) and h.tensors[0].nbytes == 32


def test_merges_are_walked_but_not_kept(tmp_path):
    merges = ["t1 t2", "t3 t4", "t5 t6"]
    path = write_gguf(tmp_path / "m.gguf", kv=[("tokenizer.ggml.merges", merges, ARR, STR), ("after", 7, U32)])
    h = read_header(path)
    assert h.metadata["tokenizer.ggml.merges"] == SkippedArray(int(STR), 3)
    assert h.metadata["after"] == 7  # the reader stepped over the merges exactly
    assert read_header(path, skip=frozenset()).metadata["tokenizer.ggml.merges"] == tuple(merges)


def test_string_array_with_nul_and_invalid_utf8(tmp_path):
    # The fast path joins on NUL; a token holding a NUL falls back to one decode per token.
    path = write_gguf(tmp_path / "n.gguf", kv=[("tokenizer.ggml.tokens", ["a\x00b", "c", ""], ARR, STR)])
    assert read_header(path).metadata["tokenizer.ggml.tokens"] == ("a\x00b", "c", "")
    raw = Path(path).read_bytes().replace(b"\x01\x00\x00\x00\x00\x00\x00\x00c", b"\x01\x00\x00\x00\x00\x00\x00\x00\xff")
    h = parse_header(raw, "mem")
    assert h.metadata["tokenizer.ggml.tokens"] == ("a\x00b", "\ufffd", "")


# --- malformed headers fail fast with HeaderError -------------------------------------------

class Raw:
    """A GGUF header written byte by byte (little-endian), to produce what no writer would."""

    def __init__(self, version: int = 3, magic: bytes = b"GGUF") -> None:
        self.b = bytearray(magic + struct.pack("<I", version))

    def u32(self, v):
        self.b += struct.pack("<I", v)
        return self

    def u64(self, v):
        self.b += struct.pack("<Q", v)
        return self

    def s(self, text: str):
        data = text.encode()
        return self.u64(len(data)).raw(data)

    def raw(self, data: bytes):
        self.b += data
        return self

    def tensor(self, name, ne, type_id, offset):
        self.s(name).u32(len(ne))
        for d in ne:
            self.b += struct.pack("<q", d)
        return self.u32(type_id).u64(offset)

    def pad(self, to: int = 32):
        self.b += b"\x00" * (-len(self.b) % to)
        return self


def fails(data: bytes, *words: str) -> HeaderError:
    t0 = time.perf_counter()
    with pytest.raises(HeaderError) as ei:
        parse_header(bytes(data), "bad.gguf")
    assert time.perf_counter() - t0 < 0.1
    msg = str(ei.value)
    assert msg.startswith("Cannot read GGUF header of 'bad.gguf'") and "\n" not in msg
    for w in words:
        assert w in msg, msg
    return ei.value


def test_bad_magic_and_versions():
    fails(Raw(magic=b"GGML").u64(0).u64(0).b, "bad magic", "b'GGML'")
    fails(Raw(version=1).u64(0).u64(0).b, "unsupported version", "got 1")
    fails(Raw(version=99).u64(0).u64(0).b, "unsupported version")
    fails(b"GGUF", "too short")


def test_huge_counts_fail_fast_naming_the_key():
    fails(Raw().u64(1 << 60).u64(0).b, "tensor count", str(1 << 60))
    fails(Raw().u64(0).u64(1 << 60).b, "key-value count")
    e = fails(Raw().u64(0).u64(1).s("tokenizer.ggml.tokens").u32(9).u32(8).u64(1 << 60).b,
              "array 'tokenizer.ggml.tokens'", str(1 << 60))
    assert e.path == "bad.gguf"
    fails(Raw().u64(0).u64(1).s("general.name").u32(8).u64(1 << 60).b, "key 'general.name'", "string of")
    fails(Raw().u64(0).u64(1).s("x.scores").u32(9).u32(6).u64(2**62).b, "array 'x.scores'")
    # plausible against the bytes left but above the cap: a 2^25-element u8 array in a 40 MB buffer
    big = Raw().u64(0).u64(1).s("x.blob").u32(9).u32(0).u64(1 << 25).raw(b"\x00" * (1 << 25)).b
    fails(big, "array 'x.blob'", "more than the 16777216 allowed")


def test_structural_errors():
    fails(Raw().u64(0).u64(1).s("k").u32(13).u32(0).b, "key 'k'", "unknown value type 13")
    fails(Raw().u64(0).u64(1).s("k").u32(9).u32(42).u64(1).b, "unknown element type 42")
    fails(Raw().u64(0).u64(2).s("k").u32(4).u32(1).s("k").u32(4).u32(2).b, "key 'k'", "twice")
    fails(Raw().u64(0).u64(1).s("general.alignment").u32(4).u32(3).b, "power of two")
    nest = Raw().u64(0).u64(1).s("deep").u32(9)
    for _ in range(3):
        nest.u32(9).u64(1)
    fails(nest.u32(4).u64(1).u32(0).b, "nested deeper")


def _one_tensor(ne, type_id, offset, extra: bytes = b"\x00" * 4096, n: int = 1, name="w") -> bytes:
    r = Raw().u64(n).u64(0)
    for i in range(n):
        r.tensor(f"{name}{i}" if n > 1 else name, ne, type_id, offset + i * 32)
    return bytes(r.pad().raw(extra).b)


def test_tensor_info_errors():
    fails(_one_tensor((32, 2), 4, 0), "tensor 'w'", "unknown ggml type id 4")  # Q4_2, removed from ggml
    fails(_one_tensor((16, 2), 2, 0), "not a whole number of Q4_0 blocks of 32")
    fails(_one_tensor((32,), 0, 16), "not a multiple of the alignment 32")
    fails(_one_tensor((1, 1, 1, 1, 1), 0, 0), "5 dimensions")
    fails(_one_tensor((-4,), 0, 0), "negative dimension")
    fails(_one_tensor((1 << 40, 1 << 40), 0, 0), "more than any real tensor")
    fails(_one_tensor((2048,), 0, 0), "past its end", "truncated")  # 8192 B of F32, 4096 B present
    fails(_one_tensor((64,), 0, 0, n=2), "overlap")  # 256 B each, 32 B apart
    r = Raw().u64(2).u64(0).tensor("w", (8,), 0, 0).tensor("w", (8,), 0, 32).pad().raw(b"\x00" * 64)
    fails(r.b, "tensor 'w'", "twice")


def test_every_truncation_of_a_header_is_a_header_error(tmp_path):
    kv = lm_kv("llama", layers=2, hidden=64, heads=4, kv_heads=[4, 2]) + tok_kv("gpt2", TOKENS[:8], pre="gpt-2")
    data = write_gguf(tmp_path / "t.gguf", kv=kv, tensors=[("a", "Q4_K", (2, 256)), ("b", "F16", (4, 8))]
                      ).read_bytes()
    h = parse_header(data, "full")
    for cut in range(h.data_offset + h.tensors[-1].offset + h.tensors[-1].nbytes):
        with pytest.raises(HeaderError):
            parse_header(data[:cut], "cut")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_corrupted_headers_never_crash(tmp_path_factory, data):
    path = tmp_path_factory.getbasetemp() / "fuzz.gguf"
    if not path.exists():
        kv = lm_kv("llama", layers=2, hidden=64, heads=4, kv_heads=[4, 2]) + tok_kv("llama", TOKENS[:8])
        write_gguf(path, kv=kv, tensors=[("a", "Q4_K", (2, 256)), ("b", "F16", (4, 8))])
    raw = bytearray(path.read_bytes())
    header_len = parse_header(bytes(raw), "ok").data_offset
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, header_len - 1))
        raw[i] = data.draw(st.integers(0, 255))
    with contextlib.suppress(HeaderError):
        parse_header(bytes(raw), "fuzz")


def test_truncated_file_on_disk(tmp_path):
    path = write_gguf(tmp_path / "t.gguf", tensors=[("a", "Q8_0", (4, 64))])  # 4 x 2 x 34 = 272 B, padded to 288
    data = path.read_bytes()
    (tmp_path / "cut.gguf").write_bytes(data[:-20])
    with pytest.raises(HeaderError, match=r"cut\.gguf.*truncated"):
        read_header(tmp_path / "cut.gguf")
    (tmp_path / "tiny.gguf").write_bytes(b"GGUF\x03\x00")
    with pytest.raises(HeaderError, match="too short"):
        read_header(tmp_path / "tiny.gguf")
    (tmp_path / "zero.gguf").write_bytes(b"")
    with pytest.raises(HeaderError):
        read_header(tmp_path / "zero.gguf")


# --- split GGUFs -----------------------------------------------------------------------------

def test_split_parts_are_read_together(tmp_path):
    kv = lm_kv("llama", layers=5, hidden=256, heads=4, kv_heads=2) + tok_kv("llama", TOKENS)
    tensors = [(f"blk.{i}.attn_q.weight", "Q4_K", (256, 256)) for i in range(5)]
    write_gguf(tmp_path / "m.gguf", kv=kv, tensors=tensors, split_max_tensors=2)
    parts = [tmp_path / f"m-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    h1, h2 = read_gguf(parts[0]), read_gguf(parts[1])
    assert [t.name for t in h1.tensors] == [t.name for t in h2.tensors] == [t[0] for t in tensors]
    assert [t.file_index for t in h1.tensors] == [0, 0, 1, 1, 2] == [t.file_index for t in h2.tensors]
    assert h1.tensor_bytes == 5 * 256 * 144  # 256 rows x one Q4_K block of 144 B each
    assert h1.parts == tuple(str(p) for p in parts) and h2.metadata["llama.block_count"] == 5
    spec = load_spec(str(parts[2]))
    assert spec.weights.resident_bytes == 5 * 256 * 144 and spec.n_layers == 5
    parts[1].unlink()
    with pytest.raises(ModelNotFound, match="part 2 of 3"):
        read_gguf(parts[0])
    renamed = tmp_path / "first.gguf"
    parts[0].rename(renamed)
    with pytest.raises(HeaderError, match="file name does not follow"):
        read_gguf(renamed)


def test_split_parts_share_one_tensor_cap(tmp_path, monkeypatch):
    """Issue #34 class 5: the cap was per part, so 8 parts of 2^20 tensors each cost 3.7 GB before failing.
    The same split read under a cap of 5 tensors in all, then of 4: the third part is refused."""
    from planner.sources import gguf

    kv = lm_kv("llama", layers=5, hidden=256, heads=4, kv_heads=2) + tok_kv("llama", TOKENS)
    tensors = [(f"blk.{i}.attn_q.weight", "Q4_K", (256, 256)) for i in range(5)]
    write_gguf(tmp_path / "m.gguf", kv=kv, tensors=tensors, split_max_tensors=2)  # parts of 2, 2, 1 tensors
    first = tmp_path / "m-00001-of-00003.gguf"
    monkeypatch.setattr(gguf, "GGUF_MAX_TENSORS", 5)
    assert len(read_gguf(first).tensors) == 5
    monkeypatch.setattr(gguf, "GGUF_MAX_TENSORS", 4)
    with pytest.raises(HeaderError, match=r"m-00003-of-00003\.gguf.*tensor count"):
        read_gguf(first)
    monkeypatch.setattr(gguf, "GGUF_MAX_HEADER_BYTES", read_header(first).data_offset + 100)
    monkeypatch.setattr(gguf, "GGUF_MAX_TENSORS", 5)
    with pytest.raises(HeaderError, match=r"run past .* in all \(at .m-00002"):  # header bytes shared
        read_gguf(first)


# --- architecture keys -> layers, llama.cpp rules --------------------------------------------

def spec_of(tmp_path, arch, kv, tensors=(), tokens=TOKENS, name="m.gguf"):
    return load_spec(str(write_gguf(tmp_path / name, arch, kv=kv + tok_kv("llama", tokens), tensors=tensors)))


def test_per_layer_head_counts_and_kv_bytes(tmp_path):
    # DeciLM stores per-layer head_count_kv (0 = no attention in that block) and per-layer n_ff.
    kv = lm_kv("deci", layers=4, hidden=256, heads=8, kv_heads=[8, 2, 0, 4], ff=[512, 512, 256, 0])
    spec = spec_of(tmp_path, "deci", kv)
    assert [layer.kv_heads for layer in spec.layers] == [8, 2, 0, 4]
    assert [layer.attention for layer in spec.layers] == [FULL, FULL, NONE, FULL]
    assert [(layer.ffn, layer.ffn_width) for layer in spec.layers] == [("dense", 512), ("dense", 512),
                                                                       ("dense", 256), ("none", 0)]
    assert spec.layers[0].head_dim_k == spec.layers[0].head_dim_v == 256 // 8
    # F16 cache: sum over layers of kv_heads x (32 + 32) x 2 B = (8 + 2 + 0 + 4) x 128
    assert kv_per_token(spec, llama_cpp()) == 14 * 128 == 1792
    assert (spec.hidden, spec.max_context, spec.vocab, spec.dtype) == (256, 4096, 64, "F16")


def test_head_count_kv_array_of_wrong_length_is_a_config_error(tmp_path):
    kv = lm_kv("llama", layers=3, hidden=64, heads=4, kv_heads=[4, 4])
    with pytest.raises(ConfigError, match=r"llama\.attention\.head_count_kv.*3 integers"):
        spec_of(tmp_path, "llama", kv)
    with pytest.raises(ConfigError, match=r"llama\.context_length"):
        spec_of(tmp_path, "llama", [k for k in lm_kv("llama", layers=1, hidden=8, heads=1)
                                    if k[0] != "llama.context_length"], name="n.gguf")


def test_not_a_language_model(tmp_path):
    mmproj = write_gguf(tmp_path / "mmproj.gguf", "clip", kv=[("clip.vision.block_count", 27, U32)])
    with pytest.raises(ConfigError, match="GGUF mmproj"):
        load_spec(str(mmproj))
    lora = write_gguf(tmp_path / "lora.gguf", kv=[("general.type", "adapter", STR)])
    with pytest.raises(ConfigError, match="GGUF adapter"):
        load_spec(str(lora))
    with pytest.raises(ConfigError, match=r"llama\.block_count.*at least 1"):
        spec_of(tmp_path, "llama", lm_kv("llama", layers=0, hidden=64, heads=4))


def test_key_and_value_lengths(tmp_path):
    kv = lm_kv("qwen3", layers=2, hidden=512, heads=8, kv_heads=2, attention__key_length=128,
               attention__value_length=96)
    spec = spec_of(tmp_path, "qwen3", kv)
    assert (spec.layers[0].head_dim_k, spec.layers[0].head_dim_v) == (128, 96)
    assert kv_per_token(spec, llama_cpp()) == 2 * 2 * (128 + 96) * 2


def gemma3_kv(layers=12, **extra):
    return lm_kv("gemma3", layers=layers, hidden=640, heads=4, kv_heads=1, ctx=32768, attention__key_length=256,
                 attention__value_length=256, attention__sliding_window=512, **extra)


def test_gemma3_five_sliding_one_full(tmp_path):
    spec = spec_of(tmp_path, "gemma3", gemma3_kv())
    kinds = [layer.attention for layer in spec.layers]
    assert kinds == [SLIDING] * 5 + [FULL] + [SLIDING] * 5 + [FULL]  # set_swa_pattern(6): il % 6 < 5
    assert all(layer.window == 512 for layer in spec.layers if layer.attention == SLIDING)
    assert spec.llamacpp_swa
    per_layer = 1 * (256 + 256) * 2  # one KV head, K and V of 256, F16
    assert kv_per_token(spec, llama_cpp()) == 2 * per_layer
    # llama.cpp, 4096 ctx: full layers hold pad(4096, 256) = 4096 cells, sliding layers
    # min(4096, pad(512 + n_ubatch 512, 256)) = 1024 cells
    assert kv_cache(spec, llama_cpp(4096), 4096)[0] == 2 * per_layer * 4096 + 10 * per_layer * 1024


def test_sliding_window_pattern_key_overrides_period(tmp_path):
    spec = spec_of(tmp_path, "gemma3", gemma3_kv(layers=6, attention__sliding_window_pattern=3))
    assert [layer.attention for layer in spec.layers] == [SLIDING, SLIDING, FULL] * 2
    flags = [True, False, False, True, True, False]
    kv = [*gemma3_kv(layers=6), ("gemma3.attention.sliding_window_pattern", flags, ARR, BOOL)]
    spec = spec_of(tmp_path, "gemma3", kv, name="b.gguf")
    assert [layer.attention == SLIDING for layer in spec.layers] == flags


@pytest.mark.parametrize(("arch", "extra", "kinds", "window", "swa"), [
    ("gemma2", {"attention__sliding_window": 4096}, [SLIDING, FULL] * 2, 4096, True),
    ("gemma2", {}, [SLIDING, FULL] * 2, 4096, True),  # n_swa defaults to 4096
    ("gpt-oss", {"attention__sliding_window": 128}, [SLIDING, FULL] * 2, 128, True),
    ("cohere2", {"attention__sliding_window": 4096}, [SLIDING] * 3 + [FULL], 4096, True),
    ("llama4", {}, [CHUNKED] * 3 + [FULL], 8192, True),  # chunked attention, fixed 8192
    ("llama4", {"attention__sliding_window": 0}, [FULL] * 4, None, True),
    ("smallthinker", {"attention__sliding_window": 1000}, [FULL] + [SLIDING] * 3, 4096, True),  # dense first
    ("olmo2", {}, [FULL] * 4, None, True),  # SWA only when the key is set
    ("olmo2", {"attention__sliding_window": 4096}, [SLIDING] * 3 + [FULL], 4096, True),
    ("phi3", {"attention__sliding_window": 2047}, [SLIDING] * 4, 2047, False),  # llama.cpp disables Phi SWA
    ("qwen2", {"attention__sliding_window": 4096}, [FULL] * 4, None, True),  # no llama.cpp rule: full
])
def test_swa_rules_per_architecture(tmp_path, arch, extra, kinds, window, swa):
    spec = spec_of(tmp_path, arch, lm_kv(arch, layers=4, hidden=128, heads=4, kv_heads=2, **extra))
    assert [layer.attention for layer in spec.layers] == kinds
    assert {layer.window for layer in spec.layers if layer.attention != FULL} <= {window}
    assert spec.llamacpp_swa is swa
    if arch == "qwen2":
        assert any("no llama.cpp SWA rule" in w for w in spec.warnings)


def test_phi3_window_counts_full_in_llama_cpp_only(tmp_path):
    spec = spec_of(tmp_path, "phi3", lm_kv("phi3", layers=2, hidden=128, heads=4, kv_heads=4,
                                            attention__sliding_window=256))
    per_layer = 4 * (32 + 32) * 2
    assert kv_cache(spec, llama_cpp(4096), 4096)[0] == 2 * per_layer * 4096  # full cache in llama.cpp
    assert kv_cache(spec, Settings(context=4096, resolved_engine=engines.get("transformers"), kv_dtype="f16"), 4096)[0] == 2 * per_layer * 256


def test_mla_latent_cache(tmp_path):
    kv = lm_kv("deepseek2", layers=3, hidden=512, heads=16, kv_heads=1, attention__key_length=576,
               attention__value_length=512, attention__kv_lora_rank=512, attention__key_length_mla=192,
               attention__value_length_mla=128, rope__dimension_count=64, expert_count=8, expert_used_count=2,
               expert_feed_forward_length=64, expert_shared_count=1, leading_dense_block_count=1, ff=1024)
    spec = spec_of(tmp_path, "deepseek2", kv)
    assert all(layer.attention == MLA and layer.kv_lora_rank == 512 and layer.rope_dim == 64 for layer in spec.layers)
    assert kv_per_token(spec, llama_cpp()) == 3 * (512 + 64) * 2  # latent + rope key, F16
    # transformers expands the latent: 16 heads x (192 + 128) per layer
    assert kv_per_token(spec, Settings(resolved_engine=engines.get("transformers"), kv_dtype="f16")) == 3 * 16 * (192 + 128) * 2
    assert spec.moe.experts == 8 and spec.moe.experts_per_token == 2 and spec.moe.shared_intermediate == 64
    assert [layer.ffn for layer in spec.layers] == ["dense", "moe", "moe"]  # leading_dense_block_count = 1


def test_old_deepseek_gguf_without_mla_keys_caches_full_heads(tmp_path):
    kv = lm_kv("deepseek2", layers=2, hidden=512, heads=16, kv_heads=16, attention__key_length=192,
               attention__value_length=128, attention__kv_lora_rank=512, rope__dimension_count=64)
    spec = spec_of(tmp_path, "deepseek2", kv)
    assert all(layer.attention == FULL for layer in spec.layers)
    assert kv_per_token(spec, llama_cpp()) == 2 * 16 * (192 + 128) * 2
    assert any("predates llama.cpp's MLA" in w for w in spec.warnings)


def test_mamba2_state(tmp_path):
    kv = lm_kv("mamba2", layers=2, hidden=256, heads=0, ssm__conv_kernel=4, ssm__inner_size=512,
               ssm__state_size=16, ssm__group_count=1, ssm__time_step_rank=8)
    spec = spec_of(tmp_path, "mamba2", kv)
    layer = spec.layers[0]
    assert layer.attention == NONE and layer.recurrent == "mamba2"
    assert layer.conv_dim == 512 + 2 * 1 * 16 and layer.recurrent_state_elems == 16 * 512
    # llama.cpp keeps both in f32: conv (4 - 1) x 544 + state 16 x 512, per layer and sequence
    per_layer = (3 * 544 + 16 * 512) * 4
    assert state_bytes_per_sequence(layer, llama_cpp(), spec.dtype, None) == per_layer
    assert kv_cache(spec, llama_cpp(), 4096) == (2 * per_layer, 2 * per_layer)
    assert kv_per_token(spec, llama_cpp()) == 0


def test_hybrid_layers_from_tensors_and_from_keys(tmp_path):
    ssm = dict(ssm__conv_kernel=4, ssm__inner_size=256, ssm__state_size=16, ssm__group_count=1,
               ssm__time_step_rank=4)
    # Jamba without tensors: recurrent where head_count_kv is 0 (llama-model.cpp)
    spec = spec_of(tmp_path, "jamba", lm_kv("jamba", layers=4, hidden=128, heads=4, kv_heads=[0, 0, 2, 0], **ssm))
    assert [layer.attention for layer in spec.layers] == [NONE, NONE, FULL, NONE]
    assert [bool(layer.recurrent) for layer in spec.layers] == [True, True, False, True]
    # Granite-hybrid with tensors: the stored ssm_* / attn_* tensors decide, layer by layer
    tensors = [("blk.0.ssm_in.weight", "F16", (128, 128)), ("blk.0.ffn_up.weight", "Q8_0", (96, 128)),
               ("blk.1.attn_q.weight", "Q8_0", (128, 128)), ("blk.1.ffn_up.weight", "Q8_0", (96, 128))]
    spec = spec_of(tmp_path, "granitehybrid", lm_kv("granitehybrid", layers=2, hidden=128, heads=4, kv_heads=2,
                                                     ff=96, **ssm), tensors, name="g.gguf")
    assert [layer.attention for layer in spec.layers] == [NONE, FULL]
    assert [layer.recurrent for layer in spec.layers] == ["mamba2", None]
    assert spec.dtype == "F16"  # the one unquantised matrix


def test_moe_inventory_and_active_params(tmp_path):
    kv = lm_kv("qwen3moe", layers=2, hidden=64, heads=4, kv_heads=2, expert_count=4, expert_used_count=2)
    tensors = [("token_embd.weight", "F16", (64, 64))]
    for i in range(2):
        tensors += [(f"blk.{i}.attn_q.weight", "Q8_0", (64, 64)), (f"blk.{i}.attn_norm.weight", "F32", (64,)),
                    (f"blk.{i}.ffn_gate_inp.weight", "F32", (4, 64)),
                    (f"blk.{i}.ffn_gate_exps.weight", "Q4_0", (4, 32, 64)),
                    (f"blk.{i}.ffn_up_exps.weight", "Q4_0", (4, 32, 64)),
                    (f"blk.{i}.ffn_down_exps.weight", "Q8_0", (4, 64, 32))]
    spec = spec_of(tmp_path, "qwen3moe", kv, tensors)
    assert spec.moe.expert_intermediate == 32  # from ffn_gate_exps [experts, n_ff_exp, n_embd]
    assert [(layer.ffn, layer.ffn_width) for layer in spec.layers] == [("moe", 32)] * 2
    routed = 2 * 3 * 4 * 32 * 64
    total = 64 * 64 + 2 * (64 * 64 + 64 + 4 * 64) + routed
    assert spec.params_total == total
    assert spec.params_active == total - routed + routed * 2 // 4
    inv = spec.weights
    assert inv.source == "gguf" and inv.bytes_by_group["experts"] == 2 * (2 * 4 * 32 * 2 * 18 + 4 * 64 * 34)
    assert spec.tied_embeddings  # no output.weight stored
    assert inv.resident_bytes == sum(t.nbytes for t in read_header(spec.path).tensors)


def test_nextn_layers_are_not_counted(tmp_path):
    kv = lm_kv("glm4moe", layers=3, hidden=64, heads=4, kv_heads=2, ff=128, nextn_predict_layers=1)
    tensors = [(f"blk.{i}.attn_q.weight", "Q8_0", (64, 64)) for i in range(3)]
    tensors += [(f"blk.{i}.ffn_up.weight", "Q8_0", (128, 64)) for i in range(3)]
    spec = spec_of(tmp_path, "glm4moe", kv, tensors)
    assert spec.n_layers == 2
    assert spec.weights.excluded_bytes == 64 * 2 * 34 + 128 * 2 * 34
    assert spec.weights.resident_bytes == 2 * (64 * 2 * 34 + 128 * 2 * 34)


# --- tokenizer fingerprint -------------------------------------------------------------------

def fp(tmp_path, model, name="t.gguf", **kw):
    kv = lm_kv("llama", layers=1, hidden=64, heads=4) + tok_kv(model, kw.pop("tokens", TOKENS), **kw)
    return load_spec(str(write_gguf(tmp_path / name, kv=kv))).tokenizer


def test_tokenizer_defaults_follow_llama_cpp(tmp_path):
    spm = fp(tmp_path, "llama")
    assert (spm.vocab_type, spm.add_bos, spm.add_eos, spm.bos_id, spm.eos_id) == ("SPM", True, False, 1, 2)
    bpe = fp(tmp_path, "gpt2", name="b.gguf", pre="smollm")
    assert (bpe.vocab_type, bpe.add_bos, bpe.add_eos, bpe.bos_id, bpe.eos_id) == ("BPE", False, False, 11, 11)
    llama3 = fp(tmp_path, "gpt2", name="l3.gguf", pre="llama-bpe")
    assert llama3.add_bos is True and llama3.pre == "llama-bpe"
    t5 = fp(tmp_path, "t5", name="t5.gguf")
    assert (t5.vocab_type, t5.add_bos, t5.add_eos, t5.bos_id, t5.eos_id) == ("UGM", False, True, None, 1)
    assert fp(tmp_path, "bert", name="w.gguf").vocab_type == "WPM"
    assert fp(tmp_path, "rwkv", name="r.gguf").vocab_type == "RWKV"
    keyed = fp(tmp_path, "llama", name="k.gguf", add_bos_token=False, add_eos_token=True, bos_token_id=5,
               eos_token_id=999, eot_token_id=7)
    # keys override the defaults; an id outside the vocabulary is ignored (default kept), as in llama.cpp
    assert (keyed.add_bos, keyed.add_eos, keyed.bos_id, keyed.eos_id, keyed.eos_ids) == (False, True, 5, 2, (2, 7))


def test_tokenizer_hash_template_and_control_tokens(tmp_path):
    template = "{% for m in messages %}{{ m.content }}{% endfor %}"
    kv = lm_kv("llama", layers=1, hidden=64, heads=4) + tok_kv("llama", TOKENS, types=[2, 3, 3] + [1] * 61)
    kv.append(("tokenizer.chat_template", template, STR))
    t = load_spec(str(write_gguf(tmp_path / "t.gguf", kv=kv))).tokenizer
    assert t.tokens == tuple(TOKENS) and t.vocab_size == 64
    assert t.vocab_hash == hashlib.sha256("\x00".join(TOKENS).encode()).hexdigest() == vocab_hash(tuple(TOKENS))
    assert t.chat_template_hash == hashlib.sha256(template.encode()).hexdigest()
    assert t.special_tokens == ("<s>", "</s>")
    assert t.source == "gguf" and t.model_name == "llama" and t.unk_id == 0 and t.has_chat_template


def test_vocab_hash_matches_the_hf_fingerprint_definition():
    from planner.sources.tokenizer import vocab_digest

    # convert_hf_to_gguf pads the list to config vocab_size with [PAD{i}]: those do not count
    padded = (*TOKENS, "[PAD64]", "[PAD65]")
    assert vocab_hash(padded) == vocab_hash(tuple(TOKENS)) == vocab_digest(list(padded)) == vocab_digest(TOKENS)
    assert vocab_hash(("▁a", "Ġb", "é")) == hashlib.sha256("▁a\x00Ġb\x00é".encode()).hexdigest()


def test_tokenizer_type_errors(tmp_path):
    kv = [*lm_kv("llama", layers=1, hidden=64, heads=4), ("tokenizer.ggml.model", "llama", STR), ("tokenizer.ggml.tokens", [1, 2], ARR, I32)]
    with pytest.raises(ConfigError, match=r"tokenizer\.ggml\.tokens.*array of strings"):
        load_spec(str(write_gguf(tmp_path / "t.gguf", kv=kv)))
    kv = [*lm_kv("llama", layers=1, hidden=64, heads=4), ("tokenizer.ggml.model", "sentencepiece2", STR)]
    with pytest.raises(ConfigError, match=r"not one llama\.cpp knows"):
        load_spec(str(write_gguf(tmp_path / "u.gguf", kv=kv)))


def test_spec_identity_fields(tmp_path):
    kv = [*lm_kv("qwen2", layers=1, hidden=64, heads=4), ("general.name", "Qwen2.5 0.5B Instruct", STR), ("general.basename", "qwen2.5", STR), ("general.file_type", 7, U32), *tok_kv("gpt2", TOKENS, pre="qwen2")]
    spec = load_spec(str(write_gguf(tmp_path / "q.gguf", "qwen2", kv=kv,
                                    tensors=[("output.weight", "Q8_0", (64, 64))])))
    # the label is the file name, never general.name (converters fill it from config strings)
    assert (spec.id, spec.family, spec.model_type, spec.source) == ("q.gguf", "qwen2.5", "qwen2", "gguf")
    # a generic file name: general.basename + general.size_label + the file type's quant
    generic = load_spec(str(write_gguf(tmp_path / "ggml-model-00001-of-00001.gguf", "qwen2",
                                       kv=[*kv, ("general.size_label", "0.5B", STR)],
                                       tensors=[("output.weight", "Q8_0", (64, 64))])))
    assert generic.id == "qwen2.5-0.5B-Q8_0"
    assert spec.quantization == "Q8_0" and spec.instruct is True and not spec.tied_embeddings
    assert spec.provenance["weights"] == "GGUF header (exact)"
    bare = load_spec(str(write_gguf(tmp_path / "bare.gguf", "qwen2", kv=lm_kv("qwen2", layers=1, hidden=64,
                                                                                heads=4))))
    assert bare.id == "bare.gguf" and bare.tokenizer is None and bare.family == "qwen2"
