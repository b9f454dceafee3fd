"""The fleet matrix in the HTML report sorts by a header click and colours its cells (#31 item 13):
plain HTML/CSS/JS inline, no CDN; each cell's colour and sort key match the JSON rows of the same run.

Why: with 60+ targets x several machines a reader looks for "where does speculation pay" and "which is
fastest"; a wide table scrolls inside itself instead of overflowing the page.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest

from planner.cli import main

MACHINES = ["--machine", "rtx-4090", "--machine", "m3-max-36gb", "--family", "qwen2.5"]


class Tables(HTMLParser):
    """Every table: its class, and its body cells as (attrs, text) rows; every <script> with its attrs."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[str, list[list[tuple[dict, str]]]]] = []
        self.scripts: list[dict] = []
        self._cell: dict | None = None
        self._text = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append((a.get("class") or "", []))
        elif tag == "tr" and self.tables:
            self.tables[-1][1].append([])
        elif tag == "td":
            self._cell, self._text = a, ""
        elif tag == "script":
            self.scripts.append(a)

    def handle_data(self, data):
        if self._cell is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.tables[-1][1][-1].append((self._cell, self._text))
            self._cell = None


def run(capsys, *args: str) -> int:
    with pytest.raises(SystemExit) as e:
        main(["report", *MACHINES, *args])
    return int(e.value.code or 0)


def written_and_rows(capsys, out) -> list[dict]:
    """Write the fleet report to `out`, then return the same report's JSON rows (the truth its cells show)."""
    assert run(capsys, "--out", str(out)) == 0
    capsys.readouterr()
    run(capsys, "--json")
    return json.loads(capsys.readouterr().out)["rows"]


def test_the_fleet_matrix_is_sortable_and_coloured_as_the_rows_say(capsys, tmp_path):
    out = tmp_path / "fleet.html"
    rows = written_and_rows(capsys, out)
    by = {(r["target"], r["machine"]): r for r in rows}
    doc = Tables()
    doc.feed(out.read_text())
    sortable = [cells for cls, cells in doc.tables if cls == "sortable"]
    assert len(sortable) == 1
    machines = ["rtx-4090", "m3-max-36gb"]
    body = [r for r in sortable[0] if r]
    assert len(body) == len({r["target"] for r in rows})
    for cells in body:
        target = cells[0][1]
        for (attrs, _), machine in zip(cells[1:3], machines, strict=True):
            r = by[(target, machine)]
            # green where speculation pays (the row carries its K), yellow plain decoding, grey does not fit
            want = "nofit" if not r["fits"] else "spec" if r["k"] is not None else "plain"
            assert attrs["class"] == want, (target, machine, r["method"], r["speedup"])
            assert float(attrs["data-sort"]) == (round(r["tokens_per_s"], 3) if r["fits"] else 0.0)
    # one inline script, nothing fetched: a file opened offline still sorts
    assert doc.scripts == [{}]
    assert "cdn" not in out.read_text().lower() and "<script src" not in out.read_text()


def test_each_costs_part_is_listed_once_per_machine_and_covers_every_row(capsys, tmp_path):
    from planner.render.fleet import _parts

    out = tmp_path / "fleet.md"
    rows = written_and_rows(capsys, out)
    text = out.read_text()
    for machine in ("rtx-4090", "m3-max-36gb"):
        mine = [r for r in rows if r["machine"] == machine and r["costs_source"] not in (None, "none")]
        part = text.split(f"## {machine}", 1)[1].split("\n## ", 1)[0]
        items = [ln[2:] for ln in part.splitlines() if ln.startswith("- costs")]
        listed = [p for it in items for p in (_parts(it.split(": ", 1)[1]) if it.startswith("costs: ")
                                               else [it.split(": ", 1)[1]])]
        assert len(listed) == len(set(listed))  # no part twice
        for r in mine:  # every part of every row is there: shared, or on a line naming its target
            short = r["target"].rsplit("/", 1)[-1]
            for p in _parts(r["costs_source"]):
                assert any(it == f"costs: {p}" or (it.startswith("costs: ") and p in _parts(it[7:])) or
                           (p in it and short in it.split(": ", 1)[0]) for it in items), (machine, short, p)
