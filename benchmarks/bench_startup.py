"""Start-up: `planner memory <local folder>` against a bare `python -c pass`, same machine, same moment.

Run: python benchmarks/bench_startup.py [MODEL_DIR] [--runs N]
Prints the median wall time of each (interleaved runs, so both see the same load) and the ratio;
issue #18 asks for at most 8x. Without MODEL_DIR it writes Llama-3.1-8B's reference config to a
temporary folder. Where the time goes: `python -X importtime -m planner memory DIR`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOAL = 8.0  # issue #18: within 8x a bare interpreter start


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=REPO)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", help="a local model folder (default: Llama-3.1-8B's config)")
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    if args.model:
        model = Path(args.model)
    else:
        model = Path(tempfile.mkdtemp())
        cfg = json.loads((REPO / "tests/fixtures/configs/Llama-3.1-8B.json").read_text())
        (model / "config.json").write_text(json.dumps(cfg))
    bare = [sys.executable, "-c", "pass"]
    ours = [sys.executable, "-m", "planner", "memory", str(model)]
    wall(ours)  # warm the file cache
    pairs = [(wall(bare), wall(ours)) for _ in range(args.runs)]
    b = statistics.median(p[0] for p in pairs)
    m = statistics.median(p[1] for p in pairs)
    print(f"python -c pass:          median {b * 1000:6.1f} ms over {args.runs} runs")
    print(f"planner memory {model.name}: median {m * 1000:6.1f} ms")
    print(f"ratio {m / b:.2f}x (goal <= {GOAL:g}x): {'met' if m / b <= GOAL else 'NOT met'}")


if __name__ == "__main__":
    main()
