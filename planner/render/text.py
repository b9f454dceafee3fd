"""Rendering: ledgers and plans -> tables (tabulate) or JSON-ready dicts.

Why: computation modules return integers of bytes and seconds; rendering turns them
into GiB/ms for people (with core/fmt.py's helpers), and into the documented JSON
schemas (bytes stay integers) for machines.
"""

from __future__ import annotations

from typing import Any

from ..core.fmt import fmt_bytes, fmt_count
from ..fits.memory import Ledger, ModelLedger
from . import width


def model_ledger_json(m: ModelLedger) -> dict[str, Any]:
    return {"role": m.role, "id": m.id, "params_total": m.params_total, "params_active": m.params_active,
            "weights_bytes": m.weights_bytes, "weights_dtype": m.weights_dtype,
            "kv_bytes_per_token": m.kv_bytes_per_token, "kv_cache_bytes": m.kv_cache_bytes,
            "state_bytes": m.state_bytes, "kv_dtype": m.kv_dtype, "context": m.context,
            "activation_bytes": m.activation_bytes, "total_bytes": m.total_bytes,
            "provenance": dict(m.provenance), "confidence": m.confidence, "assumptions": list(m.assumptions),
            # resident for plain decoding is weights_bytes; what the checkpoint stores (the Hub's total_size)
            "checkpoint_bytes": m.checkpoint_bytes, "mtp_bytes": m.mtp_bytes, "mtp_layers": m.mtp_layers}


def ledger_json(ledger: Ledger, warnings: list[str] | None = None) -> dict[str, Any]:
    """The `planner memory --json` schema (docs/usage.md)."""
    s = ledger.settings
    return {"context": s.context, "batch": s.batch, "engine": s.engine,
            "models": [model_ledger_json(m) for m in ledger.models],
            "overhead_bytes": ledger.overhead_bytes, "overhead_source": ledger.overhead_source,
            "total_bytes": ledger.total_bytes, "warnings": list(warnings or [])}


SOURCE_MIN_WIDTH = 16  # a source column narrower than this wraps into too many lines to read


def ledger_table(ledger: Ledger) -> str:
    """Rows = ledger terms, one column per model, plus where each figure came from."""
    ms = ledger.models
    headers = ["", *[f"{m.role}: {m.id}" for m in ms], "source"]

    def row(label: str, values: list[str], source: str) -> list[str]:
        return [label, *values, source]

    t = ms[0]
    s = ledger.settings
    rows = [
        row("params (total / active)", [f"{fmt_count(m.params_total)} / {fmt_count(m.params_active)}"
                                             for m in ms], "header or config shapes"),
        row("weights", [f"{fmt_bytes(m.weights_bytes)} ({m.weights_dtype})" for m in ms],
            "; ".join(dict.fromkeys(m.provenance["weights"] for m in ms))),
        row("KV per token", [f"{m.kv_bytes_per_token:,} B ({m.kv_dtype})" for m in ms],
            "config shapes (window-full; fixed state excluded)"),
        row(f"KV cache @ {s.context:,} tok x {s.batch}", [fmt_bytes(m.kv_cache_bytes) for m in ms],
            t.provenance["kv_cache"]),
    ]
    if any(m.mtp_bytes for m in ms):
        rows.append(row("MTP layers (stored)", [f"{fmt_bytes(m.mtp_bytes)} ({m.mtp_layers})" if m.mtp_bytes else ""
                                                for m in ms], "resident only when MTP speculation runs"))
    if any(m.state_bytes for m in ms):
        rows.append(row("  of which recurrent state", [fmt_bytes(m.state_bytes) for m in ms],
                        "config shapes (per sequence, fixed)"))
    rows += [
        row("activations (peak)", [fmt_bytes(m.activation_bytes) for m in ms], t.provenance["activations"]),
        row("model total", [fmt_bytes(m.total_bytes) for m in ms], "sum"),
        *([row("runtime overhead (once)", [fmt_bytes(ledger.overhead_bytes)] + [""] * (len(ms) - 1),
               ledger.overhead_source)] if ledger.overhead_bytes else []),  # none on Metal/CPU: no row
        row("TOTAL", [fmt_bytes(ledger.total_bytes)] + [""] * (len(ms) - 1), f"{s.engine}"),
        row("confidence", [m.confidence for m in ms],
            "; ".join(dict.fromkeys(a for m in ms if m.confidence == "low" for a in m.assumptions))[:160]
            or "exact: headers; high: config of a known architecture"),
    ]
    full = width.table(rows, headers)
    if width.fits(full):
        return full
    # too wide for the terminal: model ids above the table, the source column wrapped
    short = ["", *[m.role for m in ms], "source"]
    return "\n".join([*(f"{m.role}: {m.id}" for m in ms), width.table(rows, short, shrink=(len(short) - 1,),
                                                                       floor=SOURCE_MIN_WIDTH, hyphens=True)])
