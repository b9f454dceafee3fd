"""The report's plots: memory ledger per device, verify curve, speed-up against K, speed-up under
load, as SVG bytes; and the machine-first report's tokens/s bars per machine.

All of them are SVG written directly (`render/svg.py`), with no matplotlib: every report draws in a
plain install (issue #31), the text stays text, and the same inputs give the same bytes. The plots
draw the rows render/blocks.py tabulates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..plan.assess import Assessment, Speed
from ..plan.load import BatchPoint
from .blocks import ledger_rows, speed_series
from .document import Plot, Section
from .svg import FONT_PX, Chart, nice_ticks, xml

COLORS = {"target weights": "#1f4e79", "draft weights": "#5b9bd5", "target KV cache": "#c55a11",
          "draft KV cache": "#f4b183", "activations": "#70ad47", "overhead": "#7f7f7f", "headroom": "#e2efda"}


def ledger_plot(a: Assessment) -> bytes:
    """Horizontal stacked bar per device (GiB), with the budget as a dashed red mark."""
    rows = ledger_rows(a)
    parts = [(t, v) for t, v in rows if t not in ("used", "budget", "headroom")]
    budgets = dict(rows)["budget"]
    labels = [f"{d.budget.index}: {d.budget.name}" for d in a.devices]
    st = a.scenario.settings
    width, left, right, top, row_h = 640, 170, 20, 30, 34
    bottom = top + row_h * len(labels)
    span = max([*budgets, *(sum(col) for col in zip(*(v for _, v in parts), strict=True))], default=1) / 2**30
    ticks = nice_ticks(span)
    scale = (width - left - right) / ticks[-1]
    legend = [*[t for t, _ in parts], "budget"]
    height = bottom + 40 + 16 * math.ceil(len(legend) / 3)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="{FONT_PX}">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{width / 2:.0f}" y="16" text-anchor="middle">'
           f'{xml(f"{st.engine}, context {st.context:,} x {st.batch}")}</text>']
    for t in ticks:
        out.append(f'<path d="M{left + t * scale:.1f} {top}V{bottom}" stroke="#e5e5e5"/>'
                   f'<text x="{left + t * scale:.1f}" y="{bottom + 14}" text-anchor="middle">{t:g}</text>')
    for i, label in enumerate(labels):
        y, x = top + i * row_h + 6, float(left)
        out.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{xml(label)}</text>')
        for term, values in parts:
            w = values[i] / 2**30 * scale
            out.append(f'<rect class="term" data-term="{xml(term)}" data-bytes="{values[i]}" x="{x:.2f}" y="{y}" '
                       f'width="{w:.2f}" height="{row_h - 12}" fill="{COLORS[term]}" stroke="#ffffff" '
                       f'stroke-width="0.5"><title>{xml(term)}: {values[i] / 2**30:.2f} GiB</title></rect>')
            x += w
        bx = left + budgets[i] / 2**30 * scale
        out.append(f'<path class="budget" data-bytes="{budgets[i]}" d="M{bx:.2f} {y - 4}V{y + row_h - 8}" '
                   f'stroke="#c00000" stroke-width="1.5" stroke-dasharray="5 3"/>')
    out += [f'<path d="M{left} {top}V{bottom}H{width - right}" stroke="#333333" fill="none"/>',
            f'<text x="{(left + width - right) / 2:.0f}" y="{bottom + 30}" text-anchor="middle">GiB</text>']
    for i, term in enumerate(legend):
        lx, ly = left + (i % 3) * 150, bottom + 50 + 16 * (i // 3)
        color = "#c00000" if term == "budget" else COLORS[term]
        out.append(f'<rect x="{lx}" y="{ly - 9}" width="18" height="10" fill="{color}"/>'
                   f'<text x="{lx + 24}" y="{ly}">{xml(term)}</text>')
    return ("\n".join([*out, "</svg>"]) + "\n").encode("utf-8")


def verify_plot(verify_s: Sequence[float], source: str) -> bytes:
    """t_v(n)/t_v(1) against n, with the flat (1.0) and sequential (n) references."""
    ns = list(range(1, len(verify_s) + 1))
    ratio = [t / verify_s[0] for t in verify_s]
    c = Chart(f"verification cost, {source}" if len(source) <= 60 else "verification cost (source: the caption)",
              "n (tokens verified in one forward = K + 1)", "t_v(n) / t_v(1)", 1, ns[-1],
              max(1.5, min(len(ns), max(ratio) * 1.3)), x_ticks=ns)
    c.line(ns, [1.0] * len(ns), "#70ad47", "batch-parallel (1.0)", dash="2 3")
    c.line(ns, ns, "#c00000", "sequential (n)", dash="2 3")
    c.line(ns, ratio, "#1f4e79", "t_v(n)/t_v(1)", markers=True)
    return c.svg()


def speedup_plot(sp: Speed) -> bytes:
    """S(K) at the central alpha, the band between the low and high alpha, break-even at 1.0."""
    mid, lo, hi = speed_series(sp)
    ks = list(range(1, len(mid) + 1))
    acc = sp.acceptance
    c = Chart("predicted speed-up at each K (costs: the overview's costs row)", "K (tokens drafted per round)",
              "speed-up vs plain decoding", 1, max(2, ks[-1]), max(1.2, max(hi) * 1.15), x_ticks=ks)
    c.band(ks, lo, hi, "#5b9bd5", f"acceptance interval alpha {acc.low:.2f}-{acc.high:.2f}")
    c.line([1, max(2, ks[-1])], [1.0, 1.0], "#c00000", "break-even (1.0)", dash="5 3")
    c.line(ks, mid, "#1f4e79", f"alpha {acc.alpha:.2f}", markers=True)
    c.star(sp.k, sp.speedup, "#c55a11", f"K={sp.k}: {sp.speedup:.2f}x")
    return c.svg()


def load_plot(load: Sequence[tuple[int, Sequence[BatchPoint]]]) -> bytes:
    """Speed-up against concurrent sequences (log2 axis), one line per context; hollow = does not fit."""
    colors = ("#1f4e79", "#c55a11", "#70ad47", "#7030a0")
    batches = sorted({p.batch for _, points in load for p in points})
    top = max([1.2, *(p.speedup for _, points in load for p in points)])
    c = Chart("speed-up under load (hollow: does not fit)", "concurrent sequences (batch)",
              "speed-up vs plain decoding", batches[0], max(batches[-1], batches[0] * 2), top * 1.15,
              x_log2=True, x_ticks=batches)
    c.line([batches[0], max(batches[-1], batches[0] * 2)], [1.0, 1.0], "#c00000", "break-even (1.0)", dash="5 3")
    for (context, points), color in zip(load, colors * len(load), strict=False):
        c.line([p.batch for p in points], [p.speedup for p in points], color, f"context {context:,}",
               markers=True, hollow=[not p.fits for p in points])
    return c.svg()


def plots_for(s: Section) -> tuple[Plot, ...]:
    out = []
    a = s.assessment
    if a.devices:
        out.append(Plot("ledger", "Memory ledger", ledger_plot(a)))
    if len(s.verify_s) >= 2:
        out.append(Plot("verify", "Verification cost", verify_plot(s.verify_s, s.verify_source or "")))
    if a.speed is not None:
        out.append(Plot("speedup", "Speed-up vs K", speedup_plot(a.speed)))
    if s.load:
        out.append(Plot("load", "Speed-up under load", load_plot(s.load)))
    return tuple(out)



def fleet_plot(labels: Sequence[str], plain: Sequence[float], best: Sequence[float],
               interval: Sequence[tuple[float, float]], title: str) -> bytes:
    """Targets x predicted tokens/s on one machine, as SVG bytes: plain decoding beside the best plan
    (speculation where it pays, with the acceptance interval as a whisker; equal to plain otherwise).

    Written directly as SVG like every plot here (module docstring); importing matplotlib alone
    cost about 1 s of the 2 s a whole-catalog report may take (issue #20). Same inputs, same bytes.
    """
    n = len(labels)
    width, left, right, top, row_h, bar_h = 820, 250, 30, 56, 22, 8  # px: labels left, bars to the right
    plot_w = width - left - right
    height = top + n * row_h + 44
    ticks = nice_ticks(max([*plain, *best, *(hi for _, hi in interval)], default=1.0))
    scale = plot_w / ticks[-1]

    def x(v: float) -> str:
        return f"{left + v * scale:.1f}"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{width / 2:.0f}" y="16" text-anchor="middle" font-size="12">{xml(title)}</text>',
           f'<rect x="{left}" y="26" width="10" height="10" fill="{COLORS["overhead"]}"/>',
           f'<text x="{left + 14}" y="35">plain decoding</text>',
           f'<rect x="{left + 120}" y="26" width="10" height="10" fill="{COLORS["target weights"]}"/>',
           f'<text x="{left + 134}" y="35">best plan (whisker: acceptance interval)</text>']
    bottom = top + n * row_h
    for t in ticks:
        out.append(f'<line x1="{x(t)}" y1="{top - 4}" x2="{x(t)}" y2="{bottom}" stroke="#dddddd"/>'
                   f'<text x="{x(t)}" y="{bottom + 14}" text-anchor="middle">{t:g}</text>')
    for i, (label, p, b, (lo, hi)) in enumerate(zip(labels, plain, best, interval, strict=True)):
        y = top + i * row_h + 2
        mid = y + bar_h + bar_h / 2
        out.append(f'<text x="{left - 6}" y="{y + bar_h + 4}" text-anchor="end">{xml(label)}</text>')
        out.append(f'<rect class="plain" x="{left}" y="{y}" width="{p * scale:.1f}" height="{bar_h}" '
                   f'fill="{COLORS["overhead"]}"><title>{xml(label)}: plain {p:.1f} tok/s</title></rect>')
        out.append(f'<rect class="best" x="{left}" y="{y + bar_h}" width="{b * scale:.1f}" height="{bar_h}" '
                   f'fill="{COLORS["target weights"]}"><title>{xml(label)}: best {b:.1f} tok/s '
                   f'({lo:.1f}-{hi:.1f})</title></rect>')
        if hi > lo:
            out.append(f'<path d="M{x(lo)} {mid:.1f}H{x(hi)}M{x(lo)} {mid - 3:.1f}V{mid + 3:.1f}'
                       f'M{x(hi)} {mid - 3:.1f}V{mid + 3:.1f}" stroke="#c55a11" fill="none"/>')
    out += [f'<line x1="{left}" y1="{bottom}" x2="{left + plot_w}" y2="{bottom}" stroke="#333333"/>',
            f'<line x1="{left}" y1="{top - 4}" x2="{left}" y2="{bottom}" stroke="#333333"/>',
            f'<text x="{left + plot_w / 2:.0f}" y="{bottom + 32}" text-anchor="middle">predicted tokens/s per '
            f'sequence</text>', "</svg>"]
    return ("\n".join(out) + "\n").encode("utf-8")

