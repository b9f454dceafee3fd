"""Time `planner memory` on a local model dir against transformers AutoConfig + accelerate meta init.

Run: python benchmarks/bench_memory.py [MODEL_DIR]
Prints the median of several runs of each and the ratio (both measured here, same machine, same run).
Without MODEL_DIR it writes Llama-3.1-8B's reference config to a temp dir.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNS = 7


def median_wall(cmd: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    if len(sys.argv) > 1:
        model = Path(sys.argv[1])
    else:
        model = Path(tempfile.mkdtemp())
        cfg = json.loads((REPO / "tests/fixtures/configs/Llama-3.1-8B.json").read_text())
        (model / "config.json").write_text(json.dumps(cfg))
    ours = median_wall([sys.executable, "-m", "planner", "memory", str(model), "--json"])
    print(f"planner memory (CLI, new process): median {ours * 1000:.0f} ms over {RUNS} runs")
    baseline = (
        "import sys, torch\n"
        "from transformers import AutoConfig, AutoModelForCausalLM\n"
        "from accelerate import init_empty_weights\n"
        "cfg = AutoConfig.from_pretrained(sys.argv[1])\n"
        "with init_empty_weights():\n"
        "    m = AutoModelForCausalLM.from_config(cfg)\n"
        "print(sum(p.numel() * p.element_size() for p in m.parameters()))\n")
    try:
        base = median_wall([sys.executable, "-c", baseline, str(model)])
    except (subprocess.CalledProcessError, FileNotFoundError) as e:
        print(f"baseline unavailable (transformers/accelerate/torch not installed?): {e}")
        return
    print(f"AutoConfig + accelerate meta init (new process): median {base * 1000:.0f} ms over {RUNS} runs")
    print(f"ratio baseline / planner: {base / ours:.1f}x")


if __name__ == "__main__":
    main()
