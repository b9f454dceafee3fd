"""The report's plots are SVG written by hand (render/svg.py): no matplotlib, and what they draw is the data.

Issue #31: `planner report TARGET --out r.html` exited 2 in a plain install ("matplotlib is not installed").
These tests run in a plain install and read the drawn geometry back: bar widths proportional to the
ledger's bytes, the chosen K's star at S(K), the break-even line at 1.0 and the legend below the plot.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from planner.plan.assess import assess
from planner.plan.policy import Deployment
from planner.plan.scenario import machines_for, scenarios
from planner.render import plots
from planner.render.blocks import ledger_rows, speed_series
from planner.render.svg import Chart, wrap

NS = "{http://www.w3.org/2000/svg}"
TARGET, DRAFT = "llama-3.1-8b-instruct", "llama-3.2-1b-instruct"


@pytest.fixture(scope="module")
def assessment():
    d = Deployment(name="x", target=TARGET, draft=DRAFT, machines=("2x-rtx-4090",), context=4096, engine="vllm")
    (sc,) = scenarios(d, machines_for(d))
    return assess(sc)


def test_ledger_bars_are_the_ledgers_bytes(assessment):
    root = ET.fromstring(plots.ledger_plot(assessment))
    rows = dict(ledger_rows(assessment))
    bars = [r for r in root.iter(f"{NS}rect") if r.get("class") == "term"]
    n_dev = len(assessment.devices)
    assert n_dev == 2 and len(bars) == n_dev * len([t for t in rows if t not in ("used", "budget", "headroom")])
    for bar in bars:
        dev = round((float(bar.get("y")) - 36) / 34)
        assert int(bar.get("data-bytes")) == rows[bar.get("data-term")][dev]
    # one scale for every bar: width / bytes is the same constant wherever bytes > 0
    big = max(bars, key=lambda b: int(b.get("data-bytes")))
    px_per_byte = float(big.get("width")) / int(big.get("data-bytes"))
    for b in bars:  # widths are written to 0.01 px
        assert float(b.get("width")) == pytest.approx(int(b.get("data-bytes")) * px_per_byte, abs=0.006)
    budgets = [int(p.get("data-bytes")) for p in root.iter(f"{NS}path") if p.get("class") == "budget"]
    assert budgets == rows["budget"]


def test_speedup_plot_marks_the_chosen_k_and_break_even(assessment):
    sp = assessment.speed
    c_mid, _, c_hi = speed_series(sp)
    root = ET.fromstring(plots.speedup_plot(sp))
    ks = list(range(1, len(c_mid) + 1))
    # the same chart geometry, built independently: where S(K*) and 1.0 must land
    ref = Chart("predicted speed-up at each K (costs: the overview's costs row)", "", "", 1, max(2, ks[-1]),
                max(1.2, max(c_hi) * 1.15))
    star = next(p for p in root.iter(f"{NS}path") if p.get("class") == "star")
    tip = star.get("d").split(" L")[0][1:].split()  # first vertex: straight above the centre, 7 px
    assert float(tip[0]) == pytest.approx(ref.x(sp.k), abs=0.06)
    assert float(tip[1]) == pytest.approx(ref.y(sp.speedup) - 7, abs=0.06)
    even = f"M{ref.x(1):.1f} {ref.y(1.0):.1f} L{ref.x(max(2, ks[-1])):.1f} {ref.y(1.0):.1f}"
    assert any(p.get("d") == even for p in root.iter(f"{NS}path"))
    # the legend is below the plot area: every legend label sits under the x axis
    labels = {t.text: float(t.get("y")) for t in root.iter(f"{NS}text")}
    assert labels["break-even (1.0)"] > ref.top + ref.plot_h + 30


def test_title_wraps_at_a_fixed_font_size():
    long = "roofline (rtx-4090); verify kernels: measured curves; speculation overhead 0.859 ms per round " * 3
    lines = wrap(long)
    assert len(lines) > 1 and all(len(ln) <= 96 for ln in lines) and " ".join(lines) == " ".join(long.split())
    root = ET.fromstring(Chart(long, "x", "y", 1, 4, 2).svg())
    assert root.get("font-size") == "11" and not any(t.get("font-size") for t in root.iter(f"{NS}text"))


def test_plain_install_report_draws_plots_without_matplotlib(tmp_path):
    """The user's command, in a Python where importing matplotlib fails: the report and its plots are written."""
    out = tmp_path / "r.html"
    code = ("import sys\nsys.modules['matplotlib'] = None\nfrom planner.cli import main\n"
            f"main(['report', '{TARGET}', '--draft', '{DRAFT}', '--machine', 'rtx-4090', '--out', {str(out)!r}])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.read_text().count('src="data:image/svg+xml;base64,') == 4
