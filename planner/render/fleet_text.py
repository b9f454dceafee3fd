"""The machine-first report in the terminal: one table per machine, then where each target should live.

Why its own module: render/fleet.py lays the rows out as document blocks for HTML/Markdown; a
terminal needs fewer, shorter columns (80 of them: render/width.py) and no plot, from the same rows
(plan/fleet.py), so the figures printed here are the report's and the JSON's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.fmt import fmt_bytes
from ..fits.machine import Machine
from ..plan.fleet import BEST_BY, Row
from . import width
from .fleet import _short, matrix

HEADERS = ["target", "fits", "plan", "K", "speed-up", "tok/s"]


def _fits(r: Row) -> str:
    if not r.fits:
        return "NO"
    return "yes" if r.fits_as_stored else f"{r.weights_dtype}"


def _cells(r: Row) -> list[str]:
    c = r.choice
    speed = f"{c.speedup:.2f}x" if c is not None and r.fits and r.speculates else "-"
    rate = "-" if r.tokens_per_s is None else f"{r.tokens_per_s:.1f}"
    return [_short(r.target.spec.id), _fits(r), _plan_cell(r),
            str(c.k) if c is not None and r.speculates else "-", speed, rate]


def _plan_cell(r: Row) -> str:
    """The draft's short name; another method says which first unless its name does (ngram (chat))."""
    if not r.speculates:
        return "plain" if r.fits else "-"
    name = _short(r.choice.draft if r.choice is not None else None)
    return name if r.method == "draft_model" or name.startswith(r.method) else f"{r.method}: {name}"


def machine_text(m: Machine, rows: Sequence[Row], summary: str) -> str:
    """One machine: its figures in a line, the rows (fits: yes, the quantisation it needs, or NO)."""
    head = [*width.wrap(f"{m.name}: {m.display_name}, {m.n_devices} x {fmt_bytes(m.memory_bytes)} ({m.origin})"),
            *width.wrap(summary, indent="  ")]
    if not rows:
        return "\n".join(head)
    return "\n".join([*head, width.table([_cells(r) for r in rows], HEADERS, shrink=(2, 0), floor=10,
                                         hyphens=True)])


def fleet_text(per_machine: Sequence[tuple[Any, Sequence[Row]]], by: str) -> str:
    """Where each target should live, and by which rule (--best-by)."""
    rows = [[_short(tid), best.machine.name if best else "none",
             "-" if best is None or best.tokens_per_s is None else f"{best.tokens_per_s:.1f}"]
            for tid, _, best in matrix(per_machine, by)]
    return "\n".join([*width.wrap(f"best machine per target (--best-by {by}): {BEST_BY[by]}"),
                      width.table(rows, ["target", "best machine", "tok/s"], shrink=(0,), hyphens=True)])


def report_text(per_machine: Sequence[tuple[Any, Sequence[Row]]], summaries: Sequence[str], by: str) -> str:
    """Every machine's table, then (several machines) the fleet's best machine per target."""
    parts = [machine_text(m, rows, s) for (m, rows), s in zip(per_machine, summaries, strict=True)]
    if len(per_machine) > 1:
        parts.append(fleet_text(per_machine, by))
    parts.append("\n".join(width.wrap("fits: yes (as stored), the weights' quantisation it needs, or NO; tok/s: "
                                      "predicted tokens/s per sequence of the best plan (roofline bounds from each "
                                      "machine's figures unless a profile measured them); the launch commands: "
                                      "--out FILE.html or --json")))
    return "\n\n".join(parts)
