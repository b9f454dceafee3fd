"""Talking to a running serving engine: one bounded HTTP exchange, stdlib only.

Why its own module: `planner bench --endpoint` reads a server the user launched, and a server is
untrusted input like any file. Every exchange here is bounded in bytes (the body is read to a cap
and refused past it, never truncated) and in time (a connect timeout, a per-read socket timeout and
one deadline for the whole exchange, so a server trickling a byte a second still ends). Only the URL
the user gave is contacted: no redirect is followed, no proxy is consulted (http.client reads no
environment), and the scheme must be http or https. A failure is one EndpointError line saying
whether the server is down, slow, or answered something else.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..core import constants
from ..core.errors import EndpointError, UsageError


@dataclass(frozen=True)
class Endpoint:
    """Where the server listens: scheme, host, port and a path prefix ("" or "/v1"-like)."""

    scheme: str
    host: str
    port: int
    prefix: str

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.prefix}"


def parse_endpoint(url: str, *, what: str = "--endpoint") -> Endpoint:
    """The URL the user gave, checked: http(s), a host, no credentials, no query.

    Raises:
        UsageError: another scheme, no host, user:password@, a query or fragment, a bad port.

    Example:
        >>> parse_endpoint("http://127.0.0.1:8080").url
        'http://127.0.0.1:8080'
    """
    try:
        u = urlsplit(url.strip())
        port = u.port
    except ValueError as e:
        raise UsageError(f"Cannot use {what} '{url}': {e} (expected http://HOST:PORT).") from e
    if u.scheme not in ("http", "https") or not u.hostname:
        raise UsageError(f"Cannot use {what} '{url}' (expected http://HOST:PORT or https://HOST:PORT, e.g. "
                         f"http://127.0.0.1:8080).")
    if u.username or u.password or u.query or u.fragment:
        raise UsageError(f"Cannot use {what} '{url}': credentials, a query or a fragment in the URL (expected "
                         f"http://HOST:PORT[/PREFIX]). Drop them.")
    return Endpoint(u.scheme, u.hostname, port or (443 if u.scheme == "https" else 80), u.path.rstrip("/"))


def exchange(ep: Endpoint, method: str, path: str, body: dict[str, Any] | None = None, *, timeout_s: float,
             max_bytes: int = constants.ENDPOINT_MAX_BYTES) -> bytes:
    """One request and its whole body (status 200 only), within `timeout_s` and `max_bytes`.

    Raises:
        EndpointError: refused or unreachable (down), no answer in time (slow), another status, or a body
            over `max_bytes` (answers something else).
    """
    where = f"{ep.url}{path}"
    deadline = time.monotonic() + timeout_s
    cls = http.client.HTTPSConnection if ep.scheme == "https" else http.client.HTTPConnection
    conn = cls(ep.host, ep.port, timeout=min(timeout_s, constants.ENDPOINT_CONNECT_TIMEOUT_S))
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data is not None else {}
    try:
        conn.request(method, ep.prefix + path, body=data, headers=headers)
        conn.sock.settimeout(max(0.01, deadline - time.monotonic()))
        resp = conn.getresponse()
        out = _read_capped(resp, max_bytes, deadline, where)
        if resp.status != 200:
            shown = out[:120].decode("utf-8", "replace")
            raise EndpointError(f"Cannot bench '{where}': the server answered HTTP {resp.status} (expected 200: "
                                f"{shown!r}). Check the URL and --engine.")
        return out
    except EndpointError:  # a ConnectionError too: not to be re-worded below
        raise
    except (ConnectionRefusedError, socket.gaierror) as e:
        raise EndpointError(f"Cannot bench '{where}': the server is down or unreachable ({e}) (expected a "
                            f"running server). Start it, then rerun.") from e
    except TimeoutError as e:
        raise EndpointError(f"Cannot bench '{where}': the server did not answer within {timeout_s:g} s (expected "
                            f"an answer in time). Raise --timeout or lower --tokens.") from e
    except (http.client.HTTPException, OSError) as e:
        raise EndpointError(f"Cannot bench '{where}': the exchange failed ({type(e).__name__}: {e}) (expected "
                            f"an HTTP answer). Check that the URL is the engine's server.") from e
    finally:
        conn.close()


def _read_capped(resp: http.client.HTTPResponse, max_bytes: int, deadline: float, where: str) -> bytes:
    """The body in chunks, refused past `max_bytes` or past the deadline (a server trickling bytes)."""
    chunks: list[bytes] = []
    n = 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError("deadline passed while reading the body")
        chunk = resp.read(min(65536, max_bytes + 1 - n))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        n += len(chunk)
        if n > max_bytes:
            raise EndpointError(f"Cannot bench '{where}': the answer is larger than {max_bytes} bytes (expected a "
                                f"bounded JSON or metrics page). Check that the URL is the engine's server.")


def exchange_json(ep: Endpoint, method: str, path: str, body: dict[str, Any] | None = None, *,
                  timeout_s: float) -> dict[str, Any]:
    """exchange() parsed as one JSON object.

    Raises:
        EndpointError: as exchange(), or the body is not a JSON object.
    """
    raw = exchange(ep, method, path, body, timeout_s=timeout_s)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise EndpointError(f"Cannot bench '{ep.url}{path}': the answer is not JSON ({type(e).__name__}) "
                            f"(expected the engine's JSON reply). Check --engine and the URL.") from e
    if not isinstance(doc, dict):
        raise EndpointError(f"Cannot bench '{ep.url}{path}': the answer is a JSON {type(doc).__name__} (expected "
                            f"an object). Check --engine and the URL.")
    return doc
