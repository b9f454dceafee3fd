"""The report's plots: memory ledger per device, verify curve, speed-up against K, as SVG bytes;
and the machine-first report's tokens/s bars per machine.

Why the only module that imports matplotlib (the optional `report` extra): everything else in
the report is tables, so `planner report --no-plots` and `planner check` run without it.
matplotlib is imported only when drawing, through `matplotlib.figure.Figure` (no pyplot, no
global backend). SVG is written with a fixed hash salt and no date, so the same inputs give the
same bytes; the plots draw the rows render/blocks.py tabulates. The machine-first bar chart
(`fleet_plot`) is written as SVG by hand: it needs no matplotlib (see its docstring).
"""

from __future__ import annotations

import html
import io
import math
from collections.abc import Sequence
from typing import Any

from ..core.errors import UsageError
from ..plan.assess import Assessment, Speed
from ..plan.load import BatchPoint
from .blocks import ledger_rows, speed_series
from .document import Plot, Section

COLORS = {"target weights": "#1f4e79", "draft weights": "#5b9bd5", "target KV cache": "#c55a11",
          "draft KV cache": "#f4b183", "activations": "#70ad47", "overhead": "#7f7f7f", "headroom": "#e2efda"}
SVG_SALT = "spec-planner"


def require_matplotlib() -> Any:
    """(matplotlib, Figure), imported here only.

    Raises:
        UsageError: matplotlib is not installed (names the extra and --no-plots).
    """
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError as e:
        raise UsageError("Cannot draw the report's plots: matplotlib is not installed (expected the 'report' "
                         "extra). Install it with pip install 'spec-planner[report]', or pass --no-plots.") from e
    return matplotlib, Figure


def _svg(fig: Any) -> bytes:
    matplotlib, _ = require_matplotlib()
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": SVG_SALT, "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buf.getvalue()


def ledger_plot(a: Assessment) -> bytes:
    """Horizontal stacked bar per device (GiB), with the budget as a dashed line."""
    _, Figure = require_matplotlib()
    rows = ledger_rows(a)
    parts = [(t, v) for t, v in rows if t not in ("used", "budget", "headroom")]
    budgets = dict(rows)["budget"]
    n = len(a.devices)
    fig = Figure(figsize=(7.5, 1.6 + 0.55 * n))
    ax = fig.add_subplot()
    labels = [f"{d.budget.index}: {d.budget.name}" for d in a.devices]
    left = [0.0] * n
    for term, values in parts:
        gib = [v / 2**30 for v in values]
        ax.barh(labels, gib, left=left, color=COLORS[term], label=term, edgecolor="white", linewidth=0.5)
        left = [x + y for x, y in zip(left, gib, strict=True)]
    for i, b in enumerate(budgets):
        ax.plot([b / 2**30] * 2, [i - 0.45, i + 0.45], color="#c00000", linestyle="--", linewidth=1.5,
                label="budget" if i == 0 else None)
    ax.set_xlabel("GiB")
    ax.invert_yaxis()
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35 if n == 1 else -0.2), ncol=4, fontsize=8,
              frameon=False)
    ax.set_title(f"{a.scenario.settings.engine}, context {a.scenario.settings.context:,} x {a.scenario.settings.batch}",
                 fontsize=9)
    return _svg(fig)


def verify_plot(verify_s: Sequence[float], source: str) -> bytes:
    """t_v(n)/t_v(1) against n, with the flat (1.0) and sequential (n) references."""
    _, Figure = require_matplotlib()
    fig = Figure(figsize=(6, 3.4))
    ax = fig.add_subplot()
    ns = list(range(1, len(verify_s) + 1))
    ax.plot(ns, [t / verify_s[0] for t in verify_s], marker="o", color="#1f4e79", label="t_v(n)/t_v(1)")
    ax.plot(ns, [1.0] * len(ns), color="#70ad47", linestyle=":", label="batch-parallel (1.0)")
    ax.plot(ns, ns, color="#c00000", linestyle=":", label="sequential (n)")
    ax.set_xlabel("n (tokens verified in one forward = K + 1)")
    ax.set_ylabel("t_v(n) / t_v(1)")
    ax.set_title(source, fontsize=8)
    ax.set_ylim(0, max(1.5, min(len(ns), max(t / verify_s[0] for t in verify_s) * 1.3)))
    ax.legend(fontsize=8, frameon=False)
    return _svg(fig)


