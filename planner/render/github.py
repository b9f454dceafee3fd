"""GitHub Actions output for `planner check`: `::error`/`::warning` annotations and a step-summary table.

Why its own module: the workflow-command syntax (docs.github.com, "Workflow commands for GitHub
Actions": `::error file=F,title=T::MESSAGE`, data escaped %25 %0D %0A, properties also %3A %2C) and
the Markdown of $GITHUB_STEP_SUMMARY are a format of their own, like JUnit XML (junit.py). Every piece of
text of the summary goes through render/escape.py (`md`, `md_cell`): a CR, a `<details>`, an `<img>` or a
`[x](javascript:...)` in a deployment or machine name is text, never a row end, HTML or a link.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .escape import md, md_cell


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, *, title: str, file: str | None = None) -> str:
    """One workflow command line: `::error file=planner.toml,title=...::message` (level error|warning|notice).

    Example:
        >>> annotation("error", "over by 1 B: fix, then rerun", title="a: b", file="planner.toml")
        '::error file=planner.toml,title=a%3A b::over by 1 B: fix, then rerun'
    """
    props = ([f"file={_prop(file)}"] if file else []) + [f"title={_prop(title)}"]
    return f"::{level} {','.join(props)}::{_data(message)}"


def summary(headers: Sequence[str], rows: Iterable[Sequence[Any]], verdict: str, title: str) -> str:
    """A Markdown section for $GITHUB_STEP_SUMMARY: a heading, the verdict, one table row per result.

    Example:
        >>> print(summary(["a", "b"], [["x|y", 1]], "PASSED", "planner check"))
        ### planner check
        <BLANKLINE>
        **PASSED**
        <BLANKLINE>
        | a | b |
        |---|---|
        | x\\|y | 1 |
        <BLANKLINE>
    """
    lines = [f"### {md(title)}", "", f"**{md(verdict)}**", "", "| " + " | ".join(md_cell(h) for h in headers) + " |",
             "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(md_cell(str(c)) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
