"""The analytic ledger against transformers' own structure on the meta device (issue #30), per real config.

Run: python benchmarks/bench_meta_inventory.py [--json]   (needs the `real` extra: torch + transformers)

For every real config with a published size (tests/fixtures/reference_models.json: the index `total_size`
of 29 configs; tests/fixtures/unseen/truth.json: 33 more) whose model_type transformers knows natively
(no `auto_map`), it sizes the config twice, on a temporary folder holding only config.json:
`inventory="analytic"` (the layer-kind formulas) and `inventory="meta"` (the worker of
planner/sources/meta_inventory.py), and prints both stored totals (`checkpoint_bytes`), their error against
the truth, the meta build's wall time, and every disagreement between the two beyond 0.5%, the list a
reader goes through to find analytic bugs (or things the meta build cannot know: MTP layers transformers
does not build, quantised packing the config's scheme describes, an engine's padding).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from planner.sources import load_spec  # noqa: E402

AGREE = 0.005  # "within 0.5%"


def cases() -> list[tuple[str, Path, int]]:
    """(name, config.json, truth bytes) of every config with a published stored size."""
    fixtures = REPO / "tests" / "fixtures"
    out = []
    for m in json.loads((fixtures / "reference_models.json").read_text()):
        cfg = fixtures / "configs" / (Path(m["config"]).name.replace(".config.json", ".json"))
        if cfg.is_file() and isinstance(m.get("checkpoint_total_size"), int):
            out.append((m["model"], cfg, m["checkpoint_total_size"]))
    unseen = fixtures / "unseen"
    for name, t in sorted(json.loads((unseen / "truth.json").read_text()).items()):
        out.append((name, unseen / "models" / name / "config.json", int(t["weights_truth"])))
    return out


def measure(name: str, config: Path, truth: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / name
        d.mkdir()
        shutil.copy(config, d / "config.json")
        analytic = load_spec(str(d), inventory="analytic")
        t0 = time.perf_counter()
        meta = load_spec(str(d), inventory="meta")
        wall = time.perf_counter() - t0
    built = meta.weights.source == "meta"
    row = {"model": name, "model_type": analytic.model_type, "truth": truth,
           "analytic": analytic.checkpoint_bytes, "analytic_confidence": analytic.confidence,
           "analytic_err": analytic.checkpoint_bytes / truth - 1, "meta_built": built, "meta_wall_s": round(wall, 2)}
    if built:
        row.update(meta=meta.checkpoint_bytes, meta_err=meta.checkpoint_bytes / truth - 1,
                   meta_confidence=meta.confidence, meta_class=meta.provenance["weights"].split(" ")[2],
                   disagree=abs(meta.checkpoint_bytes / analytic.checkpoint_bytes - 1) > AGREE)
    else:
        row["reason"] = next((a for a in meta.assumptions if a.startswith("meta-device")), "?")
    return row


def main() -> None:
    rows = [measure(*c) for c in cases()]
    if "--json" in sys.argv:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'model':34} {'analytic':>9} {'meta':>9} {'wall s':>6}  class / why not")
    for r in rows:
        meta = f"{r['meta_err']:+.2%}" if r["meta_built"] else "-"
        why = (r["meta_class"] + ("  DISAGREE" if r["disagree"] else "")) if r["meta_built"] else r["reason"][:60]
        print(f"{r['model'][:34]:34} {r['analytic_err']:+9.2%} {meta:>9} {r['meta_wall_s']:6.2f}  {why}")
    built = [r for r in rows if r["meta_built"]]
    print(f"\nmeta built {len(built)}/{len(rows)}; within 0.5% of truth: meta "
          f"{sum(abs(r['meta_err']) <= AGREE for r in built)}/{len(built)}, analytic on the same "
          f"{sum(abs(r['analytic_err']) <= AGREE for r in built)}/{len(built)}; disagreements "
          f"{sum(r['disagree'] for r in built)}; slowest meta build {max(r['meta_wall_s'] for r in rows):.2f} s")


if __name__ == "__main__":
    main()
