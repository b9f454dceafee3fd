"""Stability: `planner recommend MODEL --json` run N times, idle and beside a CPU-bound neighbour, with and
without a saved machine profile.

Run: python benchmarks/bench_stability.py [MODEL] [--runs N] [--only busy|idle] [--no-profile] [--log]
For each condition it prints the verdicts and drafts (agreement), the central speed-ups (spread:
max/min - 1, issue #28 asks <= 15%), and whether every printed interval contains the median central
value. `--log` adds one line per run with the measured figures the run used (bandwidth median, IQR,
trials kept of run, seconds), K and the central speed-up: which figure moved when the answer moved. The neighbour is one `python -c 'while True: pass'` process this script starts and stops itself.
The saved profile lives in a temporary SPEC_PLANNER_PROFILE_DIR (never the user's cache).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPREAD_GOAL = 0.15  # issue #28: central speed-ups within 15% of each other
# what a saved profile fixes: the plan. Free memory stays live (fits/machine_profile.py), so the headroom
# figures move with other processes' memory and the bytes may differ while the plan does not.
PLAN_KEYS = ("verdict", "draft", "k", "speedup", "speedup_interval")


def planner(args: list[str], env: dict[str, str]) -> str:
    out = subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True, text=True, env=env,
                         cwd=REPO, timeout=300)
    if out.returncode not in (0, 1):
        raise SystemExit(f"planner {' '.join(args)} failed: {out.stderr.strip()[:300]}")
    return out.stdout


@contextmanager
def neighbour(on: bool) -> Iterator[None]:
    """One CPU-bound process for the duration (none when `on` is False), always stopped after."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if on else None
    try:
        yield
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()


def runs(model: str, n: int, env: dict[str, str], log: bool = False) -> tuple[list[dict], bool]:
    """The recommendation of each of n runs, and whether every run printed the same bytes."""
    outs = [planner(["recommend", model, "--json"], env) for _ in range(n)]
    if log:
        for i, o in enumerate(outs):
            print("  " + run_line(i, json.loads(o)))
    return [json.loads(o)["recommendation"] for o in outs], len(set(outs)) == 1


def run_line(i: int, out: dict) -> str:
    """One run's measured figures (what the plan was priced on) beside its K and central speed-up."""
    rec = out["recommendation"]
    figs = (out.get("machine_measured") or {}).get("figures", {})
    parts = [f"{k} {f['median'] / 1e9:.2f} GB/s (IQR {f['q1'] / 1e9:.2f}-{f['q3'] / 1e9:.2f}, {f['kept']}/"
             f"{f['trials']} trials, {f['seconds']:.2f} s)" for k, f in figs.items()]
    return f"run {i + 1}: {', '.join(parts) or 'no measured figures'}; K {rec['k']}, central {rec['speedup']:.2f}x"


def summary(label: str, recs: list[dict]) -> str:
    verdicts = {(r["verdict"], r["draft"]) for r in recs}
    centres = [r["speedup"] for r in recs]
    med = statistics.median(centres)
    spread = max(centres) / min(centres) - 1
    inside = sum(lo <= med <= hi for lo, hi in (r["speedup_interval"] for r in recs))
    return (f"{label:<34} verdict+draft agree: {'yes' if len(verdicts) == 1 else 'NO ' + str(sorted(verdicts))}; "
            f"central {min(centres):.2f}-{max(centres):.2f}x (spread {spread:.1%}, goal <= {SPREAD_GOAL:.0%}); "
            f"intervals containing the median {med:.2f}x: {inside}/{len(recs)}; "
            f"K {sorted({r['k'] for r in recs})}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default="qwen2.5-7b-instruct")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--only", choices=("busy", "idle"), help="one condition (default: both)")
    ap.add_argument("--no-profile", action="store_true", help="skip the saved-profile runs")
    ap.add_argument("--log", action="store_true", help="one line per run with the measured figures")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "SPEC_PLANNER_PROFILE_DIR": tmp}
        print(f"planner recommend {args.model} --json, {args.runs} runs per condition, {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.1f} at start")
        for busy in (False, True):
            if args.only is not None and busy != (args.only == "busy"):
                continue
            with neighbour(busy):
                where = "beside a CPU-bound process" if busy else "without a neighbour"
                print(summary(f"{where}, no profile", runs(args.model, args.runs, env, args.log)[0]))
                if args.no_profile:
                    continue
                planner(["machines", "detect", "--save"], env)
                saved, same = runs(args.model, args.runs, env)
                plan = len({json.dumps({k: r[k] for k in PLAN_KEYS}) for r in saved}) == 1
                print(summary(f"{where}, saved profile", saved) + f"; identical output: {'yes' if same else 'NO'}"
                      f"; identical plan: {'yes' if plan else 'NO'}")
                os.remove(Path(tmp) / "machine-profile.json")


if __name__ == "__main__":
    main()
