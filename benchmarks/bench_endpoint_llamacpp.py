"""Opt-in: llama-server in the loop. Start it with the planner's own command, bench it, compare.

Not part of the test suite (it needs a llama-server binary and minutes of CPU). Steps:

1. cut a draft from the target GGUF (benchmarks/cut_gguf_draft.py: fewer blocks, same tokenizer);
2. ask `planner recommend TARGET --candidates DRAFT --engine llama.cpp --k K --json` for the launch
   command of that plan and of plain decoding, and start both on 127.0.0.1 (the planner's command
   verbatim, plus --host/--port, which it leaves to the user; requests go to one server at a time);
3. `planner bench TARGET --draft DRAFT --endpoint URL --baseline-endpoint URL2 --k K --json`;
4. stop both servers (they also run under `timeout`, so they end by themselves), print the row.

Build llama-server (CPU only) from the llama.cpp source inside the llama-cpp-python sdist:

    pip download --no-binary :all: --no-deps llama-cpp-python -d /tmp/lcp && tar xzf /tmp/lcp/*.tar.gz -C /tmp/lcp
    cd /tmp/lcp/llama_cpp_python-*/vendor/llama.cpp && cmake -B build -DLLAMA_CURL=OFF -DGGML_NATIVE=ON \\
        -DCMAKE_BUILD_TYPE=Release && nice -n 19 cmake --build build --target llama-server -j2

    python benchmarks/bench_endpoint_llamacpp.py --server /tmp/lcp/.../build/bin/llama-server \\
        --target .cache/gguf/SmolLM2-135M-Instruct.Q4_1.gguf --keep 0-11,26-29 --k 3
"""

from __future__ import annotations

import argparse
import json
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cut_gguf_draft import cut

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def planner(*args: str) -> tuple[int, str]:
    r = subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True, text=True, timeout=900)
    if r.returncode not in (0, 1):
        raise SystemExit(f"planner {' '.join(args)} failed: {r.stderr.strip()}")
    return r.returncode, r.stdout


def commands(target: str, draft: str, k: int, context: int) -> tuple[str, str]:
    """The planner's llama-server commands: the pair's plan at K, and plain decoding."""
    _, out = planner("recommend", target, "--candidates", draft, "--engine", "llama.cpp", "--machine", "auto",
                     "--k", str(k), "--context", str(context), "--json")
    doc = json.loads(out)
    spec = next(p for p in doc["plans"] if p["draft_ref"] == draft and p["launch"].get("command"))
    plain = shlex.split(spec["launch"]["command"])
    cut_at = plain.index("-md")  # everything before the draft's flags is the target's own launch
    return spec["launch"]["command"], shlex.join(plain[:cut_at])


def start(command: str, binary: str, port: int, lifetime_s: int, log: Path) -> subprocess.Popen:
    argv = shlex.split(command)
    assert argv[0] == "llama-server", argv
    argv = ["timeout", str(lifetime_s), binary, *argv[1:], "--host", HOST, "--port", str(port)]
    print("starting:", shlex.join(argv), file=sys.stderr)
    return subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT)


def wait_ready(port: int, proc: subprocess.Popen, limit_s: float) -> None:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server on port {port} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://{HOST}:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    raise SystemExit(f"llama-server on port {port} not ready in {limit_s:.0f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", required=True, help="the llama-server binary")
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", help="a draft GGUF (default: cut one from the target with --keep)")
    ap.add_argument("--keep", default="0-11,26-29", help="blocks the cut draft keeps")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--context", type=int, default=2048)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--requests", type=int, default=6)
    ap.add_argument("--lifetime", type=int, default=1500, help="seconds before each server stops by itself")
    ap.add_argument("--out", type=Path, help="also write the bench JSON here")
    ap.add_argument("--save-profile", type=Path)
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-endpoint-"))
    draft = a.draft or str(work / "draft.gguf")
    if not a.draft:
        cut(Path(a.target), Path(draft), a.keep)
    spec_cmd, base_cmd = commands(a.target, draft, a.k, a.context)
    print("planner's command:", spec_cmd, file=sys.stderr)
    ports = free_port(), free_port()
    procs = []
    try:
        procs.append(start(spec_cmd, a.server, ports[0], a.lifetime, work / "spec.log"))
        procs.append(start(base_cmd, a.server, ports[1], a.lifetime, work / "base.log"))
        for port, proc in zip(ports, procs, strict=True):
            wait_ready(port, proc, 300)
        extra = ["--save-profile", str(a.save_profile)] if a.save_profile else []
        code, out = planner("bench", a.target, "--draft", draft, "--endpoint", f"http://{HOST}:{ports[0]}",
                            "--baseline-endpoint", f"http://{HOST}:{ports[1]}", "--engine", "llama.cpp",
                            "--machine", "auto", "--k", str(a.k), "--context", str(a.context), "--tokens",
                            str(a.tokens), "--requests", str(a.requests), "--timeout", "600", "--json", *extra)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    doc = json.loads(out)
    if a.out:
        a.out.write_text(json.dumps(doc, indent=2) + "\n")
    me, pr, ra = doc["measured"], doc["predicted"], doc["ratio"]
    print(f"command: {spec_cmd}")
    print("| figure | measured | predicted | measured / predicted |\n|---|---|---|---|")
    for key in ("tokens_per_s", "baseline_tokens_per_s", "speedup", "acceptance_rate", "mean_accepted_per_round"):
        print(f"| {key} | {me[key]} | {pr[key]} | {ra[key]} |")
    print(f"| ttft_s | {me['ttft_s']} | - | - |")
    print(f"exit {code}; build {doc['build']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
