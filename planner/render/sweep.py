"""`planner memory --weights-dtype bf16,int8,int4`: one ledger per weights format, as one table.

Why: choosing a format is comparing them; one call and one table (as accelerate's `estimate-memory`
prints one row per dtype) beats re-running the command per format and reading three ledgers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.fmt import fmt_bytes
from ..fits.memory import Ledger
from . import width
from .text import ledger_json

HEADERS = ["weights dtype", "weights", "KV cache", "activations", "overhead", "TOTAL"]


def sweep_rows(ledgers: Sequence[Ledger], dtypes: Sequence[str]) -> list[list[str]]:
    """One row per ledger: the format asked for (the ledger's own name for int4 is its storage, I32),
    then each term summed over the models it holds (target + draft), exact bytes formatted only here."""
    return [[d,
             fmt_bytes(sum(m.weights_bytes for m in lg.models)),
             fmt_bytes(sum(m.kv_cache_bytes for m in lg.models)),
             fmt_bytes(sum(m.activation_bytes for m in lg.models)),
             fmt_bytes(lg.overhead_bytes), fmt_bytes(lg.total_bytes)] for d, lg in zip(dtypes, ledgers, strict=True)]


def sweep_table(ledgers: Sequence[Ledger], dtypes: Sequence[str]) -> str:
    """The models and settings once, then the table, then where the figures come from."""
    first = ledgers[0]
    s = first.settings
    models = " + ".join(f"{m.role} {m.id}" for m in first.models)
    head = width.wrap(f"{models}: {s.context:,} tokens x {s.batch}, {s.engine}")
    weights = first.models[0].provenance["weights"].split(", re-sized as ", 1)[0]
    sources = width.wrap(f"weights: {weights}, re-sized as each row's format; KV cache: "
                         f"{first.models[0].provenance['kv_cache']}; overhead: {first.overhead_source}")
    return "\n".join([*head, "", width.table(sweep_rows(ledgers, dtypes), HEADERS), "", *sources])


def sweep_json(ledgers: Sequence[Ledger], dtypes: Sequence[str], warnings: list[str]) -> dict[str, Any]:
    """Every ledger whole (the `planner memory --json` schema), keyed by the format asked for."""
    return {"weights_dtypes": list(dtypes),
            "sweep": [{"weights_dtype": d, **ledger_json(lg)} for d, lg in zip(dtypes, ledgers, strict=True)],
            "warnings": list(warnings)}


VARIANT_HEADERS = ["GGUF variant", "file", "weights", "KV cache", "TOTAL"]


def variants_table(folder: str, names: Sequence[str], file_bytes: Sequence[int], ledgers: Sequence[Ledger]) -> str:
    """The GGUF variants of one folder, smallest first: each file's size on disk and the ledger it needs."""
    s = ledgers[0].settings
    head = width.wrap(f"{len(names)} GGUF variant(s) in {folder}: {s.context:,} tokens x {s.batch}, {s.engine}")
    rows = [[n, fmt_bytes(b), fmt_bytes(sum(m.weights_bytes for m in lg.models)),
             fmt_bytes(sum(m.kv_cache_bytes for m in lg.models)), fmt_bytes(lg.total_bytes)]
            for n, b, lg in zip(names, file_bytes, ledgers, strict=True)]
    tail = width.wrap("file: size on disk (all split parts); weights, KV cache, TOTAL: each file's header "
                      "(planner memory FILE for one ledger in full)")
    return "\n".join([*head, "", width.table(rows, VARIANT_HEADERS, shrink=(0,), hyphens=True), "", *tail])


def variants_json(folder: str, names: Sequence[str], paths: Sequence[str], parts: Sequence[int],
                  file_bytes: Sequence[int], ledgers: Sequence[Ledger]) -> dict[str, Any]:
    """Every variant with its file(s), bytes on disk and whole ledger."""
    return {"folder": folder, "variants": [{"name": n, "path": p, "parts": k, "file_bytes": b, **ledger_json(lg)}
                                          for n, p, k, b, lg in zip(names, paths, parts, file_bytes, ledgers,
                                                                     strict=True)]}
