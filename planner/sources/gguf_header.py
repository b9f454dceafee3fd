"""GGUF headers -> metadata key-values and tensor infos, without reading tensor data.

Format (ggml docs/gguf.md, ggml/src/gguf.cpp `gguf_init_from_file_impl`): magic "GGUF",
u32 version (2 or 3; v1 used 32-bit counts and is rejected by llama.cpp too), u64
tensor_count, u64 kv_count, then kv_count x (string key, u32 value type, value), then
tensor_count x (string name, u32 n_dims, n_dims x i64 ne, u32 ggml type, u64 offset),
zero padding to `general.alignment` (default 32), then the data section. A string is a
u64 byte length + UTF-8 bytes; an array is a u32 element type + u64 count + elements.
Files written on big-endian hosts store every number big-endian; the version tells which.

Why not gguf.GGUFReader: it memory-maps the whole file and builds numpy views for every
field element and every tensor (about 10 s for a 262k-token vocabulary here). This reader
walks the header once with `struct`, reads a string array in one tight loop and decodes it
with one `bytes.join(...).decode()`, and never touches tensor data (< 0.5 s for the same
file). Every count and length is checked against the bytes left before anything is
allocated, then against the caps in `planner.core.constants`, so a corrupt or hostile header
fails fast with a HeaderError naming the file and the key.
"""

# No `from __future__ import annotations` here: typing.NamedTuple compiles every string annotation of its
# fields at import (a ForwardRef each), ~40 us a field on every GGUF ledger's start-up (issue #33).

import itertools
import os
import stat
import struct
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from ..core import dtypes, ggml_types
from ..core.atomic import note_input
from ..core.constants import (
    GGUF_MAX_HEADER_BYTES,
    GGUF_MAX_KV,
    GGUF_MAX_TENSOR_DIMS,
    GGUF_MAX_TENSORS,
)
from ..core.errors import HeaderError
from .gguf_values import (
    ARRAY,
    BOOL,
    FLOAT32,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    INTEGER_TYPES,
    STRING,
    UINT8,
    UINT16,
    UINT32,
    UINT64,
    VALUE_TYPE_NAMES,
    SkippedArray,
    _Cursor,
)

# the value types live in gguf_values.py; readers and tests import them from here as before
__all__ = ['ARRAY', 'BOOL', 'DEFAULT_ALIGNMENT', 'DEFAULT_SKIP', 'FLOAT32', 'FLOAT64', 'GGUF_MAGIC', 'INT8', 'INT16', 'INT32', 'INT64', 'INTEGER_TYPES', 'LEDGER_SKIP', 'STRING', 'SUPPORTED_VERSIONS', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'VALUE_TYPE_NAMES', 'GGUFHeader', 'GGUFTensor', 'SkippedArray', 'ggml_type_table', 'parse_header', 'read_header']

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32  # GGUF_DEFAULT_ALIGNMENT (ggml/include/gguf.h)
_FIRST_READ_BYTES = 4 * 1024**2  # a 262k-token vocabulary's header is ~10 MB: 3 reads at most

# Keys whose (large) string arrays are walked and bounds-checked but not kept: the planner
# never reads BPE merges (llama.cpp's draft check compares vocabularies, not merges).
DEFAULT_SKIP = frozenset({"tokenizer.ggml.merges"})
# A plain ledger (`planner memory` without a draft) needs the token table's length only (the vocabulary
# rows llama.cpp allocates), never its strings: walking 262k length prefixes instead of decoding 262k
# strings is what keeps a GGUF's ledger as fast as a folder's (issue #33). Pairing reads the full table.
LEDGER_SKIP = DEFAULT_SKIP | {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.scores"}


class GGUFTensor(NamedTuple):
    """One tensor info. `shape` is outermost-first (HF order: rows last), the reverse of ggml's ne.

    A NamedTuple, not a frozen dataclass: as immutable, and ~1 ms less at import (a dataclass execs its
    generated methods at every start-up), which a GGUF ledger pays on every run (issue #33)."""

    name: str
    shape: tuple[int, ...]
    type_id: int
    dtype: str  # canonical format name in planner.core.dtypes.FORMATS (ggml type name)
    offset: int  # from the start of this file's data section
    nbytes: int
    file_index: int = 0  # which split part holds it

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


class GGUFHeader(NamedTuple):
    """Everything before the data section of one GGUF file (or all parts of a split model).

    `metadata` maps key -> Python value (int, float, bool, str, or a tuple for arrays; a
    SkippedArray for skipped keys); `value_types` maps key -> GGUF value type, or
    (ARRAY, element type) for arrays.
    """

    path: str
    version: int
    big_endian: bool
    metadata: Mapping[str, Any]
    value_types: Mapping[str, Any]
    tensors: tuple[GGUFTensor, ...]
    alignment: int
    data_offset: int
    file_size: int
    parts: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def tensor_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)

    @property
    def architecture(self) -> str | None:
        arch = self.metadata.get("general.architecture")
        return arch if isinstance(arch, str) else None


