"""Time the machine-first report: the whole catalog on one machine, and on a 10-machine fleet.

Run: python benchmarks/bench_report.py [--runs 3]
Prints (median of --runs, measured in this run, roofline costs, default context; wall and CPU seconds,
since on a shared machine wall time includes waiting for a core):
  * `planner report --machine rtx-4090 --json` as a new process (start-up, catalog, 65 rows, JSON);
  * the same with `--out r.html` (tables and the SVG plot);
  * `planner report` with 10 catalog machines (`--json`, and `--out r.html` with 10 plots + the matrix);
  * in process: plan/fleet.py rows only (no start-up, no rendering), one machine and ten;
  * whether the --json run imported torch (it must not).
Targets (issue #20): one machine under 2 s, a 10-machine fleet under 10 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLEET = ("rtx-4090", "rtx-3090", "2x-rtx-4090", "l4", "a100-80gb", "h100-sxm", "8x-h100-sxm", "mi300x",
         "m3-max-36gb", "cpu-ryzen-9-7950x-64gb")


def median_s(fn, runs: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (user + sys of this process and its children): on a
    shared machine the wall time includes waiting for a core; the CPU time is what the run itself costs."""
    walls, cpus = [], []
    for _ in range(runs):
        c0, t0 = _cpu_s(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(_cpu_s() - c0)
    return statistics.median(walls), statistics.median(cpus)


def _cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def cli(*args: str) -> None:
    r = subprocess.run([sys.executable, "-m", "planner", "report", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"planner report {' '.join(args)} failed: {r.stderr.strip()[-500:]}")


def torch_imported() -> bool:
    code = ("import sys\nfrom planner.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('torch' in sys.modules, file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code, "report", "--machine", "rtx-4090", "--json"],
                       capture_output=True, text=True)
    return r.stderr.strip().splitlines()[-1] == "True"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    runs = ap.parse_args().runs
    fleet_flags = [x for m in FLEET for x in ("--machine", m)]
    with tempfile.TemporaryDirectory() as tmp:
        html = str(Path(tmp) / "r.html")
        results = [
            ("CLI, 1 machine, --json", median_s(lambda: cli("--machine", "rtx-4090", "--json"), runs), 2.0),
            ("CLI, 1 machine, --out r.html", median_s(lambda: cli("--machine", "rtx-4090", "--out", html), runs), 2.0),
            ("CLI, 10 machines, --json", median_s(lambda: cli(*fleet_flags, "--json"), runs), 10.0),
            ("CLI, 10 machines, --out r.html", median_s(lambda: cli(*fleet_flags, "--out", html), runs), 10.0),
        ]
    from planner.core.constants import DEFAULT_CONTEXT
    from planner.fits.machine_lookup import get_machine
    from planner.plan import fleet

    targets = fleet.catalog_targets()
    opts = fleet.Options(context=DEFAULT_CONTEXT)
    machines = [get_machine(m) for m in FLEET]
    fleet.machine_rows(targets, machines[0], opts)  # warm: catalog specs built once per process
    results += [
        (f"in process, rows only, 1 machine x {len(targets)} targets",
         median_s(lambda: fleet.machine_rows(targets, machines[0], opts), runs), None),
        (f"in process, rows only, 10 machines x {len(targets)} targets",
         median_s(lambda: [fleet.machine_rows(targets, m, opts) for m in machines], runs), None),
    ]
    width = max(len(name) for name, _, _ in results)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; median of {runs} runs")
    for name, (wall, cpu), limit in results:
        verdict = "" if limit is None else (f"  (target < {limit:.0f} s of CPU: {'ok' if cpu < limit else 'OVER'})")
        print(f"{name:<{width}}  wall {wall:6.2f} s  cpu {cpu:6.2f} s{verdict}")
    print(f"torch imported by 'planner report --machine rtx-4090 --json': {torch_imported()}")


if __name__ == "__main__":
    main()
