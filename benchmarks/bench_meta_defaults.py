"""Every causal-LM model type transformers knows, at its config class's defaults: analytic vs meta-device (#30).

Run: python benchmarks/bench_meta_defaults.py [--only TYPE,...]   (needs the `real` extra: torch + transformers)

bench_meta_inventory.py checks real configs with published sizes; this one sweeps breadth. For each entry of
transformers' MODEL_FOR_CAUSAL_LM_MAPPING_NAMES it writes the config class's defaults (`to_dict()`, the class
named in `architectures`, bf16) to a temporary config.json and sizes it twice: `inventory="analytic"` (the
layer-kind formulas) and `inventory="meta"` (transformers' own modelling code on the meta device). Printed per
type: the analytic rule, its confidence, and the parameter difference. The rows that matter are the ones the
analytic rule calls `high` and the meta build contradicts (a silent error in waiting); a registered rule that
is exact but says `low` is a rule too cautious; `generic` rows are the families no rule describes yet.
A CausalLM class of a multimodal wrapper builds no tower, so a wrapper's analytic figure (tower included) is
larger there by design (llama4, mllama, qwen3_5, qwen3_5_moe). longcat_flash's meta build shapes experts.gate_up_proj
over its zero (identity) experts too, which no checkpoint stores: the analytic figure is the checkpoint's.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from planner.sources import load_spec  # noqa: E402

AGREE = 0.005


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated model types")
    only = {x for x in ap.parse_args().only.split(",") if x}
    try:
        from transformers import CONFIG_MAPPING, logging
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    except ImportError:
        print("needs transformers (pip install -e '.[real]')")
        return 2
    logging.set_verbosity_error()
    counts = {"agree": 0, "high and off": 0, "low": 0, "no meta": 0, "refused": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for mt, cls in sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items()):
            if only and mt not in only:
                continue
            try:
                cfg = {**CONFIG_MAPPING[mt]().to_dict(), "architectures": [cls]}
            except Exception as e:  # a config class that cannot be built at its defaults
                print(f"{mt:28} config class: {type(e).__name__}")
                continue
            cfg.setdefault("torch_dtype", "bfloat16")
            d = Path(tmp) / mt
            d.mkdir()
            (d / "config.json").write_text(json.dumps(cfg, default=str))
            try:
                a = load_spec(str(d), inventory="analytic")
                m = load_spec(str(d), inventory="meta")
            except Exception as e:  # the tool's one-line refusal
                counts["refused"] += 1
                print(f"{mt:28} refused: {str(e)[:70]}")
                continue
            if not m.provenance.get("weights", "").startswith("transformers"):
                counts["no meta"] += 1
                print(f"{mt:28} {a.architecture:18} {a.confidence:5} no meta build")
                continue
            err = (a.params_total - m.params_total) / max(m.params_total, 1)
            off = abs(err) > AGREE
            counts["high and off" if off and a.confidence == "high" else "low" if off else "agree"] += 1
            print(f"{mt:28} {a.architecture:18} {a.confidence:5} {err:+9.3%}"
                  + ("   <- high but off" if off and a.confidence == "high" else ""))
    print("\n" + ", ".join(f"{k}: {v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
