"""GGUF metadata values: the value types and a bounds-checked cursor that reads them from a header buffer.

Why apart from gguf_header.py (the file, the tensor infos, the read loop): this is where an untrusted length or
count is read, and each is checked against the bytes left and the caps in `planner.core.constants` before
anything is allocated (format: ggml docs/gguf.md; a string is a u64 byte length + UTF-8 bytes, an array a u32
element type + u64 count + elements).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from ..core.constants import (
    GGUF_MAX_ARRAY_DEPTH,
    GGUF_MAX_ARRAY_LEN,
    GGUF_MAX_NESTED_ARRAYS,
    GGUF_MAX_STRING_BYTES,
)
from ..core.errors import HeaderError

# GGUF value types (ggml/include/gguf.h enum gguf_type) -> struct code (None: not fixed-size).
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
VALUE_TYPE_NAMES = ("UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING",
                    "ARRAY", "UINT64", "INT64", "FLOAT64")
_CODES = {UINT8: "B", INT8: "b", UINT16: "H", INT16: "h", UINT32: "I", INT32: "i", FLOAT32: "f", BOOL: "?",
          UINT64: "Q", INT64: "q", FLOAT64: "d"}
INTEGER_TYPES = frozenset({UINT8, INT8, UINT16, INT16, UINT32, INT32, UINT64, INT64})
# Smallest encoding of one array element: strings need their 8-byte length, arrays 12 bytes.
_MIN_ELEM_BYTES = {**{t: struct.calcsize(c) for t, c in _CODES.items()}, STRING: 8, ARRAY: 12}


class SkippedArray:
    """An array that was validated but not materialised (see `DEFAULT_SKIP`).

    A slotted class, not a tuple (metadata arrays are tuples: a skipped one must not read as one) and not a
    dataclass (~1 ms of every GGUF ledger's start-up, issue #33)."""

    __slots__ = ("count", "elem_type")

    def __init__(self, elem_type: int, count: int) -> None:
        self.elem_type, self.count = elem_type, count

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SkippedArray) and (self.elem_type, self.count) == (other.elem_type, other.count)

    def __hash__(self) -> int:
        return hash((SkippedArray, self.elem_type, self.count))

    def __repr__(self) -> str:
        return f"SkippedArray(elem_type={self.elem_type}, count={self.count})"


# A skipped string array of at least this many strings is leapt over (see `_Cursor._leap_over`); shorter ones
# walk in less time than a search's set-up.
LEAP_MIN_STRINGS = 4096
_SEVEN_ZEROS, _THREE_ZEROS = bytes(7), bytes(3)
# A read window (see `_Cursor.more`): 64 KiB where the read jumps ahead, doubled while it goes on, at most 8 MiB.
_MIN_WINDOW, _MAX_WINDOW = 1 << 16, 1 << 23
_KEY_BYTES = bytes(range(0x21, 0x7F))


class _NeedMore(Exception):  # internal: a prefix of a local file ran out before the header did
    def __init__(self, upto: int) -> None:
        super().__init__(upto)
        self.upto = upto


