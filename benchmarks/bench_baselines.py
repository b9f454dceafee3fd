"""Predicted vs published plain-decoding speed: the baseline every speed-up is relative to.

Run: python benchmarks/bench_baselines.py [--json] [--data PATH]

Why: users check the predicted baseline tokens/s against their own first (the speed-up is a ratio
to it), and the engines' bandwidth shares, format factors and per-step costs are medians of
published decodes. This prints, for every row of benchmarks/data/published_baselines.json, what

  planner recommend MODEL --machine M --engine E --weights-dtype W --context C --method ngram --json

gives as `plans[0].baseline_tokens_per_s` (n-gram lookup has no draft model: the baseline alone
is priced), the ratio predicted / measured, and the median ratio per group (engine, machine class,
dense or MoE), in-sample rows (the ones a catalogs/calibration/ entry was fitted on: computed from
the calibration, not declared) apart from out-of-sample rows. Exit code: 0 (a report, whatever the numbers); 2 when the data file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from tabulate import tabulate

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "data" / "published_baselines.json"
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

from bench_published import DataError, calibration_rows, read_list, run_cli  # noqa: E402  (the same in-process, offline CLI runner)

FIELDS = ("id", "source", "engine", "machine", "model", "weights_dtype", "measured_tokens_per_s")
ROLES = ("in-sample", "out-of-sample")


def load_rows(path: Path) -> list[dict[str, Any]]:
    """The `baselines` list, each row checked for the fields the benchmark needs.

    Each row gets its `role`: 'in-sample' when a catalogs/calibration/ entry was fitted on it (or lists it
    as dependent), else 'out-of-sample'; computed here, never declared in the data.

    Raises:
        DataError: unreadable file, invalid JSON, no `baselines` list, a row missing a field, a
            non-positive measurement, or a duplicate id.
    """
    rows = read_list(path, "baselines")
    seen: set[str] = set()
    for i, r in enumerate(rows):
        missing = [f for f in FIELDS if not isinstance(r, dict) or r.get(f) in (None, "")]
        if missing:
            raise DataError(f"Cannot read row {i} of '{path}': missing {', '.join(missing)}.")
        meas = r["measured_tokens_per_s"]
        if not isinstance(meas, (int, float)) or meas <= 0 or r["id"] in seen:
            raise DataError(f"Cannot read row {i} ('{r['id']}') of '{path}': measured_tokens_per_s must be > 0, "
                            f"ids unique.")
        seen.add(r["id"])
    fitted = calibration_rows()
    return [{**r, "role": ROLES[0] if r["id"] in fitted else ROLES[1], "fitted_by": fitted.get(r["id"], [])}
            for r in rows]


def cli_args(row: dict[str, Any]) -> list[str]:
    return ["recommend", row["model"], "--machine", row["machine"], "--engine", row["engine"],
            "--weights-dtype", row["weights_dtype"], "--context", str(row.get("context") or 512),
            "--method", "ngram", "--json"]


def predict(row: dict[str, Any]) -> dict[str, Any]:
    """The row with `predicted` (tok/s, None when the CLI gave no plan) and `ratio` predicted / measured."""
    rc, out, err = run_cli(cli_args(row))
    predicted = None
    try:
        plans = json.loads(out).get("plans") or []
        predicted = plans[0].get("baseline_tokens_per_s") if plans else None
    except ValueError:
        pass
    why = None if predicted else ((err.strip().splitlines() or [f"exit {rc}"])[-1])[:120]
    ratio = predicted / row["measured_tokens_per_s"] if predicted else None
    return {**row, "predicted": predicted, "ratio": ratio, "error": why}


def group_key(row: dict[str, Any]) -> str:
    """'engine share-key MoE|dense (role)': the share key the engine prices this machine under by default."""
    from planner import engines
    from planner.fits.fit import default_layout
    from planner.fits.machine_lookup import get_machine
    from planner.plan.roof import share_key

    m = get_machine(row["machine"])
    e = engines.get(row["engine"])
    kind = share_key(e, m, default_layout(m.n_devices, e).tp)
    return f"{row['engine']} {kind} {'MoE' if row.get('moe') else 'dense'} ({row['role']})"


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per group: rows, median and range of predicted / measured."""
    groups: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r["ratio"] is not None:
            groups[group_key(r)].append(r["ratio"])
    return {k: {"n": len(v), "median": statistics.median(v), "low": min(v), "high": max(v)}
            for k, v in sorted(groups.items())}


def report(rows: list[dict[str, Any]]) -> str:
    table = [[r["id"], r["machine"], r["weights_dtype"], f"{r['measured_tokens_per_s']:.1f}",
              f"{r['predicted']:.1f}" if r["predicted"] else "-", f"{r['ratio']:.2f}" if r["ratio"] else "-",
              r["role"], r["error"] or ""] for r in rows]
    groups = [[k, s["n"], f"{s['median']:.2f}", f"{s['low']:.2f}-{s['high']:.2f}"] for k, s in summary(rows).items()]
    return "\n".join([
        "Plain decoding: predicted vs published tokens/s (benchmarks/data/published_baselines.json)", "",
        tabulate(table, ["row", "machine", "weights", "measured", "predicted", "pred/meas", "role", "error"]), "",
        "By group (pred/meas):",
        tabulate(groups, ["engine, machine class, model kind (role)", "n", "median", "range"])])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args(argv)
    try:
        rows = [predict(r) for r in load_rows(args.data)]
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"data": str(args.data), "groups": summary(rows), "rows": rows}, indent=1))
    else:
        print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
