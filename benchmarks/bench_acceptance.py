"""Leave-one-out check of the acceptance priors against every catalogued published acceptance.

Run: python benchmarks/bench_acceptance.py [--json]

For each catalogs/pairs entry that publishes an acceptance, the prior is rebuilt from all the
other entries and asked for the left-out entry's family pair, at its conditions (draft size,
instruct/base style, draft format, temperature, parsed from the published names), and compared
with the entry's own alpha (converted by code, speed/acceptance.py). Two priors are scored:

With --by-source every entry of the same publication is left out with it (what a measurement from
a new source sees); without it only the entry itself is.

  flat      acceptance.prior_for: one value per family pair, half-width x3/x2/x1 by count
  adjusted  acceptance_prior.prior: normalised to reference conditions, moved by the entry's own

Printed: per entry, alpha measured and each prior's centre and interval; then coverage (share of
left-out alphas inside the interval), median and worst |centre - alpha|, and the half-width at
which the adjusted prior would cover 80% (the value catalogs/acceptance.json 'interval' keeps).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))

from planner.speed import acceptance as acc  # noqa: E402
from planner.speed import acceptance_prior as ap  # noqa: E402

TARGET_COVERAGE = 0.8


def rows(by_source: bool = False) -> list[dict]:
    entries = acc.load_pairs()
    out = []
    for i, e in enumerate(entries):
        measured = acc.entry_acceptance(e)
        if measured is None:
            continue
        rest = tuple(o for j, o in enumerate(entries) if j != i and not (by_source and ap.source_key(o) == ap.source_key(e)))
        flat = acc.prior_for(e.target_family, e.draft_family, pairs=rest)
        adj = ap.prior(e.target_family, e.draft_family, ap.conditions_of(e), pairs=rest)
        out.append({"id": e.id, "alpha": measured.alpha, "flat": (flat.alpha, flat.low, flat.high),
                    "adjusted": (adj.alpha, adj.low, adj.high), "adjusted_given": adj.given})
    return out


def summary(rs: list[dict], key: str) -> dict:
    err = [abs(r[key][0] - r["alpha"]) for r in rs]
    cov = sum(r[key][1] <= r["alpha"] <= r[key][2] for r in rs)
    return {"n": len(rs), "coverage": cov / len(rs), "median_abs_error": statistics.median(err),
            "worst_abs_error": max(err)}


def half_width_for_coverage(rs: list[dict], table_half: float) -> float:
    """The catalog half-width at which TARGET_COVERAGE of the left-out alphas fall inside.

    # each row needs |alpha - centre| <= h sqrt(1 + 1/n) + (its widening on that side); the rows'
    # widening is read back from the interval the current half-width gave
    """
    need = []
    for r in rs:
        c, lo, hi = r["adjusted"]
        side = (c - lo) if r["alpha"] < c else (hi - c)
        scale = side / table_half if table_half else 1.0  # = sqrt(1 + 1/n) + widen / h, at the current h
        need.append(abs(r["alpha"] - c) / max(scale, 1e-9))
    need.sort()
    return need[min(len(need) - 1, math.ceil(TARGET_COVERAGE * len(need)) - 1)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--by-source", action="store_true", help="leave out every entry of the same publication")
    args = p.parse_args(argv)
    rs = rows(args.by_source)
    half = float(ap.adjustments()["interval"]["half_width"])
    result = {"flat": summary(rs, "flat"), "adjusted": summary(rs, "adjusted"),
              "half_width_for_80pct": round(half_width_for_coverage(rs, half), 4), "rows": rs}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    for r in rs:
        f, a = r["flat"], r["adjusted"]
        print(f"{r['id'][:62]:<62} {r['alpha']:.3f}  flat {f[0]:.3f} [{f[1]:.2f}, {f[2]:.2f}]  "
              f"adjusted {a[0]:.3f} [{a[1]:.2f}, {a[2]:.2f}]")
    for key in ("flat", "adjusted"):
        s = result[key]
        print(f"{key:<9} n={s['n']} coverage {s['coverage']:.0%}  median |err| {s['median_abs_error']:.3f}  "
              f"worst {s['worst_abs_error']:.3f}")
    print(f"half_width for {TARGET_COVERAGE:.0%} coverage (approximate): {result['half_width_for_80pct']} "
          f"(catalog: {half})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
