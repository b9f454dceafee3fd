"""A minimal Hugging Face Hub on 127.0.0.1 for tests: the real huggingface_hub client talks to it.

Serves `/{org}/{name}/resolve/{revision}/{file}` (HEAD and GET with Range) from a dict
of repos, with the headers the client reads (X-Repo-Commit, ETag, Content-Length) and
HF error codes (RepoNotFound, EntryNotFound). Records each request so tests can check
that only headers were read.
"""

from __future__ import annotations

import hashlib
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class Sparse:
    """A large file served from its first bytes, the rest reading as zeros (a sparse file on disk).

    Lets a test serve a multi-GB checkpoint's true size (HEAD Content-Length, Content-Range total)
    while holding only its header in memory.
    """

    def __init__(self, head: bytes, size: int) -> None:
        self.head, self.size = head, size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, s: slice) -> bytes:
        start, stop = s.start or 0, min(self.size, len(self) if s.stop is None else s.stop)
        got = self.head[start:stop]
        return got + b"\0" * max(0, stop - max(start, len(self.head)))

    def digest(self) -> bytes:
        return self.head + str(self.size).encode()


class HubServer:
    def __init__(self, repos: dict[str, dict[str, bytes]]) -> None:
        self.repos = repos
        self.requests: list[tuple[str, str, str | None]] = []
        handler = self._handler()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> HubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def _serve(self, head: bool) -> None:
                server.requests.append((self.command, self.path, self.headers.get("Range")))
                m = re.match(r"^/(?:models/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+?)(\?.*)?$", self.path)
                if not m:
                    return self._error(404, "RepoNotFound", head)
                repo, _rev, fname = m.group(1), m.group(2), m.group(3)
                if repo not in server.repos:
                    return self._error(404, "RepoNotFound", head)
                files = server.repos[repo]
                if fname not in files:
                    return self._error(404, "EntryNotFound", head)
                body = files[fname]
                status, start, end = 200, 0, len(body)
                rng = self.headers.get("Range")
                if rng:
                    a, b = re.match(r"bytes=(\d+)-(\d*)", rng).groups()
                    start, end = int(a), min(int(b) + 1 if b else len(body), len(body))
                    status = 206
                chunk = body[start:end]
                self.send_response(status)
                self.send_header("X-Repo-Commit", COMMIT)
                digest = body.digest() if isinstance(body, Sparse) else body
                self.send_header("ETag", '"' + hashlib.sha256(digest).hexdigest() + '"')
                self.send_header("Content-Length", str(len(chunk)))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(body)}")
                self.end_headers()
                if not head:
                    self.wfile.write(chunk)

            def _error(self, code: int, err: str, head: bool) -> None:
                msg = f"{err}: {self.path}".encode()
                self.send_response(code)
                self.send_header("X-Error-Code", err)
                self.send_header("X-Error-Message", err)
                self.send_header("Content-Length", str(0 if head else len(msg)))
                self.end_headers()
                if not head:
                    self.wfile.write(msg)

            def do_HEAD(self) -> None:
                self._serve(head=True)

            def do_GET(self) -> None:
                self._serve(head=False)

        return Handler