def speedup_plot(sp: Speed) -> bytes:
    """S(K) at the central alpha, the band between the low and high alpha, break-even at 1.0."""
    _, Figure = require_matplotlib()
    mid, lo, hi = speed_series(sp)
    ks = list(range(1, len(mid) + 1))
    fig = Figure(figsize=(6, 3.4))
    ax = fig.add_subplot()
    acc = sp.acceptance
    ax.fill_between(ks, lo, hi, color="#5b9bd5", alpha=0.25,
                    label=f"acceptance interval alpha {acc.low:.2f}-{acc.high:.2f}")
    ax.plot(ks, mid, marker="o", color="#1f4e79", label=f"alpha {acc.alpha:.2f}")
    ax.axhline(1.0, color="#c00000", linestyle="--", linewidth=1.2, label="break-even (1.0)")
    ax.plot([sp.k], [sp.speedup], marker="*", markersize=14, color="#c55a11", linestyle="none",
            label=f"K={sp.k}: {sp.speedup:.2f}x")
    ax.set_xlabel("K (tokens drafted per round)")
    ax.set_ylabel("speed-up vs plain decoding")
    ax.set_xticks(ks)
    ax.set_ylim(0, max(1.2, max(hi) * 1.15))
    ax.set_title(sp.costs.source, fontsize=8)
    ax.legend(fontsize=8, frameon=False, loc="lower right")
    return _svg(fig)


def load_plot(load: Sequence[tuple[int, Sequence[BatchPoint]]]) -> bytes:
    """Speed-up against concurrent sequences (log2 axis), one line per context; hollow = does not fit."""
    _, Figure = require_matplotlib()
    fig = Figure(figsize=(6, 3.4))
    ax = fig.add_subplot()
    colors = ("#1f4e79", "#c55a11", "#70ad47", "#7030a0")
    top = 1.2
    for (context, points), color in zip(load, colors * len(load), strict=False):
        bs = [p.batch for p in points]
        ss = [p.speedup for p in points]
        top = max(top, *ss)
        ax.plot(bs, ss, marker="o", color=color, label=f"context {context:,}")
        gone = [(p.batch, p.speedup) for p in points if not p.fits]
        if gone:
            ax.plot(*zip(*gone, strict=True), marker="o", markerfacecolor="white", color=color, linestyle="none")
    ax.axhline(1.0, color="#c00000", linestyle="--", linewidth=1.2, label="break-even (1.0)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrent sequences (batch)")
    ax.set_ylabel("speed-up vs plain decoding")
    ax.set_ylim(0, top * 1.15)
    ax.legend(fontsize=8, frameon=False)
    return _svg(fig)


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



def _nice_ticks(top: float) -> list[float]:
    """0, step, 2 step, ... covering `top`, with step 1, 2 or 5 x 10^n and at most 6 ticks."""
    raw = max(top, 1e-9) / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def fleet_plot(labels: Sequence[str], plain: Sequence[float], best: Sequence[float],
               interval: Sequence[tuple[float, float]], title: str) -> bytes:
    """Targets x predicted tokens/s on one machine, as SVG bytes: plain decoding beside the best plan
    (speculation where it pays, with the acceptance interval as a whisker; equal to plain otherwise).

    Written directly as SVG, not through matplotlib: a bar chart needs nothing more, the text stays
    text (searchable, sharp at any zoom), and importing matplotlib alone costs about 1 s of the 2 s a
    whole-catalog report may take (issue #20). Same inputs, same bytes.
    """
    n = len(labels)
    width, left, right, top, row_h, bar_h = 820, 250, 30, 56, 22, 8  # px: labels left, bars to the right
    plot_w = width - left - right
    height = top + n * row_h + 44
    ticks = _nice_ticks(max([*plain, *best, *(hi for _, hi in interval)], default=1.0))
    scale = plot_w / ticks[-1]

    def x(v: float) -> str:
        return f"{left + v * scale:.1f}"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{width / 2:.0f}" y="16" text-anchor="middle" font-size="12">{_xml(title)}</text>',
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
        out.append(f'<text x="{left - 6}" y="{y + bar_h + 4}" text-anchor="end">{_xml(label)}</text>')
        out.append(f'<rect class="plain" x="{left}" y="{y}" width="{p * scale:.1f}" height="{bar_h}" '
                   f'fill="{COLORS["overhead"]}"><title>{_xml(label)}: plain {p:.1f} tok/s</title></rect>')
        out.append(f'<rect class="best" x="{left}" y="{y + bar_h}" width="{b * scale:.1f}" height="{bar_h}" '
                   f'fill="{COLORS["target weights"]}"><title>{_xml(label)}: best {b:.1f} tok/s '
                   f'({lo:.1f}-{hi:.1f})</title></rect>')
        if hi > lo:
            out.append(f'<path d="M{x(lo)} {mid:.1f}H{x(hi)}M{x(lo)} {mid - 3:.1f}V{mid + 3:.1f}'
                       f'M{x(hi)} {mid - 3:.1f}V{mid + 3:.1f}" stroke="#c55a11" fill="none"/>')
    out += [f'<line x1="{left}" y1="{bottom}" x2="{left + plot_w}" y2="{bottom}" stroke="#333333"/>',
            f'<line x1="{left}" y1="{top - 4}" x2="{left}" y2="{bottom}" stroke="#333333"/>',
            f'<text x="{left + plot_w / 2:.0f}" y="{bottom + 32}" text-anchor="middle">predicted tokens/s per '
            f'sequence</text>', "</svg>"]
    return ("\n".join(out) + "\n").encode("utf-8")


def _xml(text: str) -> str:
    return html.escape(text, quote=True)
