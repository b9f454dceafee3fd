"""The report's document model: cells, blocks, plots and the section of one deployment on one machine.

Why a small document model: HTML and Markdown must hold the same tables, so each section is
built once as blocks (heading, paragraph, list, table, figure, preformatted) and rendered
twice (render/html.py, render/markdown.py). Cells keep their exact integers (bytes) beside the
text people read, so the HTML can be checked by a parser (`data-bytes`) and nothing is lost to
rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..fits.verdict import FitResult
from ..plan import recommend as plan
from ..plan.assess import Assessment
from ..plan.check import Result
from ..plan.load import BatchPoint


@dataclass(frozen=True)
class Cell:
    text: str
    exact: int | None = None  # bytes, shown beside the text and kept in data-bytes
    tone: str = ""  # a class for its colour in HTML (render/html.py TONES); Markdown has none
    sort: float | None = None  # the figure a sortable table orders the column by (HTML data-sort)


@dataclass(frozen=True)
class Block:
    kind: str  # h3 | p | list | table | figure | pre
    text: str = ""
    items: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[Cell, ...], ...] = ()
    figure: str = ""  # figure name (key into the section's figures)
    sortable: bool = False  # HTML: a click on a header sorts the rows by that column (inline script)


@dataclass(frozen=True)
class Plot:
    name: str  # ledger | verify | speedup | load
    title: str
    svg: bytes


@dataclass(frozen=True)
class Section:
    """One deployment on one machine, ready to render."""

    anchor: str
    title: str
    assessment: Assessment  # the draft shown: given, else the recommended one
    draft_origin: str  # given | recommended | best candidate, not recommended | none
    fit: FitResult | None
    recommendation: plan.Recommendation | None
    recommendation_error: str | None
    verify_s: tuple[float, ...]
    verify_source: str | None
    results: tuple[Result, ...] = ()
    blocks: tuple[Block, ...] = ()
    plots: tuple[Plot, ...] = field(default=())
    # speculation under load: (context, the plan at 1, 2, 4, ... sequences) for a few contexts
    load: tuple[tuple[int, tuple[BatchPoint, ...]], ...] = ()
    load_error: str | None = None


@dataclass(frozen=True)
class Part:
    """A section of the machine-first report (render/fleet.py): a machine's rows, or the fleet matrix.

    It has no single deployment behind it, so it carries only what the writers read: an anchor,
    a title, the laid-out blocks and the plots they show.
    """

    anchor: str
    title: str
    blocks: tuple[Block, ...] = ()
    plots: tuple[Plot, ...] = ()
