"""`planner fit`: does a target (+ draft) fit this machine, how long a context, and what to change if not."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..core.constants import DEFAULT_CONTEXT
from ..core.errors import PlannerError
from ..core.fmt import fmt_bytes, tabulate
from ..core.units import parse_bytes, parse_tokens
from ..fits import fit as fitmod
from ..fits import verdict as verdictmod
from ..fits.fit import default_layout
from ..fits.machine import describe
from ..fits.machine_lookup import resolve_machine
from ..fits.memory import Settings
from ..render import text as report
from ..sources import catalog, load_spec
from ._common import app, emit, engine_for, warn
from ._methods import load_method
from ._options import (
    ContextOpt,
    DraftContextOpt,
    DraftOpt,
    EngineAutoOpt,
    GpuMemoryOpt,
    GpusOpt,
    GroupSizeOpt,
    JsonOpt,
    KvDtypeOpt,
    MachineOpt,
    MethodOpt,
    ModelArg,
    OverheadOpt,
    ParallelBatchOpt,
    PpOpt,
    RevisionOpt,
    TpOpt,
    UtilizationOpt,
    WeightsDtypeOpt,
)

DraftDeviceOpt = Annotated[int | None, typer.Option(
    "--draft-device", help="Put the whole draft on this device index (default: split like the target).", min=0)]
DRAFT_CANDIDATES_MAX = 64


def _smaller_drafts(draft) -> list:
    """Catalog models of the draft's family with fewer parameters (candidates for a smaller draft)."""
    if draft is None or not draft.family or draft.source == "gguf":  # catalog drafts are not GGUF files
        return []
    out = []
    for e in catalog.entries()[:DRAFT_CANDIDATES_MAX]:
        if e.get("family") != draft.family or e["id"] == draft.id:
            continue
        try:
            spec = load_spec(e["id"])
        except PlannerError:
            continue
        if spec.params_total < draft.params_total:
            out.append(spec)
    return out


def fit_json(r, warnings: list[str]) -> dict[str, Any]:
    """The `planner fit --json` schema (docs/fit.md)."""
    p = r.problem
    devices = []
    for d in r.devices:
        b = d.budget
        devices.append({
            "index": b.index, "name": b.name, "kind": b.kind, "memory_bytes": b.memory_bytes,
            "budget_bytes": b.budget_bytes, "used_bytes": d.used_bytes, "headroom_bytes": d.headroom_bytes,
            "budget_source": b.source, "overhead_bytes": d.overhead_bytes, "comm_bytes": d.comm_bytes,
            "host_bytes": d.host_bytes,
            "weights_bytes": sum(s.weights_bytes for s in d.shares),
            "kv_cache_bytes": sum(s.kv_cache_bytes for s in d.shares),
            "activation_bytes": sum(s.activation_bytes for s in d.shares),
            "models": [{"role": s.role, "id": s.id, "weights_bytes": s.weights_bytes,
                        "kv_cache_bytes": s.kv_cache_bytes, "activation_bytes": s.activation_bytes}
                       for s in d.shares]})
    return {"fits": r.fits, "headroom_bytes": r.headroom_bytes, "max_context": r.max_context,
            "max_context_limit": r.max_context_limit, "max_batch": r.max_batch,
            "context": p.settings.context, "batch": p.settings.batch, "engine": p.settings.engine,
            "tp": p.layout.tp, "pp": p.layout.pp, "draft_device": p.layout.draft_device,
            "machine": describe(p.machine), "devices": devices, "dominant": r.dominant,
            "suggestions": [{"change": s.change, "headroom_bytes": s.headroom_bytes, "kind": s.kind,
                             "value": s.value, "fits": s.fits} for s in r.suggestions],
            "ledger": report.ledger_json(r.ledger, warnings)}


