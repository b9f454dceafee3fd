"""A hostile mirror (HF_ENDPOINT) and a hostile HF cache: nothing written outside the cache, every read bounded.

Each scenario reproduces an attack of issue #19 against the real huggingface_hub client on 127.0.0.1:
an ETag or X-Repo-Commit holding `../`, a GET body larger than its HEAD said, a gzip bomb, undecodable
gzip, a server dripping one byte at a time, a redirect loop, and a sparse 3 GB `refs/main` in the cache.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import resource
import subprocess
import sys
import time
import zlib
from pathlib import Path

from .fuzz.harness import ROOT, run_planner
from .hub_server import COMMIT, HubServer
from .test_fuzz_hub import _tiny_repo, one_error_line
from .test_hardening_inputs import PEAK_RSS


class HostileHub(HubServer):
    """HubServer where each repo may misbehave: `modes[repo]` names how (see `_serve`)."""

    def __init__(self, repos, modes: dict[str, str], escape: Path) -> None:
        self.modes, self.escape = modes, escape
        super().__init__(repos)

    def _handler(self):
        base, server = super()._handler(), self

        class Handler(base):
            def send_header(self, key: str, value: str) -> None:
                mode = server.modes.get(self._repo())
                if mode == "etag" and key == "ETag":
                    value = '"../../../../../../../..' + str(server.escape / "etag-escaped") + '"'
                if mode == "commit" and key == "X-Repo-Commit":
                    value = "../../../../../../../.." + str(server.escape / "commit-escaped")
                super().send_header(key, value)

            def _repo(self) -> str:
                return "/".join(self.path.lstrip("/").split("/")[:2])

            def _serve(self, head: bool) -> None:
                mode = server.modes.get(self._repo())
                is_config = self.path.split("?")[0].endswith("/config.json")
                if mode == "redirect-loop":
                    self.send_response(302)
                    self.send_header("Location", self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if head or not is_config or mode in ("etag", "commit"):
                    return super()._serve(head)
                body, enc = self._body(mode)
                self.send_response(200)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", '"abc"')
                if enc:
                    self.send_header("Content-Encoding", enc)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    if mode == "drip":
                        for b in body:
                            self.wfile.write(bytes([b]))
                            self.wfile.flush()
                            time.sleep(0.5)
                    else:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _body(self, mode: str | None) -> tuple[bytes, str | None]:
                config = server.repos[self._repo()]["config.json"]
                if mode == "bigger":  # HEAD said len(config); the GET sends 17 MiB
                    return config[:-1] + b" " * (17 * 2**20) + b"}", None
                if mode == "bomb":  # 64 KiB on the wire, 64 MiB decoded
                    return zlib.compress(b" " * (64 * 2**20), 9), "deflate"
                if mode == "gzip-garbage":
                    return b"\x1f\x8b\x08\x00garbage, not deflate data" * 4, "gzip"
                if mode == "gzip-ok":
                    return gzip.compress(config), "gzip"
                return config, None

        return Handler


def _files_under(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*")}


def test_hostile_mirror_never_writes_outside_the_cache_and_every_read_is_bounded(tmp_path):
    good, total = _tiny_repo(tmp_path)
    modes = {"acme/etag": "etag", "acme/commit": "commit", "acme/bigger": "bigger", "acme/bomb": "bomb",
             "acme/garbage": "gzip-garbage", "acme/gzip": "gzip-ok", "acme/drip": "drip",
             "acme/loop": "redirect-loop"}
    escape = tmp_path / "outside"
    escape.mkdir()
    cache = tmp_path / "cache"
    with HostileHub({r: good for r in modes}, modes, escape) as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache), "SPEC_PLANNER_HUB_DEADLINE_S": "4"}
        t0 = time.perf_counter()
        res = dict(zip(modes, run_planner([["memory", r, "--json"] for r in modes], env), strict=True))
        elapsed = time.perf_counter() - t0
    # 1. names from the server never become paths: the ETag is not the blob name, a bad commit is refused
    assert res["acme/etag"]["code"] == 0, res["acme/etag"]
    assert json.loads(res["acme/etag"]["out"])["models"][0]["weights_bytes"] == total
    assert not list(escape.iterdir()) and not list(tmp_path.rglob("*escaped*"))
    one_error_line(res["acme/commit"], "X-Repo-Commit", "not a 40-hex commit id")
    real_cache = str(cache.resolve())
    for f in cache.rglob("*"):
        assert str(f.resolve()).startswith(real_cache), f
    # 3. bounded bodies: a body over its cap (raw or decoded), undecodable gzip, a redirect loop: one line each
    one_error_line(res["acme/bigger"], "acme/bigger/config.json", "more than the 16777216-byte limit")
    one_error_line(res["acme/bomb"], "acme/bomb/config.json", "compression bomb")
    one_error_line(res["acme/garbage"], "acme/garbage/config.json", "gzip")
    one_error_line(res["acme/loop"], "acme/loop", "redirect")
    assert res["acme/gzip"]["code"] == 0, res["acme/gzip"]  # a gzip body within its cap is fine
    # a server dripping one byte every 0.5 s: the total deadline ends it (not the per-read timeout)
    one_error_line(res["acme/drip"], "acme/drip", "4 s deadline")
    assert not [f for f in _files_under(cache) if "bomb" in f and "blobs" in f]
    assert elapsed < 40, elapsed


def test_sparse_refs_file_in_the_cache_is_not_read(tmp_path):
    """A 3 GB refs/main (0 bytes on disk) used to cost ~9 GB RSS and 30 s; now it is not a ref at all."""
    cache = tmp_path / "hub"
    refs = cache / "models--acme--sparse" / "refs"
    refs.mkdir(parents=True)
    with open(refs / "main", "wb") as fh:
        fh.truncate(3 * 10**9)
    code = (PEAK_RSS + "from planner.cli import main\ntry:\n    main(['memory', 'acme/sparse'])\n"
            "except SystemExit as e:\n    print('rc', e.code, peak_kib())\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "SPEC_PLANNER"))}
    env.update(HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=60, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30,) * 2))
    assert time.perf_counter() - t0 < 20
    rc, rss_kib = r.stdout.split()[1:]
    assert rc == "2" and int(rss_kib) < 400 * 1024, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "acme/sparse" in lines[0], r.stderr


class RandomHub(HubServer):
    """Each repo answers with one drawn misbehaviour: lying headers, odd statuses, encodings and bodies."""

    def __init__(self, repos, plans: dict[str, dict]) -> None:
        self.plans = plans
        super().__init__(repos)

    def _handler(self):
        base, server = super()._handler(), self

        class Handler(base):
            def _serve(self, head: bool) -> None:
                repo = "/".join(self.path.lstrip("/").split("/")[:2])
                plan = server.plans.get(repo)
                if plan is None or not self.path.split("?")[0].endswith(plan["file"]):
                    return super()._serve(head)
                body = plan["body"]
                self.send_response(plan["status"])
                for k, v in plan["headers"].items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(plan.get("length", len(body))))
                self.end_headers()
                if not head:
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self.wfile.write(body)

        return Handler


def _plans(rng, good_config: bytes, n: int) -> dict[str, dict]:
    names = ["../../../../x", "..", "/etc/passwd", "a" * 300, "\x00", "", "0" * 40, COMMIT, "ab/../../cd",
             "W/\"../../y\"", "%2e%2e%2f%2e%2e%2fz"]
    plans = {}
    for i in range(n):
        body = rng.choice([good_config, good_config[: len(good_config) // 2], b"\x1f\x8b" + os.urandom(64),
                           gzip.compress(good_config), zlib.compress(b" " * (20 * 2**20)), b"", os.urandom(300)])
        headers = {"ETag": '"' + rng.choice(names) + '"', "X-Repo-Commit": rng.choice(names)}
        if rng.random() < 0.5:
            headers["Content-Encoding"] = rng.choice(["gzip", "deflate", "br", "identity", "x-what"])
        if rng.random() < 0.2:
            headers["Location"] = rng.choice(["/", "http://127.0.0.1:1/", "../../../x", "//evil"])
        if rng.random() < 0.2:
            headers["X-Linked-Size"] = rng.choice(["-1", "99999999999999999999", "abc"])
        status = rng.choice([200, 200, 200, 206, 302, 307, 404, 416, 500, 429])
        plans[f"rnd/r{i}"] = {"file": rng.choice(["config.json", "tokenizer.json", "model.safetensors"]),
                             "body": body, "headers": headers, "status": status,
                             **({"length": rng.choice([0, 1, len(body) + 10])} if rng.random() < 0.3 else {})}
    return plans


def test_random_hostile_mirrors_never_escape_the_cache_or_trace(tmp_path):
    """Independent draws of the same classes (seeded, not the files above): exit 0/1/2, one line, all in the cache."""
    import random

    good, _ = _tiny_repo(tmp_path)
    plans = _plans(random.Random(19), good["config.json"], 24)
    cache = tmp_path / "cache"
    with RandomHub({r: good for r in plans}, plans) as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache), "SPEC_PLANNER_HUB_DEADLINE_S": "5"}
        t0 = time.perf_counter()
        results = run_planner([["memory", r, "--json"] for r in plans], env)
        assert time.perf_counter() - t0 < 120
    for r, res in zip(plans, results, strict=True):
        assert res["code"] in (0, 1, 2), (r, plans[r]["headers"], res)
        if res["code"] == 2:
            assert len(res["err"].splitlines()) == 1 and res["err"].startswith("error: "), (r, res)
    real = str(cache.resolve())
    for f in cache.rglob("*"):
        assert str(f.resolve()).startswith(real), f
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*(p.name for p in tmp_path.glob("*.safetensors")), "cache"])
