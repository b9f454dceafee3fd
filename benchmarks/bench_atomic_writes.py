"""Stress check of planner/core/atomic.py: concurrent `planner check --junit` writers on one path, and SIGINT.

Not part of the default suite (it starts dozens of CLI processes). What it measures:

1. N writers started together, all writing `--junit out.xml`, while a reader re-reads the file as
   fast as it can: every read must be the old document or one whole new one (a torn read is one that
   is neither), the final file must parse, and no temp file may be left behind.
2. M runs each interrupted with SIGINT at a random moment late in the run, when its write happens (the
   delay is drawn from 70-100 % of one writer's time alone): the file must then be the old document,
   whole, or (the signal came after the rename) a whole new one; never a partial one, never gone.

Usage:
    python benchmarks/bench_atomic_writes.py [--writers 8] [--interrupts 12] [--seed 0]

Prints one JSON object; exit 0 when torn reads, torn finals, leftovers and lost old files are all 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OLD = '<?xml version="1.0" encoding="utf-8"?>\n<testsuites name="old document" tests="0"/>\n'
POLICY = "".join(
    f'[[deployment]]\nname = "chat-{i}"\ntarget = "llama-3.1-8b-instruct"\ndraft = "llama-3.2-1b-instruct"\n'
    f'machines = ["h100-sxm", "rtx-4090", "l4"]\nengine = "vllm"\n\n' for i in range(6))


def _kind(data: bytes) -> str:
    """'old', 'new' (a whole planner document) or 'torn' (anything else)."""
    if data == OLD.encode():
        return "old"
    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        return "torn"
    return "new" if root.tag == "testsuites" and root.get("name", "").startswith("planner check") else "torn"


def _command(policy: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "planner", "check", "--config", str(policy), "--junit", str(out), "--json"]


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}


def concurrent_writers(work: Path, policy: Path, n: int) -> dict:
    out = work / "out.xml"
    out.write_text(OLD)
    reads = {"old": 0, "new": 0, "torn": 0, "missing": 0}
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                reads[_kind(out.read_bytes())] += 1
            except FileNotFoundError:
                reads["missing"] += 1

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    t0 = time.perf_counter()
    procs = [subprocess.Popen(_command(policy, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=work,
                              env=_env()) for _ in range(n)]
    times, codes = [], []
    for p in procs:
        p.wait()
        times.append(time.perf_counter() - t0)
        codes.append(p.returncode)
    stop.set()
    t.join()
    leftovers = [f.name for f in work.iterdir() if f.name.startswith(".out.xml.")]
    return {"writers": n, "exit_codes": sorted(set(codes)), "reads": reads, "torn_reads": reads["torn"],
            "missing_reads": reads["missing"], "final": _kind(out.read_bytes()), "leftover_temp_files": leftovers,
            "median_run_s": round(statistics.median(times), 3)}


def solo_run_s(work: Path, policy: Path) -> float:
    """How long one writer alone takes (the SIGINT delays are drawn around it)."""
    t0 = time.perf_counter()
    subprocess.run(_command(policy, work / "solo.xml"), capture_output=True, cwd=work, env=_env(), check=False)
    return time.perf_counter() - t0


def interrupted_writers(work: Path, policy: Path, m: int, around_s: float, rng: random.Random) -> dict:
    out = work / "interrupted.xml"
    outcome = {"old": 0, "new": 0, "torn": 0, "missing": 0}
    interrupted = 0
    for _ in range(m):
        out.write_text(OLD)
        p = subprocess.Popen(_command(policy, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work,
                             env=_env())
        time.sleep(max(0.0, rng.uniform(0.7, 1.0) * around_s))
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
            interrupted += 1
        p.wait()
        outcome[_kind(out.read_bytes()) if out.exists() else "missing"] += 1
    leftovers = [f.name for f in work.iterdir() if f.name.startswith(".interrupted.xml.")]
    return {"runs": m, "solo_run_s": round(around_s, 3), "signalled_before_exit": interrupted, "old_survived": outcome["old"],
            "new_complete": outcome["new"], "torn_final": outcome["torn"], "lost": outcome["missing"],
            "leftover_temp_files": leftovers}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--interrupts", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="planner-atomic-") as tmp:
        work = Path(tmp)
        policy = work / "planner.toml"
        policy.write_text(POLICY)
        part1 = concurrent_writers(work, policy, args.writers)
        solo = min(solo_run_s(work, policy) for _ in range(2))
        part2 = interrupted_writers(work, policy, args.interrupts, solo, random.Random(args.seed))
    ok = (part1["torn_reads"] == 0 and part1["final"] == "new" and not part1["leftover_temp_files"]
          and part2["torn_final"] == 0 and part2["lost"] == 0 and not part2["leftover_temp_files"])
    print(json.dumps({"concurrent": part1, "sigint": part2, "ok": ok}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
