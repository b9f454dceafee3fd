"""The report's load table says "does not fit" where a batch does not fit, never a speed-up beside it
(#31 item 13: cells read "1.26x K=2 faster (does not fit)", a speed nobody can run).
"""

from __future__ import annotations

import re

import pytest

from planner.cli import main

CELL = re.compile(r"^\d+\.\d\dx K=\d+ (faster|slower|uncertain)$")


def test_load_cells_are_a_speed_up_or_does_not_fit(capsys, tmp_path):
    out = tmp_path / "r.md"
    with pytest.raises(SystemExit) as e:
        main(["report", "qwen2.5-7b-instruct", "--draft", "qwen2.5-0.5b-instruct", "--machine", "rtx-4090",
              "--out", str(out)])
    assert e.value.code == 0
    lines = out.read_text().splitlines()
    head = lines.index(next(ln for ln in lines if ln.startswith("| context | B=1 |")))
    batches = [int(c.strip()[2:]) for c in lines[head].strip("|").split("|")[1:]]
    table = {}
    for ln in lines[head + 2:]:
        if not ln.startswith("|"):
            break
        context, *cells = (c.strip() for c in ln.strip("|").split("|"))
        table[int(context.replace(",", ""))] = dict(zip(batches, cells, strict=True))
    assert all(CELL.match(c) or c == "does not fit" for row in table.values() for c in row.values())
    # by hand: Qwen2.5-7B's KV is 28 layers x 2 (K, V) x 4 KV heads x 128 x 2 bytes = 57,344 B a token, so a
    # 32,768-token sequence holds 1.75 GiB (+ 0.38 GiB for the 0.5B draft's 12,288 B a token); 24 GiB x 0.9
    # (vLLM's utilisation) less 14.19 GiB of target weights, the 0.92 GiB draft and 1.79 GiB of non-torch
    # memory leaves ~4.7 GiB: room for 2 such sequences (4.3 GiB), not 4 (8.5 GiB)
    assert CELL.match(table[32768][2]) and table[32768][4] == "does not fit"