@lru_cache(maxsize=1)
def ggml_type_table() -> dict[int, tuple[str, int, int]]:
    """ggml type id -> (name, elements per block, bytes per block).

    Ids and names come from planner.core.ggml_types (gguf-py's `GGMLQuantizationType`, ggml.h's
    `ggml_type`, as a plain table: no `gguf` import on the hot path); block sizes from
    planner.core.dtypes.FORMATS (ggml-common.h block structs), which wins where gguf-py lags ggml
    (Q8_1: 36 B per ggml-common.h, 40 in gguf-py's old float layout; Q8_1 never appears in files:
    it is a runtime dot-product format).
    """
    table = {}
    for tid, name in ggml_types.GGML_TYPES.items():
        fmt = dtypes.FORMATS.get(name)
        if fmt is not None:
            table[tid] = (name, fmt.block_elems, fmt.block_bytes)
    return table


def _endianness(buf: Any, origin: str) -> tuple[str, int]:
    if len(buf) < 8:
        raise HeaderError(f"Cannot read GGUF header of '{origin}': {len(buf)} bytes is too short for a GGUF "
                          f"file (expected at least 24). Re-download it.", origin)
    magic = bytes(buf[:4])
    if magic != GGUF_MAGIC:
        raise HeaderError(f"Cannot read GGUF header of '{origin}': bad magic (expected b'GGUF', got "
                          f"{magic!r}). It is not a GGUF model file.", origin)
    (le,) = struct.unpack_from("<I", buf, 4)
    (be,) = struct.unpack_from(">I", buf, 4)
    if le in SUPPORTED_VERSIONS:
        return "<", le
    if be in SUPPORTED_VERSIONS:
        return ">", be
    raise HeaderError(f"Cannot read GGUF header of '{origin}': unsupported version (expected one of "
                      f"{SUPPORTED_VERSIONS}, got {le}). Re-convert the model with a current llama.cpp.", origin)


def parse_header(data: Any, origin: str, *, file_size: int | None = None,
                 skip: frozenset[str] = DEFAULT_SKIP, file_index: int = 0, _prefix: bool = False,
                 max_tensors: int = GGUF_MAX_TENSORS, _grow: Callable[[int, int, int], Any] | None = None,
                 leap: bool = True) -> GGUFHeader:
    """Parse a GGUF header from `data` (the whole file, an mmap, or a prefix of it).

    Args:
        data: bytes, bytearray or mmap holding at least the header.
        origin: file name or URL, for messages.
        file_size: size of the whole file when `data` is only a prefix (remote range reads);
            tensor data must fit in it. Defaults to len(data).
        skip: keys whose arrays are validated but not kept.
        file_index: split part index recorded on each tensor.
        max_tensors: the tensor cap (a split model's parts share one GGUF_MAX_TENSORS between them).
        leap: skipped string arrays are leapt over by search (`_Cursor._leap_over`); a parse that leapt and
            then fails any check is done again walking every string, so errors and results are the exact
            path's.

    Returns:
        The GGUFHeader (metadata, value types, tensor infos with exact byte sizes).

    Raises:
        HeaderError: bad magic or version, truncated header, oversized counts, unknown value
            or ggml types, duplicate keys or tensor names, misaligned or out-of-file tensor data.
    """
    if isinstance(data, memoryview):
        data = data.tobytes()
    endian, version = _endianness(data, origin)
    cur = _Cursor(data, origin, endian, end=file_size if _prefix else None, grow=_grow)
    try:
        return _parse(cur, version, skip, file_index, max_tensors, leap, file_size)
    except HeaderError:
        if not cur.leaped:
            raise
    cur = _Cursor(cur.buf, origin, endian, end=file_size if _prefix else None, grow=_grow, base=cur.base)
    return _parse(cur, version, skip, file_index, max_tensors, False, file_size)


