"""Start-up: `planner memory <local folder> --json` against a bare `python -c pass`, and a GGUF's ledger against
the folder's, same machine, same moment.

Run: python benchmarks/bench_startup.py [MODEL_DIR] [--gguf FILE.gguf ...] [--runs N]
Prints the median wall time of each (interleaved runs, so all see the same load) and the ratios; issue #33
asks for the folder's ledger within 5x a bare interpreter start with a warm bytecode cache (the first run
writes the bytecode even where PYTHONDONTWRITEBYTECODE is set), and for a GGUF's ledger no slower than the
folder's. Without MODEL_DIR it writes Llama-3.1-8B's reference config to a temporary folder; without
--gguf it takes the real test GGUFs (tests/gguf_dir.py) when they are there. Where the time goes:
`python -X importtime -m planner memory DIR --json`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.gguf_dir import gguf_test_dir  # noqa: E402

GOAL = 5.0  # issue #33: within 5x a bare interpreter start (warm bytecode)
GOAL_GGUF = 1.0  # issue #33: a GGUF's ledger no slower than a local folder's


def wall(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=REPO, env=env)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", help="a local model folder (default: Llama-3.1-8B's config)")
    ap.add_argument("--gguf", nargs="*", default=None, help="GGUF files to compare with the folder")
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    if args.model:
        model = Path(args.model)
    else:
        model = Path(tempfile.mkdtemp())
        cfg = json.loads((REPO / "tests/fixtures/configs/Llama-3.1-8B.json").read_text())
        (model / "config.json").write_text(json.dumps(cfg))
    ggufs = [Path(g) for g in args.gguf] if args.gguf is not None else sorted(gguf_test_dir().glob("*.gguf"))
    bare = [sys.executable, "-c", "pass"]
    ours = [sys.executable, "-m", "planner", "memory", str(model), "--json"]
    theirs = {g.name: [sys.executable, "-m", "planner", "memory", str(g), "--json"] for g in ggufs}
    writable = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for cmd in (ours, *theirs.values()):
        wall(cmd, env=writable)  # warm the file cache and write the bytecode
    times: dict[str, list[float]] = {"bare": [], "dir": [], **{k: [] for k in theirs}}
    for _ in range(args.runs):
        times["bare"].append(wall(bare))
        times["dir"].append(wall(ours))
        for name, cmd in theirs.items():
            times[name].append(wall(cmd))
    b = statistics.median(times["bare"])
    d = statistics.median(times["dir"])
    ratio = statistics.median(o / x for o, x in zip(times["dir"], times["bare"], strict=True))
    print(f"python -c pass:               median {b * 1000:6.1f} ms over {args.runs} runs")
    print(f"planner memory {model.name} --json: median {d * 1000:6.1f} ms")
    print(f"ratio {ratio:.2f}x (goal <= {GOAL:g}x): {'met' if ratio <= GOAL else 'NOT met'}")
    for name in theirs:
        r = statistics.median(g / o for g, o in zip(times[name], times["dir"], strict=True))
        print(f"planner memory {name} --json: median {statistics.median(times[name]) * 1000:6.1f} ms, "
              f"{r:.2f}x the folder's (goal <= {GOAL_GGUF:g}x): {'met' if r <= GOAL_GGUF else 'NOT met'}")


if __name__ == "__main__":
    main()