def fit_table(r) -> str:
    p = r.problem
    rows = []
    for d in r.devices:
        b = d.budget
        rows.append([f"{b.index}: {b.name}", fmt_bytes(b.budget_bytes),
                     fmt_bytes(sum(s.weights_bytes for s in d.shares)),
                     fmt_bytes(sum(s.kv_cache_bytes for s in d.shares)),
                     fmt_bytes(sum(s.activation_bytes for s in d.shares)),
                     fmt_bytes(d.overhead_bytes + d.comm_bytes), fmt_bytes(d.used_bytes),
                     fmt_bytes(d.headroom_bytes)])
    head = ["device", "budget", "weights", "KV cache", "activations", "overhead", "used", "headroom"]
    lay = p.layout
    lines = [f"machine: {p.machine.display_name} ({p.machine.origin}), engine {p.settings.engine}, "
             f"tp {lay.tp} x pp {lay.pp}" + (f", draft on device {lay.draft_device}" if lay.draft_device is not None
                                              else ""),
             tabulate(rows, headers=head, tablefmt="simple", disable_numparse=True), ""]
    verdict = "FITS" if r.fits else "DOES NOT FIT"
    lines.append(f"{verdict} at {p.settings.context:,} tokens x {p.settings.batch}: headroom "
                 f"{fmt_bytes(r.headroom_bytes)} on the tightest device")
    dom = r.dominant
    lines.append(f"largest term: {dom['role']} {dom['term']} {fmt_bytes(dom['bytes'])} "
                 f"({dom['share']:.0%} of device {dom['device']})")
    limit = " (the model's own maximum)" if r.max_context_limit == "model" else ""
    lines.append(f"largest context at batch {p.settings.batch}: {r.max_context:,} tokens{limit}")
    lines.append(f"largest batch at {p.settings.context:,} tokens: {r.max_batch:,}")
    budgets = {d.budget.source for d in r.devices}
    lines.append("budget: " + "; ".join(sorted(budgets)))
    if r.suggestions:
        lines.append("")
        lines.append(tabulate([[s.change, fmt_bytes(s.headroom_bytes), "yes" if s.fits else "no"]
                               for s in r.suggestions], headers=["single change", "headroom", "fits"],
                              tablefmt="simple", disable_numparse=True))
    return "\n".join(lines)


@app.command()
def fit(
    target: ModelArg,
    draft: DraftOpt = None,
    method_kind: MethodOpt = None,
    machine: MachineOpt = None,
    gpu_memory: GpuMemoryOpt = None,
    gpus: GpusOpt = None,
    utilization: UtilizationOpt = None,
    tp: TpOpt = None,
    pp: PpOpt = None,
    draft_device: DraftDeviceOpt = None,
    context: ContextOpt = str(DEFAULT_CONTEXT),
    batch: ParallelBatchOpt = 1,
    draft_context: DraftContextOpt = None,
    engine: EngineAutoOpt = "auto",
    kv_dtype: KvDtypeOpt = None,
    weights_dtype: WeightsDtypeOpt = None,
    group_size: GroupSizeOpt = 128,
    revision: RevisionOpt = None,
    overhead: OverheadOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Does TARGET (+ --draft) fit the machine? Per-device ledger, largest context and batch, fixes.

    Exit code 0 when it fits, 1 when it does not, 2 on bad input.

    Examples:
      planner fit llama-3.1-8b --draft llama-3.2-1b-instruct --machine rtx-4090 --engine llama.cpp
      planner fit ./Llama-3.1-70B --machine 2x-rtx-4090 --engine vllm --weights-dtype int4 --json
      planner fit qwen3-8b --machine m3-max-36gb --engine mlx --context 32k
      planner fit qwen3-8b --gpu-memory 24GiB --gpus 2 --engine vllm
      planner fit target.gguf --draft draft.gguf --machine rtx-4090 --parallel 4 --draft-context 8k
    """
    tspec = load_spec(target, revision=revision)
    method = load_method(draft, kind=method_kind, target=tspec)
    dspec = method.resident_model() if method else None  # what the method keeps resident
    settings = Settings(context=parse_tokens(context), batch=batch, engine=engine_for(engine, tspec, dspec),
                        kv_dtype=kv_dtype, weights_dtype=weights_dtype, group_size=group_size,
                        overhead_bytes=parse_bytes(overhead, what="--overhead") if overhead else None,
                        draft_context=parse_tokens(draft_context, what="--draft-context") if draft_context
                        else None)
    m = resolve_machine(machine, parse_bytes(gpu_memory, what="--gpu-memory") if gpu_memory else None, gpus)
    layout = default_layout(m.n_devices, settings.engine, tp, pp, draft_device)
    warnings = [f"{s.id}: {w}" for s in (tspec, dspec) if s for w in s.warnings]
    problem = fitmod.Problem(target=tspec, machine=m, settings=settings, layout=layout, draft=dspec,
                             utilization=utilization)
    result = verdictmod.fit(problem, smaller_drafts=_smaller_drafts(dspec))
    if as_json:
        emit(fit_json(result, warnings))
    else:
        for w in warnings:
            warn(w)
        typer.echo(fit_table(result))
    if not result.fits:
        raise typer.Exit(code=1)
