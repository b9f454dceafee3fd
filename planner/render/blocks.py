"""The blocks of one report section (shared by HTML and Markdown), and the rows they tabulate.

Why its own module: each part of a section (overview and verdict, memory ledger, pair verdicts,
verify curve, speed-up against K, recommendation) is laid out once as document blocks, so the
HTML and Markdown writers hold the same tables. The ledger rows and S(K) series computed here
are also what render/plots.py draws, so a plot and its table never disagree.
"""

from __future__ import annotations

from typing import Any

from ..core.fmt import fmt_bytes
from ..plan import load
from ..plan.assess import Assessment, Speed
from ..speed import model as speed
from .check_values import format_value
from .document import Block, Cell, Section


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


def ledger_rows(a: Assessment) -> list[tuple[str, list[int]]]:
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


def speed_series(sp: Speed) -> tuple[list[float], list[float], list[float]]:
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


def load_blocks(s: Section) -> list[Block]:
    """Speed-up against concurrency (serving load) for a few contexts: the roofline at B sequences."""
    out = [Block("h3", "Speed-up under load")]
    if not s.load:
        return [*out, Block("p", f"Not available: {s.load_error or 'no speed figure'}.")]
    if any(p.name == "load" for p in s.plots):
        out.append(Block("figure", text="Predicted speed-up against concurrent sequences, one line per context; "
                                        "1.0 = break-even", figure="load"))
    batches = [p.batch for p in s.load[0][1]]
    rows = []
    for context, points in s.load:
        cells = [Cell(f"{context:,}")]
        for p in points:  # a batch that does not fit has no speed-up to read: "faster (does not fit)" misled
            cells.append(Cell(f"{p.speedup:.2f}x K={p.k} {p.verdict}") if p.fits else
                         Cell("does not fit", tone="nofit"))
        rows.append(tuple(cells))
    out.append(Block("table", headers=("context", *(f"B={b}" for b in batches)), rows=tuple(rows)))
    cross = [f"context {c:,}: {crossover_text(load.crossover_batch(pts), batches[-1])}" for c, pts in s.load]
    out.append(Block("p", "Speculation stops paying at: " + "; ".join(cross) + ". Roofline costs at each batch: "
                          "weights read once, every sequence's KV cache, compute for B x (K+1) tokens, the engine's "
                          "per-round speculation overhead (docs/speed.md, Under load)."))
    return out


def crossover_text(cross: int | None, top: int) -> str:
    return f"{cross} sequence{'s' if cross != 1 else ''}" if cross is not None else f"none up to {top}"


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
                 + load_blocks(s) + recommendation_blocks(s))
