"""The Markdown writer of the fit report: the same tables as the HTML, figures linked beside the file.

Why its own module: Markdown is the second rendering of the document model (render/document.py);
it links each plot as `<stem>-<section>-<plot>.svg` (written by render/html.py's `write`)
instead of embedding it. Every piece of text goes through `_md` (render/escape.py `md`, shared with the step
summary): HTML tag openings and entities are escaped, so a model named `<script>` is text in any Markdown
viewer; brackets are escaped, so a folder named `[x](javascript:...)` or `![x](http://...)` is neither a link
nor a remote image; control characters are escaped, so a name holding a newline cannot start a heading or a
line of its own; table cells also escape `|`, a `pre` block is fenced longer than any backtick run inside it,
and no line starts a GitHub workflow command (`escape.no_commands`), should the file be printed in CI.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from ..core.errors import one_line
from .document import Block, Cell, Part, Plot, Section
from .escape import md as _md
from .escape import md_cell, no_commands


def _md_cell(c: Cell) -> str:
    return md_cell(c.text if c.exact is None else f"{c.text} ({c.exact:,} B)")


def _md_block(b: Block, images: dict[str, str]) -> str:
    if b.kind == "h3":
        return f"### {_md(b.text)}"
    if b.kind == "p":
        return _md(b.text, lines=True)
    if b.kind == "list":
        return "\n".join(f"- {_md(i)}" for i in b.items)
    if b.kind == "pre":  # literal inside the fence: only control characters escaped, the fence outruns any ```
        fence = "`" * max(3, 1 + max((len(r) for r in re.findall("`+", b.text)), default=0))
        return f"{fence}\n" + "\n".join(one_line(p) for p in b.text.split("\n")) + f"\n{fence}"
    if b.kind == "figure":
        return f"![{_md(b.text)}]({images[b.figure]})"
    headers = b.headers if any(b.headers) else tuple(" " for _ in b.headers)
    lines = ["| " + " | ".join(md_cell(h) for h in headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
    return "\n".join(lines)


def image_name(stem: str, s: Section | Part, plot: Plot) -> str:
    return f"{stem}-{s.anchor}-{plot.name}.svg"


def render_markdown(sections: Sequence[Section | Part], *, title: str, subtitle: str, stem: str) -> str:
    """Markdown with the same tables; figures link `<stem>-<section>-<plot>.svg` beside the file."""
    out = [f"# {_md(title)}", "", _md(subtitle, lines=True), ""]
    if len(sections) > 1:
        out += [f"- [{_md(s.title)}](#{_md(s.anchor)})" for s in sections] + [""]
    for s in sections:
        images = {p.name: image_name(stem, s, p) for p in s.plots}
        out += [f'<a id="{html.escape(one_line(s.anchor), quote=True)}"></a>', "", f"## {_md(s.title)}", ""]
        for b in s.blocks:
            out += [_md_block(b, images), ""]
    return no_commands("\n".join(out))  # a `pre` line is literal: no line of it may start `::` either
