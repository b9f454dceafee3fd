"""The Markdown writer of the fit report: the same tables as the HTML, figures linked beside the file.

Why its own module: Markdown is the second rendering of the document model (render/document.py);
it links each plot as `<stem>-<section>-<plot>.svg` (written by render/html.py's `write`)
instead of embedding it, and escapes the table separators in cells.
"""

from __future__ import annotations

from collections.abc import Sequence

from .document import Block, Cell, Plot, Section


def _md_cell(c: Cell) -> str:
    text = c.text if c.exact is None else f"{c.text} ({c.exact:,} B)"
    return text.replace("|", "\\|").replace("\n", " ")


def _md_block(b: Block, images: dict[str, str]) -> str:
    if b.kind == "h3":
        return f"### {b.text}"
    if b.kind == "p":
        return b.text
    if b.kind == "list":
        return "\n".join(f"- {i}" for i in b.items)
    if b.kind == "pre":
        return f"```\n{b.text}\n```"
    if b.kind == "figure":
        return f"![{b.text}]({images[b.figure]})"
    headers = b.headers if any(b.headers) else tuple(" " for _ in b.headers)
    lines = ["| " + " | ".join(h.replace("|", "\\|") for h in headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
    return "\n".join(lines)


def image_name(stem: str, s: Section, plot: Plot) -> str:
    return f"{stem}-{s.anchor}-{plot.name}.svg"


def render_markdown(sections: Sequence[Section], *, title: str, subtitle: str, stem: str) -> str:
    """Markdown with the same tables; figures link `<stem>-<section>-<plot>.svg` beside the file."""
    out = [f"# {title}", "", subtitle, ""]
    if len(sections) > 1:
        out += [f"- [{s.title}](#{s.anchor})" for s in sections] + [""]
    for s in sections:
        images = {p.name: image_name(stem, s, p) for p in s.plots}
        out += [f'<a id="{s.anchor}"></a>', "", f"## {s.title}", ""]
        for b in s.blocks:
            out += [_md_block(b, images), ""]
    return "\n".join(out)