def _parse(cur: _Cursor, version: int, skip: frozenset[str], file_index: int, max_tensors: int, leap: bool,
           file_size: int | None) -> GGUFHeader:
    """The header from byte 8 on (see `parse_header`)."""
    origin, endian = cur.origin, cur.e
    cur.pos = 8
    n_tensors = cur.count("tensor count", max_tensors, 24)  # name len + n_dims + type + offset
    n_kv = cur.count("key-value count", GGUF_MAX_KV, 13)  # key len + type + 1-byte value
    metadata: dict[str, Any] = {}
    types: dict[str, Any] = {}
    for i in range(n_kv):
        key = cur.string(f"key #{i}", cap=65_535)
        if key in metadata:
            raise cur.fail(f"key '{key}'", "appears twice")
        vtype = cur.scalar(UINT32, f"type of key '{key}'")
        # a skipped string array may be leapt over where a key follows it (the last key is followed by tensors)
        cur.leap = key[:key.find(".") + 1].encode() if leap and key in skip and i < n_kv - 1 and "." in key else None
        metadata[key] = cur.value(vtype, key, skip=key in skip)
        if vtype == ARRAY:
            types[key] = (ARRAY, cur.etype)  # read by cur.array already
        else:
            types[key] = vtype
    alignment = _alignment(metadata, types, cur)
    infos = _tensor_infos(cur, n_tensors)
    data_offset = -(-cur.pos // alignment) * alignment
    size = len(cur.buf) if file_size is None else file_size
    tensors = _check_tensors(infos, cur, alignment, size - data_offset, file_index)
    return GGUFHeader(path=origin, version=version, big_endian=endian == ">",
                      metadata=MappingProxyType(metadata), value_types=MappingProxyType(types),
                      tensors=tuple(tensors), alignment=alignment, data_offset=data_offset, file_size=size,
                      parts=(origin,))


def _alignment(metadata: dict[str, Any], types: dict[str, Any], cur: _Cursor) -> int:
    if "general.alignment" not in metadata:
        return DEFAULT_ALIGNMENT
    a = metadata["general.alignment"]
    if types["general.alignment"] not in INTEGER_TYPES or a <= 0 or a & (a - 1):
        raise cur.fail("key 'general.alignment'", f"must be a positive power of two (got {a!r})")
    return a


def _tensor_infos(cur: _Cursor, n: int) -> list[tuple[str, tuple[int, ...], int, int]]:
    """The n tensor infos: one unpack of a tensor's fields (n_dims, ne, type, offset) where its bytes are read
    and every check passes, else the checked reader `_tensor_info` for that tensor (its error says what fails).

    Why: six scalar reads per tensor were a third of a GGUF ledger's parse (issue #33); the checks are the
    same (name length within 65,535, n_dims within GGUF_MAX_TENSOR_DIMS, no negative dimension)."""
    e, out = cur.e, []
    u64, u32 = struct.Struct(e + "Q"), struct.Struct(e + "I")
    for i in range(n):
        buf, base = cur.buf, cur.base
        pos, avail = cur.pos - base, cur.avail - base  # in the read window
        if pos >= 0 and pos + 8 <= avail:
            (ln,) = u64.unpack_from(buf, pos)
            at = pos + 8 + ln
            if ln <= 65_535 and at + 4 <= avail:
                (n_dims,) = u32.unpack_from(buf, at)
                end = at + 4 + 8 * n_dims + 12
                if n_dims <= GGUF_MAX_TENSOR_DIMS and end <= avail:
                    *ne, type_id, offset = struct.unpack_from(f"{e}{n_dims}qIQ", buf, at + 4)
                    if min(ne, default=0) >= 0:
                        out.append((bytes(buf[pos + 8:at]).decode("utf-8", "replace"), tuple(ne), type_id, offset))
                        cur.pos = end + base
                        continue
        out.append(_tensor_info(cur, i))
    return out


def _tensor_info(cur: _Cursor, i: int) -> tuple[str, tuple[int, ...], int, int]:
    name = cur.string(f"name of tensor #{i}", cap=65_535)
    what = f"tensor '{name}'"
    n_dims = cur.scalar(UINT32, what)
    if n_dims > GGUF_MAX_TENSOR_DIMS:
        raise cur.fail(what, f"has {n_dims} dimensions (expected at most {GGUF_MAX_TENSOR_DIMS})")
    ne = tuple(cur.scalar(INT64, what) for _ in range(n_dims))
    if any(d < 0 for d in ne):
        raise cur.fail(what, f"has a negative dimension {list(ne)}")
    type_id = cur.scalar(UINT32, what)
    offset = cur.scalar(UINT64, what)
    return name, ne, type_id, offset


def _check_tensors(infos: list[tuple[str, tuple[int, ...], int, int]], cur: _Cursor, alignment: int,
                   data_size: int, file_index: int) -> list[GGUFTensor]:
    """Types known, rows whole blocks, offsets aligned, inside the data section, not overlapping."""
    table = ggml_type_table()
    out: list[GGUFTensor] = []
    seen: set[str] = set()
    for name, ne, type_id, offset in infos:
        what = f"tensor '{name}'"
        if name in seen:
            raise cur.fail(what, "appears twice")
        seen.add(name)
        if type_id not in table:
            raise cur.fail(what, f"has unknown ggml type id {type_id} (known: {_known_types(table)})",
                           "Upgrade gguf and spec-planner, or re-quantise the model to a known type")
        tname, blck, _ = table[type_id]
        numel = 1
        for d in ne:
            numel *= d
        if numel >= 1 << 62:
            raise cur.fail(what, f"has {numel} elements (shape {list(ne)}), more than any real tensor")
        if ne and ne[0] % blck:
            raise cur.fail(what, f"row of {ne[0]} elements is not a whole number of {tname} blocks of {blck}")
        nbytes = dtypes.nbytes(tname, numel)
        if offset % alignment:
            raise cur.fail(what, f"data offset {offset} is not a multiple of the alignment {alignment}")
        if offset + nbytes > data_size:
            raise cur.fail(what, f"data ends at byte {offset + nbytes} of the data section, past its end "
                                 f"({max(data_size, 0)} bytes): the file is truncated")
        out.append(GGUFTensor(name, tuple(reversed(ne)), type_id, tname, offset, nbytes, file_index))
    spans = sorted((t.offset, t.offset + t.nbytes, t.name) for t in out if t.nbytes)
    for (_b0, e0, n0), (b1, _e1, n1) in itertools.pairwise(spans):
        if b1 < e0:
            raise cur.fail(f"tensors '{n0}' and '{n1}'", f"overlap (data bytes {b1}-{e0})")
    return out


def _known_types(table: dict[int, tuple[str, int, int]]) -> str:
    return ", ".join(f"{i}={v[0]}" for i, v in sorted(table.items()))


def read_header(path: str | Path, *, skip: frozenset[str] = DEFAULT_SKIP, file_index: int = 0,
                max_tensors: int = GGUF_MAX_TENSORS, max_bytes: int = GGUF_MAX_HEADER_BYTES) -> GGUFHeader:
    """Read one local GGUF file's header with bounded reads: a first prefix, then windows of the file only
    where the parse goes on (`_Cursor.more`: the bytes of skipped fixed-size tables are never read, nothing
    is read twice), never past `max_bytes` (less for a split model's later parts).

    Why not a memory map of the whole file: a valid 40 GB GGUF would then need 40 GB of address space,
    and fail under a container's address-space limit although only its first megabytes are read.

    Raises:
        HeaderError: the file cannot be opened, is not a regular file, its header is longer than
            GGUF_MAX_HEADER_BYTES, or is invalid (see `parse_header`).
    """
    p = Path(path)
    note_input(p)  # no output of this run may replace it (core/atomic.py)
    try:
        if not stat.S_ISREG(p.stat().st_mode):  # a FIFO would block the open, a device never ends
            raise HeaderError(f"Cannot read GGUF file '{p}': it is not a regular file.", p)
        with p.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 24:
                head = fh.read(24)
                _endianness(head, str(p))
                raise HeaderError(f"Cannot read GGUF header of '{p}': {size} bytes is too short for a GGUF "
                                  f"file (expected at least 24). Re-download it.", p)

            def window(frm: int, upto: int, stop: int) -> bytes:
                """The file's bytes [frm, stop) (`_Cursor.more`: `upto` is what the parse needs, the rest read-ahead):
                the parse never needs bytes past `max_bytes`; the read-ahead stops there too, or at the first read's
                size where that is more (a split model's later parts have less than that left to them in all, and
                `read_gguf` counts their header bytes against it)."""
                if upto > max_bytes:
                    raise HeaderError(f"Cannot read GGUF header of '{p}': the header runs past {max_bytes} "
                                      f"bytes, more than any real model's (expected a few MB). The file is "
                                      f"corrupt or hostile.", p)
                stop = min(stop, max(max_bytes, _FIRST_READ_BYTES))
                fh.seek(frm)
                new = _read(fh, stop - frm)
                if len(new) < stop - frm:
                    raise HeaderError(f"Cannot read GGUF header of '{p}': the file shrank while being read "
                                      f"(expected {size} bytes).", p)
                return new

            return parse_header(window(0, 0, min(size, _FIRST_READ_BYTES)), str(p), file_size=size, skip=skip,
                                file_index=file_index, _prefix=True, max_tensors=max_tensors, _grow=window)
    except OSError as e:
        raise HeaderError(f"Cannot read GGUF file '{p}': {e.strerror or e}.", p) from e


def _read(fh: Any, n: int) -> bytes:
    """`n` bytes from the file's position on; fewer only at the end of the file (a buffered read
    loops over short reads itself)."""
    return fh.read(n)
