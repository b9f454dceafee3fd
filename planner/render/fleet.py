"""The machine-first report laid out: one part per machine (its rows, plot and launch commands),
the fleet matrix when there are several machines, and the same rows as JSON.

Why its own module: the rows come from plan/fleet.py (recommend's own answers); this module only
turns them into document blocks (render/document.py), which render/html.py and render/markdown.py
write, and into the `--json` objects (docs/json.md), so the tables, the plot and the JSON hold the
same figures. Units are formatted here and nowhere before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.constants import JSON_SCHEMA_VERSION
from ..core.fmt import fmt_bytes, fmt_count
from ..fits.machine import Machine
from ..plan.fleet import BEST_BY, Row, best_machine, figure_origins
from .document import Block, Cell, Part, Plot
from .plots import fleet_plot

ROW_HEADERS = ("target", "params", "fits", "headroom", "largest context", "weights", "plan", "K", "KV",
               "speed-up (interval)", "tokens/s plain", "tokens/s best", "verdict")


def _short(model_id: str | None) -> str:
    return "-" if not model_id else model_id.rsplit("/", 1)[-1]


def _fits(r: Row) -> str:
    if r.fits and r.fits_as_stored:
        return "yes"
    return f"with {r.weights_dtype} weights" if r.fits else "NO"


def _plan(r: Row) -> str:
    if r.choice is None:
        return "-"
    if not r.speculates:
        return "plain decoding" if r.fits else "-"
    return f"{r.method}: {_short(r.choice.draft)}"


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _speedup(r: Row) -> str:
    c = r.choice
    if c is None or not r.fits:
        return "-"
    lo, hi = c.speedup_interval
    return f"{c.speedup:.2f}x ({lo:.2f}-{hi:.2f})"


def _verdict(r: Row) -> str:
    if not r.fits:
        return "does not fit"
    if r.error:
        return "speed unknown"
    return r.choice.verdict if r.choice is not None else "-"


def row_cells(r: Row) -> tuple[Cell, ...]:
    c = r.choice
    ctx = "-" if not r.fits else f"{r.max_context:,}" + (" (model max)" if r.max_context_limit == "model" else "")
    return (Cell(r.target.spec.id), Cell(fmt_count(r.target.params)), Cell(_fits(r)),
            Cell(fmt_bytes(r.headroom_bytes), r.headroom_bytes), Cell(ctx), Cell(r.weights_dtype or "as stored"),
            Cell(_plan(r)), Cell(str(c.k) if c is not None and r.speculates else "-"),
            Cell(c.kv_dtype if c is not None and r.speculates else "-"),
            Cell(_speedup(r)), Cell(_rate(r.baseline_tokens_per_s)), Cell(_rate(r.tokens_per_s)), Cell(_verdict(r)))


def _figures(rows: Sequence[Row], m: Machine) -> Block:
    items = [f"{key}: {kind} ({src})" for key, (kind, src) in figure_origins(m).items()]
    return Block("list", items=tuple(items + costs_items(rows)))


def costs_items(rows: Sequence[Row]) -> list[str]:
    """Where the rows' costs come from, each part once: the parts every row shares on one line, then each
    part only some rows have with the targets it is for (the costs line was repeated per distinct row)."""
    split = [(r, _parts(r.costs)) for r in rows if r.costs and r.costs != "none"]
    if not split:
        return []
    common = [p for p in split[0][1] if all(p in ps for _, ps in split)]
    extra: dict[str, list[str]] = {}
    for r, ps in split:
        for p in ps:
            if p not in common:
                extra.setdefault(p, []).append(_short(r.target.spec.id))
    return ([f"costs: {'; '.join(common)}"] if common else []) + \
        [f"costs for {', '.join(dict.fromkeys(ts))}: {p}" for p, ts in extra.items()]


def _parts(costs: str) -> list[str]:
    """A costs string's '; '-separated parts, a '; ' inside parentheses kept in its part."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(costs):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and costs.startswith("; ", i):
            out.append(costs[start:i])
            start = i + 2
    return [*out, costs[start:]]


