"""Write docs/speed.md's benchmark tables from the benchmarks' own output, never by hand.

Run: python benchmarks/speed_doc.py [--check]

Why: a table pasted into a doc drifts from the code the day a constant moves, and a pasted table
cannot say which rows are in-sample. Each generated block in docs/speed.md sits between
`<!-- generated: NAME -->` and `<!-- end generated -->`; this script reruns the benchmark the block
names (bench_published: the summaries by source, origin and sample, overall and out-of-sample;
bench_baselines: predicted / measured by group, in-sample apart) and writes its text there.
`--check` writes nothing and exits 1 when a block differs from what the benchmark prints now.
Exit code: 0 (written, or up to date), 1 (--check: out of date), 2 (a marker or the data is missing).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "speed.md"
sys.path.insert(0, str(REPO / "benchmarks"))
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import bench_baselines  # noqa: E402
import bench_published  # noqa: E402

BLOCK = re.compile(r"(<!-- generated: (?P<name>[a-z_]+) -->\n```\n)(?P<body>.*?)(```\n<!-- end generated -->)", re.S)


def published_block() -> str:
    """bench_published's report from its per-source summary on (the per-entry table stays in the run)."""
    rows = [bench_published.predict_entry(e) for e in bench_published.load_entries(bench_published.DATA)]
    text = bench_published.report_text(rows, bench_published.DATA.relative_to(REPO))
    return text[text.index("By source:"):].rstrip("\n") + "\n"


def baselines_block() -> str:
    """bench_baselines' table by group (engine, machine class, dense or MoE; in-sample apart)."""
    rows = [bench_baselines.predict(r) for r in bench_baselines.load_rows(bench_baselines.DATA)]
    text = bench_baselines.report(rows)
    return text[text.index("By group (pred/meas):"):].rstrip("\n") + "\n"


BLOCKS: dict[str, Callable[[], str]] = {"bench_published": published_block, "bench_baselines": baselines_block}


def render(doc: str) -> str:
    """The doc with every generated block replaced by what its benchmark prints now.

    Raises:
        KeyError: a block names no known benchmark.
    """
    return BLOCK.sub(lambda m: m.group(1) + BLOCKS[m.group("name")]() + m.group(4), doc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/speed.md is out of date; write nothing")
    args = ap.parse_args(argv)
    doc = DOC.read_text()
    names = {m.group("name") for m in BLOCK.finditer(doc)}
    if names != set(BLOCKS):
        print(f"error: {DOC} has generated blocks {sorted(names)}, expected {sorted(BLOCKS)}", file=sys.stderr)
        return 2
    new = render(doc)
    if args.check:
        if new != doc:
            print(f"{DOC} is out of date: run python benchmarks/speed_doc.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
