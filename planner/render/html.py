"""The fit report per machine: one self-contained HTML file, or Markdown with the plots beside it.

Why this module: it turns the scenarios into the report file. Each section is gathered
(render/section.py), its plots drawn (render/plots.py) and its blocks laid out
(render/blocks.py), then written here as HTML or by render/markdown.py as Markdown.

Per machine (docs/report.md "What each section holds"): the memory ledger per device as a stacked bar against the budget,
the pair verdicts per engine, the verify curve t_v(n)/t_v(1) (measured by a profile or the
machine's roofline, labelled), the speed-up against K with the break-even line (1.0) and the
band of the acceptance interval, then the recommendation and its launch commands.

HTML embeds the SVG plots as base64 data URIs (no network assets, no id clashes between plots),
with inline CSS; a sortable table (the fleet matrix) carries one short inline script, no library.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..core.atomic import atomic_write
from ..core.errors import UsageError
from ..plan.scenario import Scenario
from .blocks import section_blocks
from .document import Block, Part, Plot, Section
from .escape import no_commands
from .markdown import image_name, render_markdown
from .plots import plots_for
from .section import build_section


def finish(s: Section, *, plots: bool = True) -> Section:
    """Draw the plots (unless `plots` is False) and lay out the blocks."""
    s = replace(s, plots=plots_for(s) if plots else ())
    return replace(s, blocks=section_blocks(s))


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;max-width:72em;color:#222;
background:#fff;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:2px solid #1f4e79;padding-bottom:.2em;margin-top:2em}h3{color:#1f4e79}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.9em;display:block;max-width:100%;overflow-x:auto}th,td{border:1px solid #ccc;padding:.25em .6em;
text-align:left;vertical-align:top}th{background:#eef3f8}td small{color:#666;display:block}
pre{background:#f5f5f5;padding:.6em;white-space:pre-wrap;word-break:break-all;font-size:.85em}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.85em;color:#555}
.PASS{color:#0a7d32;font-weight:bold}.FAIL{color:#c00000;font-weight:bold}.SKIP{color:#777}
nav li{margin:.2em 0}
.spec{background:#e2efda}.plain{background:#fff2cc}.nofit{background:#f4f4f4;color:#888}
table.sortable th{cursor:pointer}table.sortable th:after{content:" \\2195";color:#999}
"""

# The cell classes a table may colour with (Cell.tone): speculation pays, plain decoding, does not fit.
TONES = ("spec", "plain", "nofit")

# Sorts a table.sortable's rows on a header click by each cell's data-sort (numbers) or text; a second
# click reverses. Inline and self-contained: the report opens offline, from a file, with no CDN.
SORT_JS = """<script>
document.querySelectorAll("table.sortable").forEach(function(t){
  t.querySelectorAll("th").forEach(function(th,i){
    th.addEventListener("click",function(){
      var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows),up=th.dataset.up!=="1";
      function key(r){var c=r.cells[i],s=c.getAttribute("data-sort");return s===null?c.textContent:parseFloat(s);}
      rows.sort(function(a,b){var x=key(a),y=key(b);var d=(typeof x==="number"&&typeof y==="number")?x-y:
        String(x).localeCompare(String(y));return up?d:-d;});
      th.dataset.up=up?"1":"0";rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
</script>"""


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _html_block(b: Block, plots: dict[str, Plot]) -> str:
    if b.kind == "h3":
        return f"<h3>{_e(b.text)}</h3>"
    if b.kind == "p":
        return f"<p>{_e(b.text)}</p>"
    if b.kind == "list":
        return "<ul>" + "".join(f"<li>{_e(i)}</li>" for i in b.items) + "</ul>"
    if b.kind == "pre":
        return f"<pre>{_e(b.text)}</pre>"
    if b.kind == "figure":
        p = plots[b.figure]
        data = base64.b64encode(p.svg).decode("ascii")
        return (f'<figure><img alt="{_e(p.title)}" data-plot="{_e(p.name)}" '
                f'src="data:image/svg+xml;base64,{data}"><figcaption>{_e(b.text)}</figcaption></figure>')
    head = "".join(f"<th>{_e(h)}</th>" for h in b.headers) if any(b.headers) else ""
    body = []
    for row in b.rows:
        cells = []
        for c in row:
            cls = (f' class="{c.text}"' if c.text in ("PASS", "FAIL", "SKIP") else
                   f' class="{c.tone}"' if c.tone in TONES else "")
            cls += f' data-sort="{c.sort:g}"' if c.sort is not None else ""
            if c.exact is not None:
                cells.append(f'<td data-bytes="{c.exact}"{cls}>{_e(c.text)}<small>{c.exact:,} B</small></td>')
            else:
                cells.append(f"<td{cls}>{_e(c.text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return ('<table class="sortable">' if b.sortable else "<table>") + \
        (f"<thead><tr>{head}</tr></thead>" if head else "") + "<tbody>" + "".join(body) + "</tbody></table>"


def render_html(sections: Sequence[Section | Part], *, title: str, subtitle: str) -> str:
    """One self-contained HTML document (inline CSS, plots as data URIs, no network; one inline script
    when a table sorts)."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
             f"<h1>{_e(title)}</h1><p>{_e(subtitle)}</p>"]
    if len(sections) > 1:
        parts.append("<nav><ul>" + "".join(f'<li><a href="#{s.anchor}">{_e(s.title)}</a></li>' for s in sections)
                     + "</ul></nav>")
    for s in sections:
        plots = {p.name: p for p in s.plots}
        parts.append(f'<section id="{s.anchor}"><h2>{_e(s.title)}</h2>')
        parts += [_html_block(b, plots) for b in s.blocks]
        parts.append("</section>")
    if any(b.sortable for s in sections for b in s.blocks):
        parts.append(SORT_JS)
    parts.append("</body></html>")
    return no_commands("\n".join(parts) + "\n", "&#58;")  # a <pre> line from a name never starts `::`


def build(scenarios: Sequence[Scenario], *, plots: bool = True, judge: bool = True) -> list[Section]:
    """Sections for each scenario, in order, plots drawn; `judge`: with the policy's requirement results.

    Raises:
        PlannerError: a model cannot be read.
    """
    return [finish(build_section(sc, i, judge=judge), plots=plots) for i, sc in enumerate(scenarios, start=1)]


def write(sections: Sequence[Section | Part], out: str, *, title: str, subtitle: str,
          inputs: Sequence[str] = ()) -> list[str]:
    """Write the report (HTML, or Markdown + one SVG per plot beside it), atomically.

    Returns:
        The paths written, the report first.

    Raises:
        UsageError: `out` is not .html/.htm/.md, is an input of this command, or cannot be written.
    """
    p = Path(out)
    suffix = p.suffix.lower()
    if suffix in (".html", ".htm"):
        atomic_write(p, render_html(sections, title=title, subtitle=subtitle), inputs=inputs)
        return [str(p)]
    if suffix != ".md":
        raise UsageError(f"Cannot write report '{out}': unknown format '{suffix or '(none)'}' (expected .html or .md).")
    written = []
    for s in sections:
        for plot in s.plots:
            img = p.parent / image_name(p.stem, s, plot)
            atomic_write(img, plot.svg, inputs=[*inputs, p])
            written.append(str(img))
    atomic_write(p, render_markdown(sections, title=title, subtitle=subtitle, stem=p.stem), inputs=inputs)
    return [str(p), *written]