def _summary(rows: Sequence[Row]) -> str:
    stored = sum(1 for r in rows if r.fits and r.fits_as_stored)
    quant = sum(1 for r in rows if r.fits and not r.fits_as_stored)
    spec = sum(1 for r in rows if r.fits and r.speculates)
    return (f"{len(rows)} target(s): {stored} fit as stored, {quant} more with quantised weights, "
            f"{len(rows) - stored - quant} do not fit; speculation pays for {spec}. Rows: fits first, then larger "
            f"models (total parameters: the catalog holds no quality scores), then faster.")


def machine_plot(rows: Sequence[Row], title: str) -> Plot | None:
    """The plot of one machine: the fitting rows' plain and best predicted tokens/s."""
    labels: list[str] = []
    plain: list[float] = []
    best: list[float] = []
    spread: list[tuple[float, float]] = []
    for r in rows:
        b, t, iv = r.baseline_tokens_per_s, r.tokens_per_s, r.tokens_per_s_interval
        if not r.fits or b is None or t is None or iv is None:
            continue  # no fit or no plain rate (t and iv are None only with b, or with no plan at all)
        labels.append(_short(r.target.spec.id) + (f" ({r.weights_dtype})" if r.weights_dtype else ""))
        plain.append(b)
        best.append(t)
        spread.append(iv)
    if not labels:
        return None
    svg = fleet_plot(labels, plain, best, spread, title)
    return Plot("tokens", "Predicted tokens/s: plain vs best plan", svg)


def _launch_blocks(rows: Sequence[Row]) -> list[Block]:
    out = []
    for r in rows:
        c = r.choice
        if c is None or not r.fits or not c.launch:
            continue
        for key, value in c.launch.items():
            out += [Block("p", f"{r.target.spec.id} ({key}):"), Block("pre", str(value))]
    return out


def machine_part(index: int, m: Machine, rows: Sequence[Row], *, plots: bool = True, context: int, batch: int) -> Part:
    """One machine: where its figures come from, its rows as a table, the plot, the launch commands."""
    engines_used = sorted({r.engine for r in rows})
    head = (f"{m.display_name} ({m.name}, {m.origin}, {m.n_devices} device(s)); engine "
            f"{', '.join(engines_used) or '-'} (the machine's default unless --engine); context {context:,} x "
            f"batch {batch}.")
    blocks = [Block("p", head), Block("h3", "Figures"), _figures(rows, m), Block("p", _summary(rows))]
    plot = machine_plot(rows, f"{m.display_name}: predicted tokens/s per sequence") if plots else None
    if plot is not None:
        blocks.append(Block("figure", text="Predicted tokens/s per sequence: plain decoding vs the best plan",
                            figure=plot.name))
    blocks += [Block("h3", "Targets"), Block("table", headers=ROW_HEADERS, rows=tuple(row_cells(r) for r in rows))]
    errors = [f"{r.target.spec.id}: {r.error}" for r in rows if r.error]
    if errors:
        blocks.append(Block("list", items=tuple(errors)))
    launch = _launch_blocks(rows)
    if launch:
        blocks += [Block("h3", "Launch commands"), *launch]
    return Part(anchor=f"m{index}", title=f"{m.name}: what runs here", blocks=tuple(blocks),
                plots=(plot,) if plot is not None else ())


def _cell(r: Row | None) -> str:
    if r is None:
        return "-"
    if not r.fits:
        return "does not fit"
    w = f"{r.weights_dtype} weights, " if r.weights_dtype else ""
    if r.error or r.choice is None:
        return f"fits ({w}speed unknown)".replace(", speed", "; speed")
    plan = f"{r.choice.speedup:.2f}x {_short(r.choice.draft)} K={r.choice.k}" if r.speculates else "plain"
    return f"{w}{plan}, {_rate(r.tokens_per_s)} tok/s"


def matrix(per_machine: Sequence[tuple[Any, Sequence[Row]]],
           by: str = "smallest") -> list[tuple[str, list[Row | None], Row | None]]:
    """(target id, its row on each machine or None, the best machine's row) for every target: those that
    fit somewhere first, then larger models first (the machine parts' order)."""
    ids: dict[str, int] = {}
    for _, rows in per_machine:
        for r in rows:
            ids.setdefault(r.target.spec.id, r.target.params)
    out = []
    for tid in ids:
        cells = [next((r for r in rows if r.target.spec.id == tid), None) for _, rows in per_machine]
        out.append((tid, cells, best_machine([r for r in cells if r is not None], by)))
    return sorted(out, key=lambda x: (x[2] is None, -ids[x[0]], x[0]))


