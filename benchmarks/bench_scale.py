"""Scale of the machine-first report: per-cell cost at 1x/2x/4x the catalog and on 1 and 10 machines.

Run: python benchmarks/bench_scale.py [--runs 5] [--json]

A cell is one model on one machine. Each configuration runs in a new process (caches cold, as a user's
run is) that imports the CLI first, then times `planner report --machine M [--machine ...] --json` in
process with the CPU clock of that process (`time.process_time`: on a busy box, wall time is mostly
waiting for a core). The command's work is divided by its cells (targets x machines). Configurations
run in turn, round after round (1x, 2x, 4x, fleet, 1x, ...), so each ratio is a median of ratios of
runs made at the same moment.

The larger catalogs replicate every bundled model R times under new ids: copy r of `org/name` is
`org/name-r<r>` with its aliases, lineage and tokenizer family suffixed the same way, so each copy is
its own lineage with the same number of draft candidates as the original (a catalog that grows by new
families, not by more sizes of one family; more sizes per family is more work per cell by design:
each is a candidate to price). Every other catalog (machines, pairs, kernels, heads, acceptance) is the
bundled one.

Printed: per-cell CPU ms per configuration and its ratio to the 1x/one-machine run, the 10-machine
fleet's whole cost as a ratio to one machine's, whether the fleet's rows equal each machine's own run
(the JSON of its rows, byte for byte), and the extrapolation to 1,000 models x 50 machines from the
per-cell cost at the largest catalog measured (flat per-cell cost makes it linear in cells).
Issue #33's targets: 4x per-cell <= 1.25x of 1x; 10 machines <= 4x one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CATALOG = REPO / "catalogs"
ONE = "rtx-4090"
FLEET = ("rtx-4090", "rtx-3090", "2x-rtx-4090", "l4", "a100-80gb", "h100-sxm", "8x-h100-sxm", "mi300x",
         "m3-max-36gb", "cpu-ryzen-9-7950x-64gb")
GOAL_CATALOG, GOAL_FLEET = 1.25, 4.0

# The child: import the CLI (not timed), then time one report in process on its own CPU clock.
CHILD = """
import contextlib, io, json, sys, time
from planner import cli
import planner.commands.report  # noqa: F401  (imports are start-up, not the report's work)
buf = io.StringIO()
t0 = time.process_time()
with contextlib.redirect_stdout(buf):
    try:
        cli.main(sys.argv[1:])
    except SystemExit as e:
        rc = e.code
cpu = time.process_time() - t0
out = json.loads(buf.getvalue())
print(json.dumps({"cpu_s": cpu, "rc": rc, "cells": len(out["rows"]), "rows": out["rows"]}))
"""


def replicate(copies: int, into: Path) -> Path:
    """A catalog directory whose models/ holds every bundled model `copies` times (see the docstring)."""
    into.mkdir(parents=True)
    for child in CATALOG.iterdir():
        if child.name != "models":
            (into / child.name).symlink_to(child.resolve(), target_is_directory=child.is_dir())
    (into / "models").mkdir()
    for path in sorted((CATALOG / "models").glob("*.json")):
        data = json.loads(path.read_text())
        items = data.get("models") if isinstance(data, dict) else data
        out = list(items)
        for r in range(2, copies + 1):
            out += [_copy(e, r) for e in items]
        (into / "models" / path.name).write_text(json.dumps({"models": out}))
    return into


def _copy(e: dict[str, Any], r: int) -> dict[str, Any]:
    c = dict(e, id=f"{e['id']}-r{r}", aliases=[f"{a}-r{r}" for a in e.get("aliases", [])])
    if e.get("family"):
        c["family"] = f"{e['family']}-r{r}"
    if isinstance(e.get("tokenizer"), dict) and e["tokenizer"].get("family"):
        c["tokenizer"] = dict(e["tokenizer"], family=f"{e['tokenizer']['family']}-r{r}")
    return c


def run(catalog: Path, machines: tuple[str, ...]) -> dict[str, Any]:
    """One report in a new process: its CPU seconds, cells and rows."""
    args = ["report", *[x for m in machines for x in ("--machine", m)], "--json"]
    env = dict(os.environ, SPEC_PLANNER_CATALOG=str(catalog), SPEC_PLANNER_OFFLINE="1")
    r = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, env=env, cwd=REPO)
    if r.returncode != 0:
        raise SystemExit(f"planner {' '.join(args)} failed: {r.stderr.strip()[-800:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def same_rows(fleet: dict[str, Any], singles: dict[str, dict[str, Any]]) -> bool:
    """The fleet's rows, machine by machine, equal each machine's own report's rows."""
    by_machine: dict[str, list[Any]] = {}
    for row in fleet["rows"]:
        by_machine.setdefault(row["machine"], []).append(row)
    return all(json.dumps(by_machine.get(m), sort_keys=True) == json.dumps(s["rows"], sort_keys=True)
               for m, s in singles.items())


