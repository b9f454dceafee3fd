"""Every flag the planner prints for llama-server is one the real binary knows (`llama-server --help`).

Runs where a llama-server binary is at hand: $LLAMA_SERVER, or `llama-server` on PATH (the opt-in
benchmark builds one: docs/bench.md "llama-server in the loop"); skips with the reason otherwise.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess

import pytest

from planner import engines
from planner.engines.base import DRAFT_MODEL, EAGLE3, MTP, NGRAM, LaunchInput


def _binary() -> str | None:
    path = os.environ.get("LLAMA_SERVER") or shutil.which("llama-server")
    return path if path and os.access(path, os.X_OK) else None


BINARY = _binary()
pytestmark = pytest.mark.skipif(BINARY is None, reason="no llama-server binary (set LLAMA_SERVER=/path/to/"
                                                       "llama-server, or build one: docs/bench.md)")

# one launch of each shape the planner renders for llama.cpp
VARIANTS = [
    LaunchInput(target="t.gguf", draft="d.gguf", k=4, context=4096),
    LaunchInput(target="t.gguf", draft="d.gguf", k=8, context=8192, kv_dtype="q8_0", batch=4, draft_p_min=0.75,
                draft_n_min=2),
    LaunchInput(target="t.gguf", draft="d.gguf", k=3, context=4096, gpu_layers=20, cpu_moe_layers=4),
    LaunchInput(target="t.gguf", draft="head.gguf", k=3, context=4096, method=EAGLE3),
    LaunchInput(target="t.gguf", draft=None, k=3, context=4096, method=MTP),
    LaunchInput(target="t.gguf", draft=None, k=4, context=4096, method=NGRAM, ngram_max=3),
    LaunchInput(target="t.gguf", draft=None, k=1, context=4096, method=DRAFT_MODEL),
]


def _flags(command: str) -> set[str]:
    return {tok for tok in shlex.split(command) if tok.startswith("-") and not re.fullmatch(r"-?\d+(\.\d+)?", tok)}


def test_every_printed_flag_is_in_llama_server_help():
    helptext = subprocess.run([BINARY, "--help"], capture_output=True, text=True, timeout=60).stdout
    known = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", helptext))
    assert "--spec-draft-n-max" in known or "--draft-max" in known, "not llama-server's help text"
    printed, types = set(), set()
    for x in VARIANTS:
        for cmd in engines.launch(engines.llamacpp.NAME, x).values():
            if cmd.startswith("llama-server"):
                printed |= _flags(cmd)
                types |= set(re.findall(r"--spec-type (\S+)", cmd))
    assert printed, "no llama-server command rendered"
    missing = sorted(printed - known)
    assert not missing, f"flags the planner prints that {BINARY} --help does not list: {missing}"
    assert types and all(t in helptext for t in types), f"--spec-type values not in the help: {sorted(types)}"