def fleet_part(per_machine: Sequence[tuple[Any, Sequence[Row]]], by: str = "smallest") -> Part:
    """Targets x machines: the best plan per cell and where each target should live (best by `by`)."""
    headers = ("target", *[m.name for m, _ in per_machine], "best machine")
    rows = tuple((Cell(tid), *[_matrix_cell(r) for r in cells], Cell(best.machine.name if best else "none"))
                 for tid, cells, best in matrix(per_machine, by))
    text = (f"Best plan per cell (speed-up, draft, K, predicted tokens/s per sequence). Best machine (--best-by "
            f"{by}): {BEST_BY[by]}.")
    text += " Click a header to sort (a machine's column by predicted tokens/s); green: speculation pays, " \
            "yellow: plain decoding, grey: does not fit."
    return Part(anchor="fleet", title="Fleet: targets x machines",
                blocks=(Block("p", text), Block("table", headers=headers, rows=rows, sortable=True)))


def _matrix_cell(r: Row | None) -> Cell:
    """A matrix cell: its text, its colour (speculation pays, plain, does not fit) and the tokens/s it
    sorts by (0 when it does not fit: last in a descending sort)."""
    if r is None or not r.fits:
        return Cell(_cell(r), tone="nofit", sort=0.0)
    return Cell(_cell(r), tone="spec" if r.speculates else "plain", sort=round(r.tokens_per_s or 0.0, 3))


def row_json(r: Row) -> dict[str, Any]:
    """One machine x target object of `planner report --json` (docs/json.md)."""
    c = r.choice
    a = c.acceptance if c is not None else None
    spec = r.speculates
    interval = r.tokens_per_s_interval
    return {"schema_version": JSON_SCHEMA_VERSION, "machine": r.machine.name, "target": r.target.spec.id, "target_ref": r.target.ref,
            "family": r.target.family, "params_total": r.target.params, "engine": r.engine, "context": r.context,
            "batch": r.batch, "fits": r.fits, "fits_as_stored": r.fits_as_stored, "weights_dtype": r.weights_dtype,
            "headroom_bytes": r.headroom_bytes, "max_context": r.max_context,
            "max_context_limit": r.max_context_limit, "method": r.method,
            "draft": c.draft if c is not None and spec else None,
            "draft_ref": c.draft_ref if c is not None and spec else None, "k": c.k if c is not None and spec else None,
            "kv_dtype": c.kv_dtype if c is not None else None,
            "speedup": round(c.speedup, 4) if c is not None and r.fits else None,
            "speedup_interval": list(c.speedup_interval) if c is not None and r.fits else None,
            "baseline_tokens_per_s": round(r.baseline_tokens_per_s, 3) if r.baseline_tokens_per_s else None,
            "tokens_per_s": round(r.tokens_per_s, 3) if r.tokens_per_s else None,
            "tokens_per_s_interval": [round(x, 3) for x in interval] if interval else None,
            "verdict": _verdict(r), "reasons": list(c.reasons) if c is not None else [],
            "acceptance": None if a is None else {"alpha": a.alpha, "low": a.low, "high": a.high, "source": a.source},
            "costs_source": r.costs, "launch": dict(c.launch) if c is not None else {}, "error": r.error}


def machine_json(m: Machine) -> dict[str, Any]:
    return {"name": m.name, "display_name": m.display_name, "kind": m.kind, "origin": m.origin,
            "devices": m.n_devices, "memory_bytes": m.memory_bytes, "bandwidth_bytes_per_s": m.bandwidth_bytes_per_s,
            "figures": {k: {"origin": kind, "source": src} for k, (kind, src) in figure_origins(m).items()}}


def report_json(per_machine: Sequence[tuple[Any, Sequence[Row]]], *, context: int, batch: int,
                by: str = "smallest") -> dict[str, Any]:
    """The whole `--json` object: the machines (with where each figure came from), the rows, and the
    best machine per target (with the rule that chose it)."""
    return {"context": context, "batch": batch, "machines": [machine_json(m) for m, _ in per_machine],
            "rows": [row_json(r) for _, rows in per_machine for r in rows],
            "best_machine": {tid: (best.machine.name if best else None) for tid, _, best in matrix(per_machine, by)},
            "best_by": by}
