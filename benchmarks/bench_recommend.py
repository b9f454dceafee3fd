"""Time `planner recommend` over the whole catalog for one target on a catalog machine (roofline costs).

Run: python benchmarks/bench_recommend.py [TARGET] [MACHINE]
Prints (median of several runs, measured in this run):
  * in-process recommend() with EVERY catalog model smaller than the target as a candidate;
  * the CLI (new process) with its default candidates (same tokenizer family);
  * the CLI `planner memory TARGET` as the baseline, and the ratios.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from planner import engines
from planner.drafting import DraftModel
from planner.plan import recommend as plan
from planner.plan.request import Target, Where, Workload


def median_s(fn, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    target = sys.argv[1] if len(sys.argv) > 1 else "llama-3.1-70b-instruct"
    machine = sys.argv[2] if len(sys.argv) > 2 else "8x-h100-sxm"
    from planner.core.errors import PlannerError
    from planner.fits.machine_lookup import get_machine
    from planner.sources import catalog, load_spec

    t = load_spec(target)
    m = get_machine(machine)
    cands = []
    for e in catalog.entries():
        if e["id"] == t.id:
            continue
        try:
            s = load_spec(e["id"])
        except PlannerError:
            continue
        if s.weights.resident_bytes < t.weights.resident_bytes:
            cands.append(DraftModel(s, e["id"]))

    vllm = engines.get("vllm")

    def run_all() -> None:
        plan.recommend(Target(t, t.id, candidates=cands), Where(m, vllm), Workload(context=8192))

    whole = median_s(run_all)
    print(f"recommend({target}) over {len(cands)} catalog candidates x KV dtypes on {machine}: "
          f"median {whole * 1000:.0f} ms (in process)")

    def cli(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "planner", *args], check=False, capture_output=True)

    rec = median_s(lambda: cli("recommend", target, "--machine", machine, "--json"))
    mem = median_s(lambda: cli("memory", target, "--json"))
    print(f"planner recommend {target} --machine {machine} (CLI, new process): median {rec * 1000:.0f} ms")
    print(f"planner memory {target} (CLI baseline, new process): median {mem * 1000:.0f} ms")
    print(f"ratio recommend / memory: {rec / mem:.2f}x; whole-catalog recommend under 1 s: {whole < 1.0}")


if __name__ == "__main__":
    main()