class _Cursor:
    """A bounds-checked position in a header buffer; every read names the key it serves.

    `end` is where the file ends (claims are checked against it); `buf` holds the file's bytes from `base`
    to `avail` (the read window; positions are the file's): a read outside it but inside `end` asks for a
    new window (`more`), or, without `grow`, for a longer prefix (`_NeedMore`).
    """

    __slots__ = ("avail", "base", "buf", "chunk", "e", "elems", "end", "etype", "grow", "leap", "leaped", "origin",
                 "pos")

    def __init__(self, buf: Any, origin: str, endian: str, end: int | None = None,
                 grow: Callable[[int, int, int], Any] | None = None, base: int = 0) -> None:
        self.buf, self.origin, self.e, self.grow, self.base = buf, origin, endian, grow, base
        self.pos, self.avail, self.elems, self.etype = 0, base + len(buf), 0, 0
        self.end = self.avail if end is None else end
        self.chunk = _MIN_WINDOW
        self.leap: bytes | None = None  # set by parse_header: the namespace of the key a skipped array may leap to
        self.leaped = False  # a leap was taken: the parse is provisional until the whole header checks out

    def more(self, upto: int, frm: int | None = None) -> None:
        """Bytes up to `upto` (inside the file), from `frm` on (default: the cursor's position, the first byte
        any reader still looks at): `grow(frm, stop)` returns the file's bytes [frm, stop), the new window, so
        the walk goes on where it stopped; without it the whole parse starts again on a longer prefix.

        Why a window and not the whole prefix: the bytes a skipped table of fixed-size values spans (a 262k
        vocabulary's scores and token types: 2 MB of Gemma 3's 6.5 MB header) are never read, nor is a leapt
        table's least length (8 bytes a string), and nothing is read twice. The window grows like a read-ahead:
        double the last where it goes on from the last, 64 KiB where it jumps."""
        if self.grow is None:
            raise _NeedMore(upto)
        frm = self.pos if frm is None else frm
        goes_on = self.base <= frm <= self.avail < upto
        self.chunk = min(2 * self.chunk, _MAX_WINDOW) if goes_on else _MIN_WINDOW
        stop = min(self.end, max(upto, frm + self.chunk))
        if goes_on:  # the window's bytes from `frm` on are kept, only the rest is read
            kept = self.buf[frm - self.base:]
            rest = self.grow(self.avail, upto, stop)
            self.buf = kept + rest if kept else rest
        else:
            self.buf = self.grow(frm, upto, stop)
        self.base = frm
        self.avail = frm + len(self.buf)

    def fail(self, what: str, reason: str, fix: str = "The file is corrupt or not a GGUF model: "
             "re-download or re-convert it") -> HeaderError:
        return HeaderError(f"Cannot read GGUF header of '{self.origin}': {what}: {reason}. {fix}.", self.origin)

    def need(self, n: int, what: str) -> None:
        if n > self.end - self.pos:
            raise self.fail(what, f"needs {n} more bytes at offset {self.pos} but only {self.end - self.pos} "
                                  f"remain (truncated file)")
        if self.pos + n > self.avail or self.pos < self.base:
            self.more(self.pos + n)

    def scalar(self, vtype: int, what: str) -> Any:
        code = _CODES[vtype]
        size = _MIN_ELEM_BYTES[vtype]
        self.need(size, what)
        (v,) = struct.unpack_from(self.e + code, self.buf, self.pos - self.base)
        self.pos += size
        return v

    def count(self, what: str, cap: int, elem_bytes: int) -> int:
        """A u64 count checked against the bytes left (elem_bytes each at least) and `cap`."""
        n = self.scalar(UINT64, what)
        if n * elem_bytes > self.end - self.pos:
            raise self.fail(what, f"claims {n} elements ({n * elem_bytes} bytes at least) but only "
                                  f"{self.end - self.pos} bytes remain")
        if n > cap:
            raise self.fail(what, f"claims {n} elements, more than the {cap} allowed")
        return n

    def string(self, what: str, cap: int = GGUF_MAX_STRING_BYTES) -> str:
        n = self.scalar(UINT64, what)
        if n > self.end - self.pos:
            raise self.fail(what, f"string of {n} bytes but only {self.end - self.pos} remain (truncated)")
        if n > cap:
            raise self.fail(what, f"string of {n} bytes is longer than the {cap} allowed")
        self.need(n, what)
        at = self.pos - self.base
        s = self.buf[at:at + n]
        self.pos += n
        return bytes(s).decode("utf-8", "replace")

    def value(self, vtype: int, key: str, depth: int = 0, skip: bool = False) -> Any:
        if vtype in _CODES:
            return self.scalar(vtype, f"key '{key}'")
        if vtype == STRING:
            return self.string(f"key '{key}'")
        if vtype == ARRAY:
            return self.array(key, depth, skip)
        raise self.fail(f"key '{key}'", f"unknown value type {vtype} (expected 0-12: "
                                        f"{', '.join(VALUE_TYPE_NAMES)})")

    def array(self, key: str, depth: int, skip: bool) -> Any:
        what = f"array '{key}'"
        if depth >= GGUF_MAX_ARRAY_DEPTH:
            raise self.fail(what, f"arrays nested deeper than {GGUF_MAX_ARRAY_DEPTH} levels")
        etype = self.scalar(UINT32, what)
        if etype not in _MIN_ELEM_BYTES:
            raise self.fail(what, f"unknown element type {etype} (expected 0-12)")
        n = self.count(what, GGUF_MAX_ARRAY_LEN if etype != ARRAY else GGUF_MAX_NESTED_ARRAYS, _MIN_ELEM_BYTES[etype])
        self.elems += n
        if self.elems > 4 * GGUF_MAX_ARRAY_LEN:
            raise self.fail(what, f"the arrays hold more than {4 * GGUF_MAX_ARRAY_LEN} elements in all")
        if etype in _CODES:
            size = _MIN_ELEM_BYTES[etype] * n
            if skip:  # a skipped table of fixed-size values is never read (the window leaps over it)
                out: Any = SkippedArray(etype, n)
            else:
                self.need(size, what)
                out = struct.unpack_from(f"{self.e}{n}{_CODES[etype]}", self.buf, self.pos - self.base)
            self.pos += size
        elif etype == STRING:
            vals = self.string_array(n, what, skip)
            out = SkippedArray(etype, n) if skip else vals
        else:
            out = tuple(self.value(ARRAY, f"{key}[{i}]", depth + 1) for i in range(n))
        self.etype = etype  # the element type of the array read last (the header records it per key)
        return out

    def string_array(self, n: int, what: str, skip: bool) -> tuple[str, ...]:
        """n strings in one loop (the hot path: 262k tokens), then one decode of the joined bytes.

        `_walk` goes as far as the bytes read; where they end inside the array the cursor reads on and the
        walk resumes at the next string (no string is walked twice). A length past the end of the file
        sends the array to the checked loop, which says exactly where. A skipped array keeps nothing.
        """
        if skip and self.leap is not None and n >= LEAP_MIN_STRINGS and self._leap_over(n):
            return ()
        parts: list[bytes] = []
        start, kept = self.pos, None if skip else parts  # None: the walk keeps nothing
        done, pos = 0, start
        while True:
            if pos < self.base:  # a leap that found no key left the window past the table's start
                self.more(pos + 8, frm=pos)
            base = self.base
            walked, pos, need = _walk(self.buf, pos - base, n - done, self.e, kept)
            done, pos, need = done + walked, pos + base, need + base
            if pos > self.end or (done < n and need > self.end):  # a length past the file: say exactly which
                self.pos = start
                parts = self._checked_strings(n, what, skip)
                break
            if done == n:
                self.pos = pos
                break
            self.more(need, frm=pos)  # the bytes read end inside the array: read on, walk on from string `done`
        if skip or not n:
            return ()
        # One decode: NUL is a whole UTF-8 character and never part of an invalid sequence, so
        # splitting the joined text on it gives back the n strings unless one contains a NUL.
        text = b"\x00".join(parts).decode("utf-8", "replace")
        if text.count("\x00") == n - 1:
            return tuple(text.split("\x00"))
        return tuple(bytes(p).decode("utf-8", "replace") for p in parts)

    def _leap_over(self, n: int) -> bool:
        """Put the cursor where the key after a skipped string array begins, found by search, not by walking.

        Why: walking a 262k-token table's length prefixes one by one is most of a GGUF ledger's time, and all
        it yields is where the table ends. Writers group keys by namespace (gguf-py `GGUFWriter` writes the
        tokenizer's keys together), so the key after `tokenizer.ggml.tokens` begins with `tokenizer.` too:
        one C-speed `find` of that namespace from the least end the array can have (8 bytes a string), and a
        place counts only where it reads as a key: a little/big-endian u64 length equal to the key's, the
        key printable ASCII, then a u32 value type 0-12. The result is provisional: a token that looks like a
        key, or a next key in another namespace, gives a wrong place, so a parse that leapt counts only when
        the whole rest of the header checks out (every key, every tensor info, tensor data inside the file);
        otherwise `parse_header` parses again walking every string (the exact path).
        Returns False (walk instead) where no such key follows before the end of the file.
        """
        ns, big = self.leap, self.e == ">"
        assert ns is not None
        at = self.pos + 8 * n + 8  # the least end (n empty strings) plus the key's own length prefix
        while True:
            buf, base = self.buf, self.base
            c = buf.find(ns, at - base) if at - 8 >= base else -1
            if c < 0:
                if self.avail >= self.end:
                    return False
                at = max(at, self.avail - len(ns))  # a namespace cut by the end of the bytes read is found again
                self.more(min(self.end, max(at, self.avail + 1)), frm=at - 8)  # a key's length precedes it
                continue
            c += base
            ln = buf[c - 1 - base] if big else buf[c - 8 - base]
            if self.avail < c + ln + 4 and self.avail < self.end:
                at = c
                self.more(min(self.end, c + ln + 4), frm=c - 8)  # the key and its type must be in the bytes read
                continue
            r = c - base
            key, vt = buf[r:r + ln], buf[r + ln:r + ln + 4]
            zeros, vtype, rest = (buf[r - 8:r - 1], vt[3:], vt[:3]) if big else (buf[r - 7:r], vt[:1], vt[1:])
            if (ln > len(ns) and zeros == _SEVEN_ZEROS and rest == _THREE_ZEROS and vtype and vtype[0] <= 12
                    and not key.translate(None, _KEY_BYTES)):  # every byte of the key printable, no space
                self.pos, self.leaped = c - 8, True
                return True
            at = c + 1

    def _checked_strings(self, n: int, what: str, skip: bool) -> list[bytes]:
        """The array walked with every length checked against the file and the bytes read (the slow path)."""
        pos, end = self.pos, self.end
        unpack = struct.Struct(self.e + "Q").unpack_from
        parts: list[bytes] = []
        add = parts.append
        try:
            for _ in range(n):
                if pos + 8 > self.avail or pos < self.base:
                    if pos + 8 > end:
                        raise struct.error
                    self.more(pos + 8, frm=pos)
                ln = unpack(self.buf, pos - self.base)[0]
                pos += 8
                if ln > end - pos:
                    raise self.fail(what, f"string of {ln} bytes at offset {pos} but only {end - pos} remain "
                                          f"(truncated)")
                if not skip:
                    if pos + ln > self.avail:
                        self.more(pos + ln, frm=pos)
                    add(self.buf[pos - self.base:pos - self.base + ln])
                pos += ln
        except struct.error:
            raise self.fail(what, f"string length at offset {pos} runs past the end (truncated)") from None
        self.pos = pos
        return parts


