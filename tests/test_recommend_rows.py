"""One row per draft size in recommend's table (issue #31 item 6).

`recommend llama-3.3-70b-instruct --machine 2x-rtx-4090` merged `Llama-3.2-3B-Instruct | Llama-3.1-8B-Instruct`
into one row showing the 3B's -937.77 MiB while the JSON gave the 8B -3.26 GB.
"""

from __future__ import annotations

import json

from planner.core.fmt import fmt_bytes

from .cli_run import run_cli as run

ARGS = ["recommend", "llama-3.3-70b-instruct", "--machine", "2x-rtx-4090", "--all"]


def test_every_row_is_one_draft_size_with_its_own_headroom(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, js, err = run([*ARGS, "--json"], capsys)
    assert code == 0, err
    plans = json.loads(js)["plans"]
    code, text, _ = run(ARGS, capsys)
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("draft / method")) + 2
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(("costs:", "(", "RECOMMENDED")) or not lines[i])
    rows = [ln for ln in lines[start:end] if not ln.startswith(" ")]  # not a wrapped cell's second line
    seen = set()
    for row in rows:
        name = row.split("  ")[0].strip()
        assert " | " not in name
        if ":" in name or name.startswith("ngram"):
            continue
        mine = [p for p in plans if p["draft"] and p["draft"].rsplit("/", 1)[-1] == name]
        assert mine, name
        # an unusable plan shows how close the nearest of its KV types comes: the largest headroom
        assert fmt_bytes(max(p["headroom_bytes"] for p in mine)) in row
        seen.add(name)
    assert {"Llama-3.2-3B-Instruct", "Llama-3.1-8B-Instruct"} <= seen
