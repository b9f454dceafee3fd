"""Time the planner's GGUF header reader against gguf-py's GGUFReader on the real test files.

Run: python benchmarks/bench_gguf.py [FILE.gguf ...] [--runs N] [--reference-runs M]
Without files it uses the two test models (scripts/fetch_ggufs.py puts them in
$SPEC_PLANNER_GGUF_DIR or .cache/gguf). For each file it prints the median wall time of
`read_gguf` (metadata + tensor infos, in this process, after one warm-up read) and of
`GGUFReader(path)` (which maps every field and tensor into numpy views), and their ratio;
both are measured here, same machine, same run. Exit 1 when a read takes 0.5 s or more
(the target for these files), 0 otherwise.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from planner.sources.gguf import read_gguf  # noqa: E402
from tests.gguf_dir import gguf_test_dir  # noqa: E402

TARGET_S = 0.5
DEFAULT_FILES = ("SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf")


def median_s(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="GGUF header read time: planner vs gguf.GGUFReader")
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--runs", type=int, default=7, help="timed reads with the planner (median)")
    ap.add_argument("--reference-runs", type=int, default=3, help="timed GGUFReader reads (median; 0 skips)")
    args = ap.parse_args(argv)
    files = args.files or [gguf_test_dir() / f for f in DEFAULT_FILES]
    missing = [f for f in files if not f.is_file()]
    if missing:
        print(f"missing: {', '.join(map(str, missing))} (run: python scripts/fetch_ggufs.py)", file=sys.stderr)
        return 1
    from gguf import GGUFReader

    ok = True
    for path in files:
        read_gguf(path)  # warm-up: imports, page cache
        h = read_gguf(path)
        ours = median_s(lambda p=path: read_gguf(p), args.runs)
        line = (f"{path.name}: {len(h.tensors)} tensors, {len(h.metadata)} keys, "
                f"{h.tensor_bytes:,} tensor bytes | planner {ours * 1000:.0f} ms (median of {args.runs})")
        if args.reference_runs:
            ref = median_s(lambda p=path: GGUFReader(p), args.reference_runs)
            line += f" | GGUFReader {ref * 1000:.0f} ms (median of {args.reference_runs}) | {ref / ours:.0f}x faster"
        print(line, flush=True)
        if ours >= TARGET_S:
            ok = False
            print(f"  FAIL: {ours:.3f} s >= {TARGET_S} s target", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
