"""The draftbench development sweep: predicted vs measured speed-up of llama-server on an M4 Max, by format.

Run: python benchmarks/bench_draftbench.py [--acceptance prior|measured] [--json]

benchmarks/data/draftbench/ holds the two result files of the public draftbench project
(github.com/alexziskind1/draftbench `results/`, February 2026; copied from ../shared/calibration): llama-server
on an Apple M4 Max 128 GB, Qwen2.5-Instruct 14B (FP16, Q8_0, Q4_K_M, Q4_0) and 72B (Q8_0, Q4_K_M) targets with
Qwen2.5 0.5B-7B drafts in FP16 and eight GGUF types, ctx 4096, greedy, 1,024 tokens, llama.cpp's defaults of
early 2026 (--draft-p-min 0.75, --draft-max 16). Every pair runs

  planner recommend qwen2.5-{size}-instruct --candidates qwen2.5-{size}-instruct --machine m4-max-128gb
                    --engine llama.cpp --weights-dtype T --draft-weights-dtype D --context 4096 --json
                    --k 16 --draft-p-min 0.75

with the acceptance priors (`prior`: what a user gets) or the pair's own measured acceptance_rate passed as
--acceptance (`measured`: the cost side alone). Printed: median predicted / measured speed-up by target format
and by draft format, and the median |pred/meas - 1| over all pairs.

This is a DEVELOPMENT set: the acceptance priors, the stop model's kappa and persistence and the Metal kernel
curves were set on it (catalogs/calibration lists them), so its numbers are in-sample; held-out checks are
benchmarks/bench_published.py's out-of-sample rows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_published import run_cli  # noqa: E402

DATA = REPO / "benchmarks" / "data" / "draftbench"
DTYPE = {"FP16": "f16", "Q8_0": "q8_0", "Q6_K": "q6_k", "Q5_K_M": "q5_k_m", "Q5_0": "q5_0", "Q4_K_M": "q4_k_m",
         "Q4_0": "q4_0", "Q3_K_M": "q3_k_m", "Q2_K": "q2_k"}


def pairs() -> list[dict]:
    """(target, target format, draft, draft format, measured speed-up, measured acceptance) of every pair."""
    out = []
    for path in sorted(DATA.glob("*.json")):
        results = json.loads(path.read_text())["results"]
        base = {r["target"]: r["mean_tps"] for r in results if r["draft"] is None}
        for r in results:
            if r["draft"] is None or not r.get("mean_tps") or r["target"] not in base:
                continue
            (ts, tf), (ds, df) = r["target"].split(), r["draft"].split()
            out.append({"target": ts, "tfmt": tf, "draft": ds, "dfmt": df, "measured": r["mean_tps"] / base[r["target"]],
                        "acceptance": r.get("acceptance_rate")})
    return out


def predict(p: dict, acceptance: str) -> float | None:
    argv = ["recommend", f"qwen2.5-{p['target'].lower()}-instruct", "--candidates",
            f"qwen2.5-{p['draft'].lower()}-instruct", "--machine", "m4-max-128gb", "--engine", "llama.cpp",
            "--weights-dtype", DTYPE[p["tfmt"]], "--draft-weights-dtype", DTYPE[p["dfmt"]], "--context", "4096", "--json",
            "--k", "16", "--draft-p-min", "0.75"]  # what draftbench ran: llama-server's early-2026 defaults
    if acceptance == "measured":
        if not p["acceptance"]:
            return None
        argv += ["--acceptance", f"{p['acceptance']:.4f}"]
    rc, out, _ = run_cli(argv)
    if rc != 0:
        return None
    plans = json.loads(out).get("plans") or []
    return plans[0]["speedup"] if plans else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--acceptance", choices=("prior", "measured"), default="prior")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for p in pairs():
        pred = predict(p, args.acceptance)
        if pred is not None:
            rows.append({**p, "predicted": pred, "ratio": pred / p["measured"]})
    by_t = {f: statistics.median(r["ratio"] for r in rows if r["tfmt"] == f) for f in DTYPE if any(r["tfmt"] == f for r in rows)}
    by_d = {f: statistics.median(r["ratio"] for r in rows if r["dfmt"] == f) for f in DTYPE if any(r["dfmt"] == f for r in rows)}
    err = statistics.median(abs(r["ratio"] - 1) for r in rows)
    if args.json:
        print(json.dumps({"pairs": len(rows), "median_abs_error": err, "by_target": by_t, "by_draft": by_d}, indent=1))
        return
    print(f"draftbench, acceptance {args.acceptance}: {len(rows)} pairs predicted")
    print("median pred/meas by target format: " + ", ".join(f"{f} {v:.2f}" for f, v in by_t.items()))
    print("median pred/meas by draft format:  " + ", ".join(f"{f} {v:.2f}" for f, v in by_d.items()))
    print(f"median |pred/meas - 1|: {err:.3f}")


if __name__ == "__main__":
    main()
