"""Fuzz the GGUF readers (header, architecture keys, tokenizer keys, split sets) end to end.

Inputs are built by a small structured encoder (ggml docs/gguf.md layout) that can lie: a key's
declared type, an array's element type or count, a string's length, the tensor and key counts,
a tensor's dims, ggml type or offset. The valid base is checked against gguf-py's GGUFReader, so
the encoder writes what llama.cpp's converter writes before any lie is told.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gguf import GGUFReader
from hypothesis import given
from hypothesis import strategies as st

from planner.sources import load_spec
from planner.sources.gguf_header import (
    ARRAY,
    BOOL,
    FLOAT32,
    INT32,
    STRING,
    UINT8,
    UINT32,
    UINT64,
)

from .fuzz.harness import (
    BIG_INTS,
    HOSTILE_STRINGS,
    INTERESTING_INTS,
    fuzz_settings,
    mutate_bytes,
    pick,
    run_cli,
    run_reader,
    scratch,
    sweep_values,
)

_FMT = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
F32, F16, Q8_0 = 0, 1, 8  # ggml type ids (ggml.h enum ggml_type)
_BLOCK = {F32: (1, 4), F16: (1, 2), Q8_0: (32, 34)}  # elements, bytes per block


@dataclass
class KV:
    key: str
    vtype: int
    value: Any
    etype: int | None = None  # arrays: element type
    count: int | None = None  # arrays: declared element count (None: the real one)
    strlen: int | None = None  # strings: declared byte length (None: the real one)


@dataclass
class TI:
    name: str
    ne: list[int]  # ggml order: row length first
    type_id: int
    offset: int | None = None  # None: packed after the previous tensor, aligned


@dataclass
class Gguf:
    kvs: list[KV]
    tensors: list[TI]
    version: int = 3
    magic: bytes = b"GGUF"
    n_tensors: int | None = None
    n_kv: int | None = None
    alignment: int = 32
    data_delta: int = 0  # bytes added to (or cut from) the data section
    endian: str = "<"
    extra: dict = field(default_factory=dict)


def _scalar(e: str, vtype: int, v: Any) -> bytes:
    fmt = _FMT[vtype]
    try:
        return struct.pack(e + fmt, v)
    except (struct.error, TypeError, OverflowError):  # a lie the type cannot hold: write its bit pattern
        size = struct.calcsize(fmt)
        return (int(v) if isinstance(v, (int, float)) and v == v and abs(v) < 2**70 else 0).to_bytes(
            16, "little", signed=True)[:size] if e == "<" else b"\x00" * size


def _string(e: str, s: str | bytes, declared: int | None = None) -> bytes:
    raw = s if isinstance(s, bytes) else s.encode("utf-8", "surrogatepass")
    return struct.pack(e + "Q", len(raw) if declared is None else declared) + raw


def _value(e: str, vtype: int, v: Any, etype: int | None = None, count: int | None = None,
           strlen: int | None = None) -> bytes:
    if vtype in _FMT:
        return _scalar(e, vtype, v)
    if vtype == STRING:
        return _string(e, v if isinstance(v, (str, bytes)) else str(v), strlen)
    if vtype == ARRAY and isinstance(v, bytes):
        return v  # a hand-written array body (element type, count, elements)
    if vtype == ARRAY:
        items = v if isinstance(v, (list, tuple)) else [v]
        et = etype if etype is not None else UINT8
        body = b"".join(_value(e, et, x, UINT8) for x in items) if (et in _FMT or et in (STRING, ARRAY)) else b""
        return struct.pack(e + "IQ", et, len(items) if count is None else count) + body
    return b""  # unknown value type: nothing follows (the reader must stop at the type)


def _tensor_bytes(t: TI) -> int:
    elems, size = _BLOCK.get(t.type_id, (1, 4))
    n = 1
    for d in t.ne:
        n *= max(d, 0)
    return n // elems * size


def encode(g: Gguf) -> bytes:
    e = g.endian
    out = bytearray(g.magic + struct.pack(e + "I", g.version))
    out += struct.pack(e + "QQ", len(g.tensors) if g.n_tensors is None else g.n_tensors & (2**64 - 1),
                       len(g.kvs) if g.n_kv is None else g.n_kv & (2**64 - 1))
    for kv in g.kvs:
        out += _string(e, kv.key) + struct.pack(e + "I", kv.vtype & 0xFFFFFFFF)
        out += _value(e, kv.vtype, kv.value, kv.etype, kv.count, kv.strlen)
    offset, data_end = 0, 0
    for t in g.tensors:
        off = offset if t.offset is None else t.offset
        out += _string(e, t.name) + struct.pack(e + "I", len(t.ne))
        out += b"".join(struct.pack(e + "q", max(min(d, 2**63 - 1), -(2**63))) for d in t.ne)
        out += struct.pack(e + "IQ", t.type_id & 0xFFFFFFFF, off & (2**64 - 1))
        size = _tensor_bytes(t)
        data_end = max(data_end, off + size) if t.offset is not None else data_end
        offset += size + (-size % g.alignment)
        data_end = max(data_end, offset)
    out += b"\x00" * (-len(out) % g.alignment)
    data = max(min(data_end, 1 << 20) + g.data_delta, 0)
    return bytes(out) + b"\x00" * data


def u32(key: str, v: int) -> KV:
    return KV(key, UINT32, v)


TOKENS = ["<unk>", "<s>", "</s>", *[f"t{i}" for i in range(13)]]
H, FF, LAYERS = 64, 128, 2


def base_model(arch: str = "llama") -> Gguf:
    kvs = [KV("general.architecture", STRING, arch), KV("general.name", STRING, "fuzz-tiny"),
           u32("general.alignment", 32), u32(f"{arch}.block_count", LAYERS),
           u32(f"{arch}.embedding_length", H), u32(f"{arch}.context_length", 2048),
           u32(f"{arch}.feed_forward_length", FF), u32(f"{arch}.attention.head_count", 4),
           KV(f"{arch}.attention.head_count_kv", ARRAY, [2, 2], INT32),
           KV(f"{arch}.rope.freq_base", FLOAT32, 10000.0), u32(f"{arch}.vocab_size", len(TOKENS)),
           KV("tokenizer.ggml.model", STRING, "llama"), KV("tokenizer.ggml.pre", STRING, "default"),
           KV("tokenizer.ggml.tokens", ARRAY, TOKENS, STRING),
           KV("tokenizer.ggml.token_type", ARRAY, [3, 3, 3, *[1] * 13], INT32),
           KV("tokenizer.ggml.merges", ARRAY, ["t t", "t0 t1"], STRING),
           u32("tokenizer.ggml.bos_token_id", 1), u32("tokenizer.ggml.eos_token_id", 2),
           KV("tokenizer.ggml.add_bos_token", BOOL, True), KV("tokenizer.chat_template", STRING, "{{ x }}")]
    ts = [TI("token_embd.weight", [H, len(TOKENS)], F16)]
    for i in range(LAYERS):
        p = f"blk.{i}."
        ts += [TI(p + "attn_norm.weight", [H], F32), TI(p + "attn_q.weight", [H, H], Q8_0),
               TI(p + "attn_k.weight", [H, 32], Q8_0), TI(p + "attn_v.weight", [H, 32], Q8_0),
               TI(p + "attn_output.weight", [H, H], Q8_0), TI(p + "ffn_norm.weight", [H], F32),
               TI(p + "ffn_gate.weight", [H, FF], Q8_0), TI(p + "ffn_up.weight", [H, FF], Q8_0),
               TI(p + "ffn_down.weight", [FF, H], Q8_0)]
    ts += [TI("output_norm.weight", [H], F32), TI("output.weight", [H, len(TOKENS)], Q8_0)]
    return Gguf(kvs, ts)


def base_split() -> tuple[Gguf, Gguf]:
    """The base model as a llama-gguf-split pair: metadata in part 1, tensors split between the two."""
    g = base_model()
    half = len(g.tensors) // 2
    split = [KV("split.no", 2, 0), KV("split.count", 2, 2), KV("split.tensors.count", 5, len(g.tensors))]
    p1 = Gguf([*g.kvs, *split], g.tensors[:half])
    p2 = Gguf([dataclasses.replace(split[0], value=1), split[1], split[2]], g.tensors[half:])
    return p1, p2


BASE = base_model()
BASE_BYTES = encode(BASE)
SPLIT_NAMES = ("m-00001-of-00002.gguf", "m-00002-of-00002.gguf")
VALUE_TYPES = list(range(15))  # 0-12 are GGUF types; 13 and 14 are unknown


@st.composite
def mutate_gguf(draw: st.DrawFn, g: Gguf) -> Gguf:
    """1-3 structural lies in a copy of g."""
    g = dataclasses.replace(g, kvs=[dataclasses.replace(k) for k in g.kvs],
                            tensors=[dataclasses.replace(t, ne=list(t.ne)) for t in g.tensors])
    for _ in range(draw(st.integers(1, 3))):
        op = pick(draw, ["kv_value", "kv_value", "kv_type", "kv_count", "kv_strlen", "kv_drop", "kv_dup",
                         "kv_add", "t_dims", "t_type", "t_offset", "t_dup", "t_drop", "counts", "header",
                         "data"])
        if op.startswith("kv_") and g.kvs:
            i = draw(st.integers(0, len(g.kvs) - 1))
            kv = g.kvs[i]
            if op == "kv_value":
                if kv.vtype == ARRAY:
                    kv.value = pick(draw, [[], [0] * 3, list(range(LAYERS + 1)), [2**31] * LAYERS, [-1] * LAYERS,
                                           ["x"] * 5, [[1, 2], [3]], TOKENS[:3], [*TOKENS, "\udcff"] * 2])
                elif kv.vtype == STRING:
                    kv.value = pick(draw, [*HOSTILE_STRINGS, b"\xff\xfe", "gpt2", "bert", "t5", "clip", "mamba",
                                           "qwen3next", "deepseek2", "gemma3", "falcon-h1", "adapter"])
                else:
                    kv.value = pick(draw, [*INTERESTING_INTS, *BIG_INTS, 0.5, -0.0])
                    kv.vtype = pick(draw, [kv.vtype, UINT64, 11, INT32])
            elif op == "kv_type":
                kv.vtype = pick(draw, VALUE_TYPES)
                kv.etype = pick(draw, [None, *VALUE_TYPES])
            elif op == "kv_count":
                kv.vtype, kv.etype = ARRAY, kv.etype if kv.etype is not None else pick(draw, VALUE_TYPES)
                kv.count = pick(draw, [0, 1, 2**24, 2**32, 2**40, 2**62, 2**64 - 1])
            elif op == "kv_strlen":
                kv.vtype = STRING
                kv.value = kv.value if isinstance(kv.value, str) else "abc"
                kv.strlen = pick(draw, [0, 1, 2**20, 2**32, 2**63, 2**64 - 1])
            elif op == "kv_drop":
                del g.kvs[i]
            elif op == "kv_dup":
                g.kvs.insert(i, dataclasses.replace(kv))
            else:
                key = pick(draw, ["llama.expert_count", "llama.expert_used_count", "llama.attention.sliding_window",
                                  "llama.attention.sliding_window_pattern", "llama.nextn_predict_layers",
                                  "llama.attention.kv_lora_rank", "llama.ssm.conv_kernel", "llama.wkv.head_size",
                                  "llama.attention.key_length", "split.count", "general.type",
                                  "general.file_type", "tokenizer.ggml.padding_token_id"])
                g.kvs.append(KV(key, pick(draw, [UINT32, INT32, UINT64, STRING, BOOL, ARRAY]),
                                pick(draw, [*BIG_INTS, 0, 1, 2, 7, "model", [1, 0]]), pick(draw, [None, INT32, BOOL])))
        elif op.startswith("t_") and g.tensors:
            i = draw(st.integers(0, len(g.tensors) - 1))
            t = g.tensors[i]
            if op == "t_dims":
                t.ne = pick(draw, [[], [0], [-1, 4], [2**62, 4], [2**31, 2**31], [64, 64, 64, 64, 64],
                                   [1] * 5, [33, 2], [64, 2**40], t.ne[:1]])
            elif op == "t_type":
                t.type_id = pick(draw, [2, 4, 5, 12, 14, 30, 39, 40, 255, 2**31])
            elif op == "t_offset":
                t.offset = pick(draw, [0, 1, 16, 2**40, 2**63, 2**64 - 32])
            elif op == "t_dup":
                g.tensors.insert(i, dataclasses.replace(t, ne=list(t.ne)))
            else:
                del g.tensors[i]
        elif op == "counts":
            g.n_tensors = pick(draw, [0, len(g.tensors) + 1, 2**20 + 1, 2**40, 2**64 - 1])
            g.n_kv = pick(draw, [None, 0, len(g.kvs) + 1, 2**40])
        elif op == "header":
            g.version = pick(draw, [0, 1, 2, 4, 2**24, 3 << 24])
            g.magic = pick(draw, [b"GGUF", b"GGML", b"FUGG", b"\x00\x00\x00\x00"])
        else:
            g.data_delta = pick(draw, [-1, -32, -4096, 1, 4096])
    return g


@st.composite
def hostile_gguf(draw: st.DrawFn) -> dict[str, bytes]:
    """One .gguf (or a split pair) with structural lies, byte-level damage, or both."""
    if draw(st.integers(0, 5)) == 0:
        p1, p2 = base_split()
        k = draw(st.integers(0, 1))
        parts = [p1, p2]
        parts[k] = draw(mutate_gguf(parts[k]))
        files = {SPLIT_NAMES[0]: encode(parts[0]), SPLIT_NAMES[1]: encode(parts[1])}
        if draw(st.integers(0, 4)) == 0:
            del files[SPLIT_NAMES[1]]
        return files
    kind = pick(draw, ["struct", "struct", "bytes", "both"])
    data = encode(draw(mutate_gguf(BASE))) if kind != "bytes" else BASE_BYTES
    if kind != "struct":
        data = draw(mutate_bytes(data, hot=len(data) - 4096 if len(data) > 8192 else None))
    return {"m.gguf": data}


def _write(d: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (d / name).write_bytes(data)
    return d / next(iter(files))


def test_encoder_writes_what_gguf_py_reads(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(BASE_BYTES)
    r = GGUFReader(str(path))
    assert [t.name for t in r.tensors] == [t.name for t in BASE.tensors]
    assert bytes(r.fields["general.architecture"].parts[-1]).decode() == "llama"
    spec = load_spec(str(path))
    assert spec.n_layers == LAYERS and spec.hidden == H and spec.tokenizer.vocab_size == len(TOKENS)
    assert spec.weights.resident_bytes == sum(_tensor_bytes(t) for t in BASE.tensors)
    d = tmp_path / "split"
    d.mkdir()
    first = _write(d, dict(zip(SPLIT_NAMES, map(encode, base_split()), strict=True)))
    assert load_spec(str(first)).weights.resident_bytes == spec.weights.resident_bytes


@fuzz_settings(300)
@given(hostile_gguf())
def test_fuzz_gguf_reader(files):
    with scratch() as d:
        first = _write(d, files)
        run_reader(lambda: load_spec(str(first)), [d / n for n in files], input_bytes=sum(map(len, files.values())))


@fuzz_settings(30, cli=True)
@given(hostile_gguf())
def test_fuzz_gguf_cli(files):
    with scratch() as d:
        first = _write(d, files)
        run_cli(["memory", str(first), "--json"], [d / n for n in files])


def test_every_integer_key_at_an_extreme(tmp_path):
    """Each integer key of the base (and each per-layer array entry) set to values just under the caps."""
    for i, kv in enumerate(BASE.kvs):
        slots = [None] if kv.vtype not in (ARRAY, STRING) else \
            list(range(len(kv.value))) if kv.vtype == ARRAY and kv.etype == INT32 else []
        if kv.vtype in (STRING, BOOL, FLOAT32):
            continue
        for slot in slots:
            for value in sweep_values():
                kvs = [dataclasses.replace(k) for k in BASE.kvs]
                if slot is None:
                    kvs[i] = dataclasses.replace(kv, vtype=11 if value < 0 else UINT64, value=value)
                else:
                    kvs[i] = dataclasses.replace(kv, value=[*kv.value[:slot], value, *kv.value[slot + 1:]],
                                                 etype=11 if value < 0 or value >= 2**31 else INT32)
                path = tmp_path / f"k{i}-{slot}-{value}.gguf"
                path.write_bytes(encode(dataclasses.replace(BASE, kvs=kvs)))
                run_reader(lambda path=path: load_spec(str(path)), [path], input_bytes=path.stat().st_size)


def test_every_key_at_every_value_type(tmp_path):
    """Each key declared as each GGUF value type (0-12) and as two unknown ones (value re-encoded to match)."""
    for i, kv in enumerate(BASE.kvs):
        for vtype in VALUE_TYPES:
            kvs = [dataclasses.replace(k) for k in BASE.kvs]
            kvs[i] = dataclasses.replace(kv, vtype=vtype, etype=kv.etype if kv.etype is not None else INT32)
            path = tmp_path / f"t{i}-{vtype}.gguf"
            path.write_bytes(encode(dataclasses.replace(BASE, kvs=kvs)))
            run_reader(lambda path=path: load_spec(str(path)), [path], trace=False)
