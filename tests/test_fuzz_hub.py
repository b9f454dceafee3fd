"""The Hub path under hostile or failing servers: one retry, then cache/catalog fallback, bounded reads.

The real huggingface_hub client talks to tests/hub_server.py on 127.0.0.1 (HF_ENDPOINT is read at
import, so each scenario group runs in one subprocess that calls `planner.cli.main` once per
command and reports exit code, stdout and stderr as JSON). Nothing leaves the machine.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from pathlib import Path

from .conftest import CONFIGS
from .fuzz.harness import run_planner
from .hub_server import HubServer, Sparse
from .safetensors_util import llama_tensors, write_sparse


def one_error_line(res: dict, *fragments: str) -> str:
    assert res["code"] == 2, res
    lines = res["err"].splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res["err"]
    assert res["out"] == ""
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


class FlakyHub(HubServer):
    """HubServer that closes the connection without a response on the first `drop` requests per repo,
    and can ignore Range headers (serving whole bodies) for repos in `ignore_range`."""

    def __init__(self, repos, *, drop: dict[str, int] | None = None, ignore_range=()) -> None:
        self.drop = dict(drop or {})
        self.ignore_range = set(ignore_range)
        self.dropped: list[str] = []
        self.hung_up: list[str] = []  # bodies the client stopped reading before their end
        super().__init__(repos)

    def _handler(self):
        base, server = super()._handler(), self

        class Handler(base):
            def _serve(self, head: bool) -> None:
                repo = "/".join(self.path.lstrip("/").split("/")[:2])
                if server.drop.get(repo, 0) > 0:
                    server.drop[repo] -= 1
                    server.dropped.append(self.path)
                    self.close_connection = True
                    return  # no status line at all: the client sees the connection closed
                if repo in server.ignore_range and "Range" in self.headers:
                    del self.headers["Range"]
                try:
                    super()._serve(head)
                except (BrokenPipeError, ConnectionResetError):
                    server.hung_up.append(self.path)

        return Handler


def _tiny_repo(tmp_path: Path, name: str = "SmolLM2-135M", **overrides) -> tuple[dict, int]:
    cfg = json.loads((CONFIGS / f"{name}.json").read_text())
    cfg.update(tie_word_embeddings=False, **overrides)
    st = tmp_path / f"{name}-{len(overrides)}.safetensors"
    total = write_sparse(st, llama_tensors(cfg))
    n = struct.unpack("<Q", st.read_bytes()[:8])[0]
    return {"config.json": json.dumps(cfg).encode(), "model.safetensors": Sparse(st.read_bytes()[:8 + n],
                                                                                  st.stat().st_size)}, total


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: connection refused


def test_hub_retry_fallback_and_hostile_servers(tmp_path):
    good, total = _tiny_repo(tmp_path)
    marker = tmp_path / "pwned"
    pickle_payload = b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR."
    cfg_only = {"config.json": good["config.json"], "pytorch_model.bin": pickle_payload,
                "model.pt": pickle_payload, "consolidated.pth": pickle_payload}
    huge_prefix = {"config.json": good["config.json"],
                   "model.safetensors": struct.pack("<Q", 2**60) + b"{}" + b"\0" * 64}
    header_past_end = {"config.json": good["config.json"],
                       "model.safetensors": good["model.safetensors"].head + b"\0" * 64}
    bad_index = {"config.json": good["config.json"], "model.safetensors.index.json": json.dumps(
        {"weight_map": {"model.norm.weight": "../../outside.safetensors"}}).encode()}
    big_tokenizer = {"config.json": good["config.json"], "tokenizer.json": Sparse(b"{", 65 * 2**20)}
    # 40 MB of weights, served whole by a server that ignores Range: the client must hang up after 100 kB
    mid, mid_total = _tiny_repo(tmp_path, num_hidden_layers=2, vocab_size=40_000, hidden_size=256,
                                intermediate_size=512, num_attention_heads=4, num_key_value_heads=2, head_dim=64)
    assert mid_total > 40 * 10**6
    repos = {"acme/flaky": good, "acme/cached": good, "acme/pickles": cfg_only, "acme/huge-prefix": huge_prefix,
             "acme/past-end": header_past_end, "acme/bad-index": bad_index, "acme/big-tokenizer": big_tokenizer,
             "acme/no-range": mid}
    cache = tmp_path / "cache"
    with FlakyHub(repos, drop={"acme/flaky": 1}, ignore_range={"acme/no-range"}) as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache), "HF_TOKEN": "hf_dummy"}
        t0 = time.perf_counter()
        flaky, cached, pickles, huge, past, index, tok, no_range = run_planner(
            [["memory", f"acme/{r}", "--json"] for r in ("flaky", "cached", "pickles", "huge-prefix", "past-end",
                                                          "bad-index", "big-tokenizer", "no-range")], env)
        elapsed = time.perf_counter() - t0
    # one dropped connection, then the retry answers: same exact header-based weights
    assert hub.dropped and flaky["code"] == 0, flaky
    assert json.loads(flaky["out"])["models"][0]["weights_bytes"] == total
    assert cached["code"] == 0 and no_range["code"] == 0, (cached, no_range)
    assert json.loads(no_range["out"])["models"][0]["weights_bytes"] == mid_total
    assert any("no-range/resolve/main/model.safetensors" in p for p in hub.hung_up), hub.hung_up
    # pickles on the Hub are never requested, let alone unpickled
    assert pickles["code"] == 0 and not marker.exists()
    assert not [q for q in hub.requests if q[1].endswith((".bin", ".pt", ".pth"))]
    assert json.loads(pickles["out"])["models"][0]["provenance"]["weights"].startswith("config shapes")
    # hostile headers and files: one line naming the remote file, nothing big read
    one_error_line(huge, "acme/huge-prefix/model.safetensors", "larger than the 25000000-byte maximum")
    one_error_line(past, "acme/past-end/model.safetensors", "truncated")
    one_error_line(index, "invalid shard name")
    one_error_line(tok, "acme/big-tokenizer/tokenizer.json", "limit", "not downloaded")
    assert not [q for q in hub.requests if q[0] == "GET" and "big-tokenizer/resolve/main/tokenizer.json" in q[1]]
    assert elapsed < 60

    # The Hub goes down: a cached repo at another revision, a catalog id, and nothing at all.
    down = {"HF_ENDPOINT": f"http://127.0.0.1:{_closed_port()}", "HF_HUB_CACHE": str(cache),
            "HF_HUB_ETAG_TIMEOUT": "2", "HF_HUB_DOWNLOAD_TIMEOUT": "2"}
    t0 = time.perf_counter()
    from_cache, from_catalog, text, nothing = run_planner([
        ["memory", "acme/cached", "--revision", "v2", "--json"],
        ["memory", "meta-llama/Llama-3.1-8B", "--revision", "v9", "--json"],
        ["memory", "meta-llama/Llama-3.1-8B", "--revision", "v9"],
        ["memory", "acme/never-seen"]], down)
    assert time.perf_counter() - t0 < 60  # one retry, no exponential backoff
    assert from_cache["code"] == 0, from_cache
    w = json.loads(from_cache["out"])["warnings"]
    assert any("could not be reached" in x and "cached snapshot" in x and "revision 'v2'" in x for x in w), w
    assert from_catalog["code"] == 0, from_catalog
    data = json.loads(from_catalog["out"])
    assert data["models"][0]["weights_bytes"] == 16_060_522_496
    assert any("bundled catalog entry" in x for x in data["warnings"]), data["warnings"]
    assert text["code"] == 0 and "warning: " in text["err"] and "bundled catalog entry" in text["err"]
    one_error_line(nothing, "Cannot reach the Hugging Face Hub for 'acme/never-seen'", "2 attempts")