def _walk(buf: Any, pos: int, n: int, endian: str, parts: list[bytes] | None) -> tuple[int, int, int]:
    """Up to n length-prefixed strings from `pos`, their bytes added to `parts` (None: skipped).

    Returns (strings walked, the position after them, the byte the next one needs): fewer than n only where
    the bytes in `buf` end. Why apart from the checked loop: three operations a string instead of ten (a
    262k-token vocabulary and its merges are most of a GGUF ledger's time). Nothing here trusts a length: a
    kept string is cut off before a slice could pass the buffer, positions only grow, so the caller's one
    look at the last position (and the byte needed next) against the file's end catches any lying length.
    """
    unpack = struct.Struct(endian + "Q").unpack_from
    avail, i = len(buf), 0
    try:
        if parts is None:  # skipped: a string may end past the bytes read, the next length may not
            for i in range(n):  # noqa: B007  (i counts the strings walked when a read fails)
                pos += unpack(buf, pos)[0] + 8
            else:
                i = n
        else:
            add = parts.append
            for i in range(n):
                stop = pos + 8 + unpack(buf, pos)[0]
                if stop > avail:
                    return i, pos, stop
                add(buf[pos + 8:stop])
                pos = stop
            else:
                i = n
    except struct.error:  # string i's length lies past the bytes read
        return i, pos, pos + 8
    return i, pos, pos
