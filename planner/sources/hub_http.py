"""Bounded HTTP bodies from the Hub: a byte cap on what is received, a total deadline, our own gzip decoding.

Why: a per-read timeout does not bound a server that drips one byte every few seconds, a size
checked on HEAD does not bound the GET body that follows, and an HTTP client that decodes gzip for
us can turn 64 KiB received into 64 MiB held. So every body is read raw (`iter_raw`), counted as it
arrives, decoded here with a `zlib` object that is never asked for more than the cap, and abandoned
when the deadline passes; `run_within` puts the whole exchange (headers included) under the deadline
by running it in a daemon thread the CLI can leave behind.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..core.errors import OfflineError, SourceError

T = TypeVar("T")
_CHUNK = 65536


class Deadline:
    """A point in time (time.monotonic) that every read of one Hub fetch must finish by."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return self.at - time.monotonic()

    def check(self, origin: str) -> None:
        if self.left() <= 0:
            raise DeadlineExceeded(f"Cannot read '{origin}' from the Hub: no complete answer within the "
                                   f"{self.seconds:g} s deadline for the whole fetch (a slow or stalled server). "
                                   f"Check HF_ENDPOINT, or set HF_HUB_OFFLINE=1 to use local files only.")


class DeadlineExceeded(OfflineError):
    """The total deadline of a Hub fetch passed (however slowly bytes arrived): the Hub did not answer,
    so the cache or catalog fallback applies as for a Hub that is down."""


def read_body(r: Any, *, cap: int, deadline: Deadline, origin: str, truncate: bool) -> bytes:
    """The decoded body of a streamed httpx/requests response, at most `cap` bytes.

    truncate=True keeps the first `cap` bytes and hangs up (a ranged read from a server that ignores
    Range); truncate=False refuses a body longer than `cap` (a file whose HEAD size was checked).

    Raises:
        SourceError: the body (raw or decoded) is over `cap`, its encoding is not identity/gzip/deflate,
            it is not valid gzip/deflate, or the deadline passed (DeadlineExceeded).
    """
    decoder = _decoder(r.headers.get("Content-Encoding", ""), origin)
    raw_cap = cap + 1 if decoder is None else max(cap, 1 << 20) + 1  # compressed bytes may exceed cap a little
    out = bytearray()
    received = 0
    try:
        for chunk in _raw_chunks(r):
            deadline.check(origin)
            received += len(chunk)
            if received > raw_cap and not truncate:
                raise _too_big(origin, cap, "received")
            out += decoder.decompress(chunk, cap + 1 - len(out)) if decoder is not None else chunk
            if truncate and (len(out) >= cap or received > raw_cap):
                return bytes(out[:cap])  # enough: hang up on the rest
            if len(out) > cap or received > raw_cap:
                raise _too_big(origin, cap, "decoded" if decoder is not None else "received")
        if decoder is not None:
            out += decoder.flush(cap + 1 - len(out)) if hasattr(decoder, "flush") else b""
            if not decoder.eof:
                raise SourceError(f"Cannot read '{origin}' from the Hub: the compressed body ends early (truncated "
                                  f"or undecodable gzip). Try again, or check HF_ENDPOINT.", origin)
    except zlib.error as e:
        raise SourceError(f"Cannot read '{origin}' from the Hub: the body is not valid gzip/deflate ({e}). "
                          f"Check HF_ENDPOINT.", origin) from e
    if len(out) > cap and not truncate:
        raise _too_big(origin, cap, "decoded")
    return bytes(out[:cap])


def _raw_chunks(r: Any) -> Iterable[bytes]:
    if hasattr(r, "iter_raw"):  # httpx (huggingface_hub >= 1.0)
        return r.iter_raw(_CHUNK)
    return r.raw.stream(_CHUNK, decode_content=False)  # requests/urllib3 (older hub)


def _decoder(encoding: str, origin: str) -> Any:
    enc = encoding.strip().lower()
    if enc in ("", "identity"):
        return None
    if enc in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if enc == "deflate":
        return zlib.decompressobj()
    raise SourceError(f"Cannot read '{origin}' from the Hub: unsupported Content-Encoding '{enc[:40]}' (expected "
                      f"identity or gzip; the request asked for identity). Check HF_ENDPOINT.", origin)


def _too_big(origin: str, cap: int, how: str) -> SourceError:
    return SourceError(f"Cannot read '{origin}' from the Hub: the server sent more than the {cap}-byte limit "
                       f"({how} body; larger than its HEAD said, or a compression bomb). Not stored.", origin)


def run_within(fn: Callable[[], T], deadline: Deadline, origin: str) -> T:
    """fn() in a daemon thread, waited for until the deadline: what bounds a server that drips its headers.

    A thread still reading when the deadline passes is left behind (daemon: it never delays the exit)
    and stops at its next chunk, since every read loop checks the same deadline.
    """
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except Exception as e:  # handed to the waiting thread below, raised there
            box["error"] = e

    t = threading.Thread(target=work, name="planner-hub", daemon=True)
    t.start()
    while t.is_alive():
        t.join(max(0.01, deadline.left()))
        deadline.check(origin)
    if "error" in box:
        raise box["error"]
    return box["value"]


def parallel_map(fn: Callable[[Any], T], items: list[Any], workers: int, deadline: Deadline, origin: str
                 ) -> list[T]:
    """[fn(x) for x in items] over up to `workers` daemon threads, in order, under the deadline.

    Why not ThreadPoolExecutor: its threads are joined at interpreter exit, so one stalled shard read
    would hold the process after the deadline answered.
    """
    results: list[Any] = [None] * len(items)
    errors: list[BaseException] = []
    lock = threading.Lock()
    queue = list(enumerate(items))

    def work() -> None:
        while not errors:
            with lock:
                if not queue:
                    return
                i, x = queue.pop()
            try:
                results[i] = fn(x)
            except Exception as e:  # handed to the waiting thread below, raised there
                errors.append(e)

    threads = [threading.Thread(target=work, name="planner-hub-shard", daemon=True)
               for _ in range(max(1, min(workers, len(items))))]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(max(0.01, deadline.left()))
            deadline.check(origin)
    if errors:
        raise errors[0]
    return results
