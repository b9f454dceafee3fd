"""Cut a draft from a GGUF target: the same model with fewer transformer blocks (layer skipping).

Why: the opt-in llama-server benchmark (benchmarks/bench_endpoint_llamacpp.py) needs a real pair
that shares the target's tokenizer exactly, and only two small GGUFs are at hand. A model with some
of its own blocks removed is such a draft (Draft & Verify, Zhang et al. 2023; LayerSkip, Elhoushi
et al. 2024): same vocabulary, embeddings and head, cheaper per token, and it agrees with the target
only as far as the skipped blocks matter. Written with the `gguf` package the way gguf-py's
scripts/gguf_new_metadata.py copies a file: every key-value copied (block_count changed), the kept
blocks' tensors renumbered blk.0..blk.N-1, the raw (quantised) tensor bytes copied unchanged.

    python benchmarks/cut_gguf_draft.py .cache/gguf/SmolLM2-135M-Instruct.Q4_1.gguf draft.gguf --keep 0-11,26-29
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import gguf

BLOCK = re.compile(r"^blk\.(\d+)\.(.+)$")


def parse_keep(text: str, n_blocks: int) -> list[int]:
    """'0-11,26-29' -> [0..11, 26..29], checked against the target's block count."""
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        lo, hi = int(a), int(b or a)
        out += range(lo, hi + 1)
    if not out or sorted(set(out)) != out or out[-1] >= n_blocks:
        raise SystemExit(f"--keep {text!r}: expected increasing block ranges within 0..{n_blocks - 1}")
    return out


def cut(src: Path, dst: Path, keep: str) -> int:
    """Write `dst`: `src` with only the blocks in `keep` (renumbered). Returns the new block count."""
    reader = gguf.GGUFReader(str(src))
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    count_key = f"{arch}.block_count"
    blocks = parse_keep(keep, int(reader.fields[count_key].contents()))
    renumber = {old: new for new, old in enumerate(blocks)}
    writer = gguf.GGUFWriter(str(dst), arch=arch, endianess=reader.endianess)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # written by GGUFWriter itself
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        value = len(blocks) if field.name == count_key else field.contents()
        if field.name == gguf.Keys.General.NAME:
            value = f"{value} ({len(blocks)}-block draft)"
        writer.add_key_value(field.name, value, vtype, sub_type=sub)
    kept = []
    for t in reader.tensors:
        m = BLOCK.match(t.name)
        if m and int(m.group(1)) not in renumber:
            continue
        name = f"blk.{renumber[int(m.group(1))]}.{m.group(2)}" if m else t.name
        kept.append(t)
        writer.add_tensor_info(name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in kept:
        writer.write_tensor_data(t.data, tensor_endianess=reader.endianess)
    writer.close()
    return len(blocks)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--keep", required=True, help="blocks to keep, e.g. 0-11,26-29")
    a = ap.parse_args(argv)
    if a.dst.resolve() == a.src.resolve():
        raise SystemExit("the draft must not overwrite the target")
    n = cut(a.src, a.dst, a.keep)
    print(f"wrote {a.dst} ({n} blocks)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
