"""A small SVG chart: axes, lines, bands, bars and a legend, written as text.

Why by hand and not through matplotlib: every report plot is a few lines or bars, which need
nothing more; a plain install then draws every report (no optional extra, issue #31), the text
stays text (searchable, sharp at any zoom), and the same inputs give the same bytes (no ids, no
dates, no hash salt). The legend sits below the plot area, never over the data (a break-even line
stays visible), and the title is wrapped at a fixed font size instead of shrinking the figure.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

FONT_PX = 11  # every label, tick and legend entry: the figure never shrinks its text
TITLE_CHARS = 96  # a title line wraps past this many characters (about the plot's width at FONT_PX)


def nice_ticks(top: float) -> list[float]:
    """0, step, 2 step, ... covering `top`, with step 1, 2 or 5 x 10^n and at most 6 ticks."""
    raw = max(top, 1e-9) / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def xml(text: str) -> str:
    """Text escaped for an SVG text node or attribute."""
    return html.escape(text, quote=True)


def wrap(text: str, width: int = TITLE_CHARS) -> list[str]:
    """Words packed into lines of at most `width` characters (a longer word keeps its own line)."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


@dataclass
class Chart:
    """One plot area with linear y from 0 to `y_top`, and linear or log2 x over [x_lo, x_hi].

    Shapes are collected with the methods below and written by `svg()`; legend entries are kept in
    the order they were added.
    """

    title: str
    x_label: str
    y_label: str
    x_lo: float
    x_hi: float
    y_top: float
    x_log2: bool = False
    width: int = 600
    plot_h: int = 240
    left: int = 60
    right: int = 20
    x_ticks: Sequence[float] | None = None
    y_ticks: Sequence[float] | None = None
    _shapes: list[str] = field(default_factory=list)
    _legend: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, colour, label)

    @property
    def top(self) -> int:
        return 14 + 15 * len(wrap(self.title))

    def x(self, v: float) -> float:
        lo, hi, v = ((math.log2(self.x_lo), math.log2(self.x_hi), math.log2(v)) if self.x_log2
                     else (self.x_lo, self.x_hi, v))
        span = (hi - lo) or 1.0
        return self.left + (v - lo) / span * (self.width - self.left - self.right)

    def y(self, v: float) -> float:
        return self.top + self.plot_h * (1 - min(max(v, 0.0), self.y_top) / self.y_top)

    def line(self, xs: Sequence[float], ys: Sequence[float], color: str, label: str | None = None, *,
             dash: str | None = None, markers: bool = False, hollow: Sequence[bool] = ()) -> None:
        """A polyline (dashed with `dash`), with a circle at each point when `markers`; hollow[i] draws point i open."""
        pts = " ".join(f"L{self.x(a):.1f} {self.y(b):.1f}" for a, b in zip(xs, ys, strict=True))
        style = f' stroke-dasharray="{dash}"' if dash else ""
        self._shapes.append(f'<path d="M{pts[1:]}" stroke="{color}" stroke-width="1.6" fill="none"{style}/>')
        if markers:
            for i, (a, b) in enumerate(zip(xs, ys, strict=True)):
                fill = "#ffffff" if i < len(hollow) and hollow[i] else color
                self._shapes.append(f'<circle cx="{self.x(a):.1f}" cy="{self.y(b):.1f}" r="3" fill="{fill}" '
                                    f'stroke="{color}"/>')
        if label:
            self._legend.append(("dash" if dash else "line", color, label))

    def band(self, xs: Sequence[float], lo: Sequence[float], hi: Sequence[float], color: str, label: str) -> None:
        """The area between two curves, translucent."""
        up = [f"{self.x(a):.1f} {self.y(b):.1f}" for a, b in zip(xs, hi, strict=True)]
        down = [f"{self.x(a):.1f} {self.y(b):.1f}" for a, b in zip(reversed(xs), reversed(lo), strict=True)]
        self._shapes.append(f'<path d="M{" L".join(up + down)} Z" fill="{color}" fill-opacity="0.25" stroke="none"/>')
        self._legend.append(("box", color, label))

    def star(self, xv: float, yv: float, color: str, label: str) -> None:
        """One highlighted point (the chosen K)."""
        cx, cy, pts = self.x(xv), self.y(yv), []
        for i in range(10):
            r, ang = (7.0 if i % 2 == 0 else 3.0), math.pi / 2 + i * math.pi / 5
            pts.append(f"{cx + r * math.cos(ang):.1f} {cy - r * math.sin(ang):.1f}")
        self._shapes.append(f'<path class="star" d="M{" L".join(pts)} Z" fill="{color}"/>')
        self._legend.append(("box", color, label))

    def svg(self) -> bytes:
        """The chart as SVG bytes: title, grid and ticks, shapes, axes, labels, legend below."""
        bottom = self.top + self.plot_h
        legend_rows = math.ceil(len(self._legend) / 2)
        height = bottom + 40 + 16 * legend_rows
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{height}" '
               f'viewBox="0 0 {self.width} {height}" font-family="sans-serif" font-size="{FONT_PX}">',
               f'<rect width="{self.width}" height="{height}" fill="#ffffff"/>']
        for i, ln in enumerate(wrap(self.title)):
            out.append(f'<text x="{self.width / 2:.0f}" y="{16 + 15 * i}" text-anchor="middle">{xml(ln)}</text>')
        out += self._grid(bottom)
        out += self._shapes
        x0, x1 = self.left, self.width - self.right
        out += [f'<path d="M{x0} {self.top}V{bottom}H{x1}" stroke="#333333" fill="none"/>',
                f'<text x="{(x0 + x1) / 2:.0f}" y="{bottom + 30}" text-anchor="middle">{xml(self.x_label)}</text>',
                f'<text x="14" y="{self.top + self.plot_h / 2:.0f}" text-anchor="middle" '
                f'transform="rotate(-90 14 {self.top + self.plot_h / 2:.0f})">{xml(self.y_label)}</text>']
        out += self._legend_svg(bottom + 44)
        return ("\n".join([*out, "</svg>"]) + "\n").encode("utf-8")

    def _grid(self, bottom: int) -> list[str]:
        out = []
        for t in self.y_ticks if self.y_ticks is not None else nice_ticks(self.y_top):
            if t <= self.y_top + 1e-9:
                out.append(f'<path d="M{self.left} {self.y(t):.1f}H{self.width - self.right}" stroke="#e5e5e5"/>'
                           f'<text x="{self.left - 5}" y="{self.y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
        for t in self.x_ticks or ():
            out.append(f'<text x="{self.x(t):.1f}" y="{bottom + 14}" text-anchor="middle">{t:g}</text>')
        return out

    def _legend_svg(self, y0: int) -> list[str]:
        out, col_w = [], (self.width - self.left - self.right) / 2
        for i, (kind, color, label) in enumerate(self._legend):
            lx, ly = self.left + (i % 2) * col_w, y0 + 16 * (i // 2)
            if kind == "box":
                out.append(f'<rect x="{lx:.0f}" y="{ly - 9}" width="18" height="10" fill="{color}"/>')
            else:
                dash = ' stroke-dasharray="5 3"' if kind == "dash" else ""
                out.append(f'<path d="M{lx:.0f} {ly - 4}h18" stroke="{color}" stroke-width="1.6"{dash}/>')
            out.append(f'<text x="{lx + 24:.0f}" y="{ly}">{xml(label)}</text>')
        return out