def measure(runs: int, tmp: Path) -> dict[str, Any]:
    cats = {k: replicate(k, tmp / f"x{k}") if k > 1 else CATALOG for k in (1, 2, 4)}
    configs = {"1x, 1 machine": (cats[1], (ONE,)), "2x, 1 machine": (cats[2], (ONE,)),
               "4x, 1 machine": (cats[4], (ONE,)), "1x, 10 machines": (cats[1], FLEET)}
    per_cell: dict[str, list[float]] = {k: [] for k in configs}
    whole: dict[str, list[float]] = {k: [] for k in configs}
    cells: dict[str, int] = {}
    fleet_rows = None
    for _ in range(runs):
        for name, (cat, machines) in configs.items():
            res = run(cat, machines)
            cells[name] = res["cells"]
            per_cell[name].append(res["cpu_s"] / res["cells"])
            whole[name].append(res["cpu_s"])
            fleet_rows = res if name == "1x, 10 machines" else fleet_rows
    singles = {m: run(CATALOG, (m,)) for m in FLEET}
    base = "1x, 1 machine"
    ratio = {k: statistics.median(a / b for a, b in zip(per_cell[k], per_cell[base], strict=True)) for k in configs}
    fleet_ratio = statistics.median(a / b for a, b in zip(whole["1x, 10 machines"], whole[base], strict=True))
    cell_4x = statistics.median(per_cell["4x, 1 machine"])
    return {"runs": runs, "cells": cells, "per_cell_ms": {k: 1e3 * statistics.median(v) for k, v in per_cell.items()},
            "per_cell_ratio": ratio, "fleet_whole_ratio": fleet_ratio,
            "fleet_rows_identical": same_rows(fleet_rows, singles),
            "extrapolated_1000x50_cpu_min": cell_4x * 1000 * 50 / 60,
            "extrapolated_1000x50_ratio": cell_4x * 1000 * 50 / statistics.median(whole[base])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        res = measure(a.runs, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        print(json.dumps(res, indent=1))
        return
    print(f"median of {a.runs} rounds; CPU time of the report in process (start-up excluded)")
    for k, ms in res["per_cell_ms"].items():
        print(f"{k:<16} {res['cells'][k]:>4} cells  {ms:7.2f} ms/cell  x{res['per_cell_ratio'][k]:.2f} of 1x/1 machine")
    print(f"4x catalog per cell: x{res['per_cell_ratio']['4x, 1 machine']:.2f} (goal <= {GOAL_CATALOG})")
    print(f"10-machine fleet, whole: x{res['fleet_whole_ratio']:.2f} of one machine (goal <= {GOAL_FLEET}); "
          f"rows identical to one machine at a time: {res['fleet_rows_identical']}")
    print(f"1,000 models x 50 machines: ~{res['extrapolated_1000x50_cpu_min']:.1f} CPU min on one core "
          f"(x{res['extrapolated_1000x50_ratio']:.0f} of the 1x/one-machine run)")


if __name__ == "__main__":
    main()
