"""The fit report per machine: one self-contained HTML file, or Markdown with the plots beside it.

Why a small document model: HTML and Markdown must hold the same tables, so each section is
built once as blocks (heading, paragraph, list, table, figure, preformatted) and rendered
twice. Cells keep their exact integers (bytes) beside the text people read, so the HTML can
be checked by a parser (`data-bytes`) and nothing is lost to rounding.

Per machine (DESIGN.md): the memory ledger per device as a stacked bar against the budget,
the pair verdicts per engine, the verify curve t_v(n)/t_v(1) (measured by a profile or the
machine's roofline, labelled), the speed-up against K with the break-even line (1.0) and the
band of the acceptance interval, then the recommendation and its launch commands.

Plots use matplotlib (the optional `report` extra), imported only when drawing, through
`matplotlib.figure.Figure` (no pyplot, no global backend). SVG is written with a fixed hash
salt and no date, so the same inputs give the same bytes; HTML embeds it as base64 data URIs
(no network assets, no id clashes between plots).
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.errors import ConfigError, MachineError, UsageError
from ..core.fmt import fmt_bytes
from ..drafting import DraftModel
from ..fits import fit
from ..plan import check
from ..plan import recommend as plan
from ..speed import model as speed
from ..speed import roofline
from .text import format_value

COLORS = {"target weights": "#1f4e79", "draft weights": "#5b9bd5", "target KV cache": "#c55a11",
          "draft KV cache": "#f4b183", "activations": "#70ad47", "overhead": "#7f7f7f", "headroom": "#e2efda"}
SVG_SALT = "spec-planner"


# --- the document model --------------------------------------------------------------------

@dataclass(frozen=True)
class Cell:
    text: str
    exact: int | None = None  # bytes, shown beside the text and kept in data-bytes


@dataclass(frozen=True)
class Block:
    kind: str  # h3 | p | list | table | figure | pre
    text: str = ""
    items: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[Cell, ...], ...] = ()
    figure: str = ""  # figure name (key into the section's figures)


@dataclass(frozen=True)
class Plot:
    name: str  # ledger | verify | speedup
    title: str
    svg: bytes


@dataclass(frozen=True)
class Section:
    """One deployment on one machine, ready to render."""

    anchor: str
    title: str
    assessment: check.Assessment  # the draft shown: given, else the recommended one
    draft_origin: str  # given | recommended | best candidate, not recommended | none
    fit: fit.FitResult | None
    recommendation: plan.Recommendation | None
    recommendation_error: str | None
    verify_s: tuple[float, ...]
    verify_source: str | None
    results: tuple[check.Result, ...] = ()
    blocks: tuple[Block, ...] = ()
    plots: tuple[Plot, ...] = field(default=())


# --- gathering the facts ------------------------------------------------------------------------

def _launch_ref(sc: check.Scenario) -> str:
    from pathlib import Path

    return sc.target_ref if Path(sc.target_ref).expanduser().exists() else sc.target.id


def recommend_for(sc: check.Scenario) -> tuple[plan.Recommendation | None, str | None]:
    """plan.recommend over the scenario's draft (else the catalog's candidates), with its costs."""
    d = sc.deployment
    try:
        cost_fn, k_top = check.costs_for(sc)
        cands = [sc.method] if sc.method else None
        measured = check.measured_acceptance(sc.profile, sc.method) if sc.method else None
        rec = plan.recommend(sc.target, _launch_ref(sc), sc.machine, engine=sc.settings.engine,
                             context=sc.settings.context, batch=sc.settings.batch, layout=sc.layout,
                             candidates=cands, costs_for=cost_fn, given_acceptance=sc.given_acceptance,
                             measured_acceptance={sc.method.label: measured} if measured else None, k_max=k_top,
                             kv_dtypes=[d.kv_dtype] if d.kv_dtype else None, utilization=d.utilization,
                             temperature=d.temperature)
    except (MachineError, UsageError) as e:
        return None, str(e)
    return rec, None


def _with_draft(sc: check.Scenario, ref: str) -> check.Scenario:
    from ..sources import load_spec

    d = replace(sc.deployment, draft=ref)
    spec = load_spec(ref)
    k_rows = d.k or d.max_k
    return replace(sc, deployment=d, method=DraftModel(spec, ref), settings=replace(sc.settings, spec_tokens=k_rows))


def target_curve(sc: check.Scenario, a: check.Assessment) -> tuple[tuple[float, ...], str | None]:
    """t_v(1..K+1): the assessment's costs, else the profile's target, else the roofline; () if none."""
    if a.speed is not None:
        return tuple(a.speed.costs.verify_s), a.speed.costs.source
    d, m = sc.deployment, sc.machine
    if sc.profile is not None:
        return tuple(sc.profile.target.verify_s), "profile (measured)"
    if m.bandwidth_bytes_per_s:
        roof = plan.roofline_machine(m, sc.layout)
        return (roofline.verify_curve(sc.target, roof, context=sc.settings.context, n_max=(d.k or d.max_k) + 1,
                                      settings=sc.settings), f"roofline ({roof.name})")
    return (), None


def build_section(sc: check.Scenario, index: int, *, judge: bool = True) -> Section:
    """Assess the scenario as check does, recommend, and (no draft given) show the recommended draft.

    `judge`: list the policy's requirement results (a policy report; not for command-line reports).

    Raises:
        PlannerError: a model or profile that cannot be read.
    """
    original = check.assess(sc, need_speed=True)
    try:
        results = tuple(check.judge(original)) if judge else ()
    except ConfigError as e:  # min_speedup cannot be predicted: the report still renders, saying why
        results = (*_judge_without_speed(original),
                   check.Result(sc.deployment.name, sc.label, check.MIN_SPEEDUP, check.SKIP, None,
                                sc.deployment.require.min_speedup, str(e)))
    rec, rec_error = recommend_for(sc)
    shown, origin = original, "given" if sc.method is not None else "none"
    if sc.method is None and rec is not None:
        # the recommended draft; when plain decoding wins, the best candidate that fits and pairs (to show why)
        pick, origin_if = rec.choice, "recommended"
        if not pick.draft:
            pick = next((o for o in rec.plans if o.usable), None)
            origin_if = "best candidate, not recommended"
        if pick is not None and pick.draft_ref:
            shown, origin = check.assess(_with_draft(sc, pick.draft_ref), need_speed=True), origin_if
    fr = None
    if shown.layout_error is None:
        s = shown.scenario
        fr = fit.fit(fit.Problem(s.target, s.machine, s.settings, s.layout, draft=s.draft,
                                 utilization=s.deployment.utilization))
    verify, vsrc = target_curve(shown.scenario, shown)
    title = f"{sc.deployment.name} on {sc.label}"
    return Section(anchor=f"s{index}", title=title, assessment=shown, draft_origin=origin, fit=fr,
                   recommendation=rec, recommendation_error=rec_error, verify_s=verify, verify_source=vsrc,
                   results=results)


def _judge_without_speed(a: check.Assessment) -> list[check.Result]:
    d = a.scenario.deployment
    no_speed = replace(a.scenario, deployment=replace(d, require=replace(d.require, min_speedup=None)))
    return check.judge(replace(a, scenario=no_speed))


# --- blocks (shared by HTML and Markdown) ----------------------------------------------------------

def _b(n: int | None) -> Cell:
    return Cell(fmt_bytes(n), n) if n is not None else Cell("-")


def overview_blocks(s: Section) -> list[Block]:
    a = s.assessment
    sc = a.scenario
    m = sc.machine
    draft = "-" if sc.method is None else f"{sc.method.label} ({s.draft_origin})"
    rows = [("target", sc.target.id), ("draft", draft), ("machine", f"{m.display_name} ({sc.label}, {m.origin}, "
                                                                     f"{m.n_devices} device(s))"),
            ("engine", sc.settings.engine), ("context x batch", f"{sc.settings.context:,} x {sc.settings.batch}"),
            ("layout", f"tp {sc.layout.tp} x pp {sc.layout.pp}"),
            ("KV dtype", sc.settings.kv_dtype or "engine default"),
            ("weights dtype", sc.settings.weights_dtype or "as stored"),
            ("costs", s.verify_source or "none (no bandwidth figure, no profile)")]
    if a.speed is not None:
        acc = a.speed.acceptance
        rows.append(("acceptance", f"alpha {acc.alpha:.3f} [{acc.low:.3f}, {acc.high:.3f}]: {acc.given}; "
                                   f"{acc.source}"))
    out = [Block("table", headers=("", ""), rows=tuple((Cell(k), Cell(v)) for k, v in rows))]
    items = []
    if a.layout_error:
        items.append(f"does not fit: {a.layout_error}")
    else:
        word = "FITS" if a.fits else "DOES NOT FIT"
        items.append(f"memory: {word}, headroom {fmt_bytes(a.headroom_bytes)} on the tightest device, "
                     f"{fmt_bytes(a.total_bytes)} used in all")
        if s.fit is not None:
            lim = " (the model's own maximum)" if s.fit.max_context_limit == "model" else ""
            items.append(f"largest context at batch {sc.settings.batch}: {s.fit.max_context:,} tokens{lim}; "
                         f"largest batch at {sc.settings.context:,} tokens: {s.fit.max_batch:,}")
    if a.verdict is not None:
        v = a.verdict
        state = "plain algorithm runs" if v.compatible else (
            f"refused ({v.failed_rule}); fallback: {a.fallback}" if a.fallback else f"refused ({v.failed_rule})")
        items.append(f"pairing ({sc.settings.engine}): {state}")
    if a.speed is not None:
        sp = a.speed
        items.append(f"speed-up: {sp.speedup:.2f}x at K={sp.k} (interval {sp.speedup_low:.2f}-{sp.speedup_high:.2f}x), "
                     f"{sp.prediction.verdict}")
    elif a.speed_error:
        items.append(f"speed-up: not predicted ({a.speed_error})")
    out += [Block("h3", "Verdict"), Block("list", items=tuple(items))]
    if s.results:
        out.append(Block("h3", "Requirements"))
        rows2 = tuple((Cell(r.requirement), Cell(r.status.upper()), Cell(_value(r.requirement, r.value)),
                       Cell(_value(r.requirement, r.bound)), Cell(r.message)) for r in s.results)
        out.append(Block("table", headers=("requirement", "result", "value", "required", "detail"), rows=rows2))
    return out


def _value(requirement: str, value: Any) -> str:
    return format_value(requirement, value)


def ledger_rows(a: check.Assessment) -> list[tuple[str, list[int]]]:
    """(term, bytes per device) rows of the ledger, in stacking order, then used, budget, headroom."""
    devs = a.devices

    def part(role: str, attr: str) -> list[int]:
        return [sum(getattr(x, attr) for x in d.shares if x.role == role) for d in devs]

    rows = [("target weights", part("target", "weights_bytes")), ("draft weights", part("draft", "weights_bytes")),
            ("target KV cache", part("target", "kv_cache_bytes")), ("draft KV cache", part("draft", "kv_cache_bytes")),
            ("activations", [sum(x.activation_bytes for x in d.shares) for d in devs]),
            ("overhead", [d.overhead_bytes + d.comm_bytes for d in devs])]
    if a.scenario.method is None:
        rows = [r for r in rows if not r[0].startswith("draft")]
    return [*rows, ("used", [d.used_bytes for d in devs]), ("budget", [d.budget.budget_bytes for d in devs]),
            ("headroom", [d.headroom_bytes for d in devs])]


def ledger_blocks(s: Section) -> list[Block]:
    a = s.assessment
    out = [Block("h3", "Memory ledger")]
    if a.layout_error:
        return [*out, Block("p", a.layout_error)]
    if any(p.name == "ledger" for p in s.plots):
        out.append(Block("figure", text="Memory per device: stacked terms against the engine's budget",
                         figure="ledger"))
    headers = ("term", *[f"device {d.budget.index}: {d.budget.name}" for d in a.devices])
    rows = tuple((Cell(term), *[_b(n) for n in values]) for term, values in ledger_rows(a))
    out.append(Block("table", headers=headers, rows=rows))
    budgets = "; ".join(sorted({d.budget.source for d in a.devices}))
    out.append(Block("p", f"Budget: {budgets}. Host RAM (not counted above): "
                          f"{fmt_bytes(sum(d.host_bytes for d in a.devices))}."))
    return out


def pairing_blocks(s: Section) -> list[Block]:
    a = s.assessment
    out = [Block("h3", "Pair verdicts")]
    if a.pair is None:
        return [*out, Block("p", "No draft: nothing to pair (plain decoding).")]
    r = a.pair
    rows = []
    for e, v in r.verdicts.items():
        if v is not None:
            rows.append((Cell(e), Cell("yes" if v.compatible else "no"), Cell(v.failed_rule or "-"),
                         Cell(v.fallback or "-"), Cell(v.confidence), Cell(v.detail)))
    out.append(Block("table", headers=("engine", "plain algorithm", "failed rule", "fallback", "confidence", "detail"),
                     rows=tuple(rows)))
    facts = [f"same tokenizer: {r.same_tokenizer}", f"family match: {r.family_match}", f"basis: {r.basis}"]
    if r.overlap is not None:
        facts.append(f"vocabulary overlap {r.overlap.of_draft:.1%} of the draft's rows")
    out.append(Block("p", "; ".join(facts) + "."))
    items = tuple(f"[{x.severity}] {x.message}" for x in r.advice) + tuple(r.notes)
    if items:
        out.append(Block("list", items=items))
    return out


def verify_blocks(s: Section) -> list[Block]:
    out = [Block("h3", "Verification cost t_v(n) / t_v(1)")]
    if not s.verify_s:
        return [*out, Block("p", "Not available: the machine has no bandwidth figure and no profile was given.")]
    if any(p.name == "verify" for p in s.plots):
        out.append(Block("figure", text=f"t_v(n)/t_v(1), {s.verify_source}", figure="verify"))
    t1 = s.verify_s[0]
    rows = tuple((Cell(str(n)), Cell(f"{t * 1e3:.3f}"), Cell(f"{t / t1:.3f}"))
                 for n, t in enumerate(s.verify_s, start=1))
    out.append(Block("table", headers=("n", "t_v(n) ms", "t_v(n)/t_v(1)"), rows=rows))
    out.append(Block("p", f"Source: {s.verify_source}. 1.00 everywhere = batch-parallel verification (ideal); "
                          f"n = sequential."))
    return out


def speed_series(sp: check.Speed) -> tuple[list[float], list[float], list[float]]:
    """S(K) for K = 1..len at the central, low and high alpha (the acceptance interval's band)."""

    c, a = sp.costs, sp.acceptance
    top = len(sp.prediction.speedup_by_k)

    def curve(alpha: float) -> list[float]:
        return list(speed.speedup_curve(c.verify_s, c.draft_s, alpha, c.overhead_s, top))
    return curve(a.alpha), curve(a.low), curve(a.high)


def speed_blocks(s: Section) -> list[Block]:
    a = s.assessment
    out = [Block("h3", "Speed-up vs K")]
    if a.speed is None:
        why = a.speed_error or "no draft to speculate with"
        return [*out, Block("p", f"Not available: {why}.")]
    sp = a.speed
    if any(p.name == "speedup" for p in s.plots):
        out.append(Block("figure", text="Predicted speed-up against K; band = acceptance interval; 1.0 = break-even",
                         figure="speedup"))
    mid, lo, hi = speed_series(sp)
    rows = tuple((Cell(str(k)), Cell(f"{m:.3f}"), Cell(f"{low:.3f}"), Cell(f"{high:.3f}"))
                 for k, (m, low, high) in enumerate(zip(mid, lo, hi, strict=True), start=1))
    out.append(Block("table", headers=("K", "S(K)", "S(K) at low alpha", "S(K) at high alpha"), rows=rows))
    be = sp.prediction.break_even_alpha
    be_text = "no alpha breaks even" if be is None else f"break-even alpha {be:.3f} (K={sp.prediction.break_even_k})"
    out.append(Block("p", f"Best K {sp.prediction.k_best}: {sp.prediction.speedup:.3f}x; judged K {sp.k}: "
                          f"{sp.speedup:.3f}x; {be_text}; verdict {sp.prediction.verdict}. t_d = "
                          f"{sp.costs.draft_s * 1e3:.3f} ms, t_o = {sp.costs.overhead_s * 1e3:.3f} ms."))
    reasons = tuple(sp.prediction.reasons) + tuple(sp.notes)
    if reasons:
        out.append(Block("list", items=reasons))
    return out


def recommendation_blocks(s: Section) -> list[Block]:
    out = [Block("h3", "Recommendation")]
    rec = s.recommendation
    if rec is None:
        return [*out, Block("p", f"No recommendation: {s.recommendation_error}.")]
    c = rec.choice
    if c.draft:
        head = (f"Draft {c.draft}, K={c.k}, KV {c.kv_dtype}: {c.speedup:.2f}x "
                f"({c.speedup_interval[0]:.2f}-{c.speedup_interval[1]:.2f}x), {c.verdict}.")
    else:
        head = "No speculation: plain decoding."
    out += [Block("p", head), Block("list", items=tuple(c.reasons) + tuple(f"note: {n}" for n in rec.notes))]
    for key, value in c.launch.items():
        out += [Block("p", f"{key}:"), Block("pre", str(value))]
    return out


def section_blocks(s: Section) -> tuple[Block, ...]:
    return tuple(overview_blocks(s) + ledger_blocks(s) + pairing_blocks(s) + verify_blocks(s) + speed_blocks(s)
                 + recommendation_blocks(s))


# --- plots ------------------------------------------------------------------------------------------

def _matplotlib() -> Any:
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError as e:
        raise UsageError("Cannot draw the report's plots: matplotlib is not installed (expected the 'report' "
                         "extra). Install it with pip install 'spec-planner[report]', or pass --no-plots.") from e
    return matplotlib, Figure


def _svg(fig: Any) -> bytes:
    matplotlib, _ = _matplotlib()
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": SVG_SALT, "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buf.getvalue()


def ledger_plot(a: check.Assessment) -> bytes:
    """Horizontal stacked bar per device (GiB), with the budget as a dashed line."""
    _, Figure = _matplotlib()
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
    _, Figure = _matplotlib()
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


def speedup_plot(sp: check.Speed) -> bytes:
    """S(K) at the central alpha, the band between the low and high alpha, break-even at 1.0."""
    _, Figure = _matplotlib()
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


def finish(s: Section, *, plots: bool = True) -> Section:
    """Draw the plots (unless `plots` is False) and lay out the blocks."""
    s = replace(s, plots=plots_for(s) if plots else ())
    return replace(s, blocks=section_blocks(s))


# --- rendering ---------------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;max-width:72em;color:#222;
background:#fff;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:2px solid #1f4e79;padding-bottom:.2em;margin-top:2em}h3{color:#1f4e79}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.9em}th,td{border:1px solid #ccc;padding:.25em .6em;
text-align:left;vertical-align:top}th{background:#eef3f8}td small{color:#666;display:block}
pre{background:#f5f5f5;padding:.6em;white-space:pre-wrap;word-break:break-all;font-size:.85em}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.85em;color:#555}
.PASS{color:#0a7d32;font-weight:bold}.FAIL{color:#c00000;font-weight:bold}.SKIP{color:#777}
nav li{margin:.2em 0}
"""


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
            cls = f' class="{c.text}"' if c.text in ("PASS", "FAIL", "SKIP") else ""
            if c.exact is not None:
                cells.append(f'<td data-bytes="{c.exact}"{cls}>{_e(c.text)}<small>{c.exact:,} B</small></td>')
            else:
                cells.append(f"<td{cls}>{_e(c.text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return "<table>" + (f"<thead><tr>{head}</tr></thead>" if head else "") + "<tbody>" + "".join(body) + \
        "</tbody></table>"


def render_html(sections: Sequence[Section], *, title: str, subtitle: str) -> str:
    """One self-contained HTML document (inline CSS, plots as data URIs, no scripts, no network)."""
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
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


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


def build(scenarios: Sequence[check.Scenario], *, plots: bool = True, judge: bool = True) -> list[Section]:
    """Sections for each scenario, in order, plots drawn; `judge`: with the policy's requirement results.

    Raises:
        PlannerError: a model cannot be read; UsageError: plots asked for without matplotlib.
    """
    if plots:
        _matplotlib()
    return [finish(build_section(sc, i, judge=judge), plots=plots) for i, sc in enumerate(scenarios, start=1)]


def write(sections: Sequence[Section], out: str, *, title: str, subtitle: str,
          inputs: Sequence[str] = ()) -> list[str]:
    """Write the report (HTML, or Markdown + one SVG per plot beside it), atomically.

    Returns:
        The paths written, the report first.

    Raises:
        UsageError: `out` is not .html/.htm/.md, is an input of this command, or cannot be written.
    """
    from pathlib import Path

    from ..core.atomic import atomic_write

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

