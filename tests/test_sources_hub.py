"""HF cache first, then the Hub (real huggingface_hub client against a local server), offline errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .conftest import CONFIGS
from .hub_server import HubServer, Sparse
from .safetensors_util import llama_tensors, write_sparse


def planner(args, env, timeout=60):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "SPEC_PLANNER"))}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True, text=True,
                          env=full, timeout=timeout)


def _repo_files(tmp_path, name="SmolLM2-135M"):
    cfg = json.loads((CONFIGS / f"{name}.json").read_text())
    cfg["tie_word_embeddings"] = False
    st = tmp_path / "model.safetensors"
    total = write_sparse(st, llama_tensors(cfg))
    # The hub client reads only the first bytes; serve the header, the rest of the true size as zeros.
    header_len = int.from_bytes(st.read_bytes()[:8], "little")
    blob = Sparse(st.read_bytes()[: 8 + header_len], st.stat().st_size)
    return {"config.json": json.dumps(cfg).encode(), "model.safetensors": blob,
            "generation_config.json": b'{"eos_token_id": [2, 7]}'}, total


def test_hub_header_only_reads(tmp_path):
    files, total = _repo_files(tmp_path)
    with HubServer({"acme/tiny-llama": files}) as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(tmp_path / "cache"), "HF_HUB_DISABLE_XET": "1",
               "HF_TOKEN": "hf_dummy"}
        r = planner(["memory", "acme/tiny-llama", "--json"], env)
        assert r.returncode == 0, r.stderr
        data = json.loads(r.stdout)
        m = data["models"][0]
        assert m["weights_bytes"] == total
        assert m["provenance"]["weights"].startswith("header")
        # only ranged reads of the weights file, never a full download
        weight_gets = [q for q in hub.requests if q[0] == "GET" and "model.safetensors" in q[1]]
        assert weight_gets and all(q[2] and q[2].startswith("bytes=") for q in weight_gets)

        # Now cached: the same id resolves with the network off (HF cache first, no Hub).
        r2 = planner(["memory", "acme/tiny-llama", "--json"], {**env, "HF_HUB_OFFLINE": "1"})
        assert r2.returncode == 0, r2.stderr
        assert json.loads(r2.stdout)["models"][0]["id"] == "acme/tiny-llama"


def test_hub_missing_repo_is_exit_2(tmp_path):
    with HubServer({}) as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(tmp_path / "cache"), "HF_HUB_DISABLE_XET": "1"}
        r = planner(["memory", "acme/does-not-exist"], env)
    assert r.returncode == 2
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_offline_with_nothing_cached(tmp_path):
    r = planner(["memory", "acme/not-cached"], {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path)})
    assert r.returncode == 2 and "offline" in r.stderr and "Traceback" not in r.stderr


def test_unreachable_hub_is_exit_2(tmp_path):
    env = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_CACHE": str(tmp_path), "HF_HUB_ETAG_TIMEOUT": "2",
           "HF_HUB_DISABLE_XET": "1"}
    r = planner(["memory", "acme/unreachable"], env)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
