"""The report's plots: memory ledger per device, verify curve, speed-up against K, as SVG bytes.

Why the only module that imports matplotlib (the optional `report` extra): everything else in
the report is tables, so `planner report --no-plots` and `planner check` run without it.
matplotlib is imported only when drawing, through `matplotlib.figure.Figure` (no pyplot, no
global backend). SVG is written with a fixed hash salt and no date, so the same inputs give the
same bytes; the plots draw the rows render/blocks.py tabulates.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from ..core.errors import UsageError
from ..plan.assess import Assessment, Speed
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


def plots_for(s: Section) -> tuple[Plot, ...]:
    out = []
    a = s.assessment
    if a.devices:
        out.append(Plot("ledger", "Memory ledger", ledger_plot(a)))
    if len(s.verify_s) >= 2:
        out.append(Plot("verify", "Verification cost", verify_plot(s.verify_s, s.verify_source or "")))
    if a.speed is not None:
        out.append(Plot("speedup", "Speed-up vs K", speedup_plot(a.speed)))
    return tuple(out)


def fleet_plot(labels: Sequence[str], plain: Sequence[float], best: Sequence[float],
               interval: Sequence[tuple[float, float]], title: str) -> bytes:
    """Targets x predicted tokens/s on one machine: plain decoding beside the best plan (speculation,
    with the acceptance interval as an error bar; equal to plain where plain decoding wins)."""
    _, Figure = require_matplotlib()
    n = len(labels)
    fig = Figure(figsize=(8, 1.4 + 0.32 * n))
    ax = fig.add_subplot()
    ys = list(range(n))
    h = 0.4
    ax.barh([y - h / 2 for y in ys], plain, height=h, color="#7f7f7f", label="plain decoding")
    err = [[b - lo for b, (lo, _) in zip(best, interval, strict=True)],
           [hi - b for b, (_, hi) in zip(best, interval, strict=True)]]
    ax.barh([y + h / 2 for y in ys], best, height=h, color="#1f4e79", xerr=err, ecolor="#c55a11", capsize=2,
            label="best plan (speculation where it pays; bar: acceptance interval)")
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_ylim(n - 0.5, -0.5)  # first row on top
    ax.set_xlabel("predicted tokens/s per sequence")
    ax.set_title(title, fontsize=9)
    ax.legend(loc="upper right", fontsize=8, framealpha=0.9)  # rows run large (slow) to small: top right is clear
    return _svg(fig)
