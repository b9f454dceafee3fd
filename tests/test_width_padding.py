"""A table over the terminal width first drops tabulate's header padding (issue #31 item 7, part)."""

from __future__ import annotations

from planner.render import width


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_a_table_just_over_80_fits_without_wrapping_a_cell(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    headers = ["draft / method", "KV", "K", "speed-up", "verdict", "fits", "headroom", "runs", "alpha"]
    rows = [["Llama-3.2-1B", "auto/fp8", "7", "2.30x", "faster", "yes", "1.79 GiB", "yes", "0.91"]]
    # by hand: each column is its widest cell or header; 2 spaces between the 9 columns
    natural = sum(max(len(h), len(c)) for h, c in zip(headers, rows[0], strict=True)) + 2 * (len(headers) - 1)
    padded = sum(max(len(h) + 2, len(c)) for h, c in zip(headers, rows[0], strict=True)) + 2 * (len(headers) - 1)
    assert natural <= 80 < padded  # over 80 only by tabulate's padding
    text = width.table(rows, headers)
    assert _widest(text) == natural and len(text.splitlines()) == 3  # header, rule, one row: nothing wrapped


def test_a_table_that_fits_keeps_its_padding(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    text = width.table([["a", "1"]], ["k", "v"])
    assert text.splitlines()[0] == "k    v"  # tabulate's own layout: the header padded by 2
