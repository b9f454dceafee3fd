"""Start-up: `planner memory <local folder> --json` against a bare `python -c pass`, and a GGUF's ledger against
local folders' ledgers, same machine, same moment.

Run: python benchmarks/bench_startup.py [MODEL_DIR] [--gguf FILE.gguf ...] [--runs N]
Prints the median wall time of each (interleaved runs, so all see the same load) and the ratios; issue #33
asks for the folder's ledger within 5x a bare interpreter start with a warm bytecode cache (the first run
writes the bytecode even where PYTHONDONTWRITEBYTECODE is set), and for a GGUF's ledger no slower than the
folder's. Without MODEL_DIR it writes Llama-3.1-8B's reference config to a temporary folder; without
--gguf it takes the real test GGUFs (tests/gguf_dir.py) when they are there. Each GGUF is compared with two
folders: the config-only folder (the cheapest ledger there is: one small JSON, no tensor header) and a folder
as a download leaves it, SmolLM2-135M's config.json beside a model.safetensors whose header lists its 272 real
tensors (a sparse file: the header is real, the data is a hole no read touches). Where the time goes:
`python -X importtime -m planner memory DIR --json`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.gguf_dir import gguf_test_dir  # noqa: E402

GOAL = 5.0  # issue #33: within 5x a bare interpreter start (warm bytecode)
GOAL_GGUF = 1.0  # issue #33: a GGUF's ledger no slower than a local folder's


def wall(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=REPO, env=env)
    return time.perf_counter() - t0


def smollm2_folder() -> Path:
    """SmolLM2-135M as a download leaves it: its config and a safetensors file whose header holds the model's 272
    BF16 tensors (HF Llama names and shapes from the config), data left as a hole of the right size."""
    folder = Path(tempfile.mkdtemp())
    cfg = json.loads((REPO / "tests/fixtures/configs/SmolLM2-135M.json").read_text())
    (folder / "config.json").write_text(json.dumps(cfg))
    h, ff = cfg["hidden_size"], cfg["intermediate_size"]
    kv = cfg["num_key_value_heads"] * (h // cfg["num_attention_heads"])  # SmolLM2's config has no head_dim
    shapes = {"model.embed_tokens.weight": [cfg["vocab_size"], h], "model.norm.weight": [h]}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes |= {p + "self_attn.q_proj.weight": [h, h], p + "self_attn.k_proj.weight": [kv, h],
                   p + "self_attn.v_proj.weight": [kv, h], p + "self_attn.o_proj.weight": [h, h],
                   p + "mlp.gate_proj.weight": [ff, h], p + "mlp.up_proj.weight": [ff, h],
                   p + "mlp.down_proj.weight": [h, ff], p + "input_layernorm.weight": [h],
                   p + "post_attention_layernorm.weight": [h]}
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in shapes.items():
        nbytes = 2 * math.prod(shape)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the safetensors format pads the header to 8 bytes with spaces
    with (folder / "model.safetensors").open("wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + offset)
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", help="a local model folder (default: Llama-3.1-8B's config)")
    ap.add_argument("--gguf", nargs="*", default=None, help="GGUF files to compare with the folder")
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    if args.model:
        model = Path(args.model)
    else:
        model = Path(tempfile.mkdtemp())
        cfg = json.loads((REPO / "tests/fixtures/configs/Llama-3.1-8B.json").read_text())
        (model / "config.json").write_text(json.dumps(cfg))
    ggufs = [Path(g) for g in args.gguf] if args.gguf is not None else sorted(gguf_test_dir().glob("*.gguf"))
    bare = [sys.executable, "-c", "pass"]
    ours = [sys.executable, "-m", "planner", "memory", str(model), "--json"]
    full = [sys.executable, "-m", "planner", "memory", str(smollm2_folder()), "--json"]
    theirs = {g.name: [sys.executable, "-m", "planner", "memory", str(g), "--json"] for g in ggufs}
    writable = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for cmd in (ours, full, *theirs.values()):
        wall(cmd, env=writable)  # warm the file cache and write the bytecode
    times: dict[str, list[float]] = {"bare": [], "dir": [], "full": [], **{k: [] for k in theirs}}
    for _ in range(args.runs):
        times["bare"].append(wall(bare))
        times["dir"].append(wall(ours))
        times["full"].append(wall(full))
        for name, cmd in theirs.items():
            times[name].append(wall(cmd))
    b = statistics.median(times["bare"])
    ratio = statistics.median(o / x for o, x in zip(times["dir"], times["bare"], strict=True))
    print(f"python -c pass:               median {b * 1000:6.1f} ms over {args.runs} runs")
    print(f"planner memory {model.name} --json (config only): median {statistics.median(times['dir']) * 1000:6.1f} ms")
    print(f"ratio {ratio:.2f}x (goal <= {GOAL:g}x): {'met' if ratio <= GOAL else 'NOT met'}")
    print(f"planner memory <SmolLM2-135M config + safetensors header> --json: median "
          f"{statistics.median(times['full']) * 1000:6.1f} ms")
    for name in theirs:
        r = statistics.median(g / o for g, o in zip(times[name], times["dir"], strict=True))
        r_full = statistics.median(g / o for g, o in zip(times[name], times["full"], strict=True))
        print(f"planner memory {name} --json: median {statistics.median(times[name]) * 1000:6.1f} ms, "
              f"{r:.2f}x the config-only folder's, {r_full:.2f}x the config + safetensors folder's "
              f"(goal <= {GOAL_GGUF:g}x)")


if __name__ == "__main__":
    main()
