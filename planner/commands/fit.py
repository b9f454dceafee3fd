"""`planner fit`: does a target (+ draft) fit this machine, how long a context, and what to change if not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import engines
from ..core.constants import DEFAULT_CONTEXT, DEFAULT_FIT_MARGIN_BYTES
from ..core.errors import PlannerError
from ..core.fmt import fmt_bytes
from ..core.units import parse_bytes, parse_tokens
from ..fits import fit as fitmod
from ..fits import search as searchmod
from ..fits import verdict as verdictmod
from ..fits.fit import default_layout
from ..fits.machine import describe
from ..fits.machine_lookup import resolve_machine
from ..fits.memory import Settings
from ..render import text as report
from ..render import width
from ..render.width import command_lines, python_lines, wrap
from ..sources import catalog, load_spec
from ._common import app, emit, engine_for, say, warn
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
    MarginOpt,
    MethodOpt,
    ModelArg,
    OverheadOpt,
    ParallelBatchOpt,
    PpOpt,
    RevisionOpt,
    TpOpt,
    UtilizationOpt,
    WeightsDtypeOpt,
    WideOpt,
)

DraftDeviceOpt = Annotated[int | None, typer.Option(
    "--draft-device", help="Put the whole draft on this device index (default: split like the target).", min=0,
    max=1023)]
GpuLayersOpt = Annotated[int | None, typer.Option(
    "--gpu-layers", "-ngl", help="llama.cpp -ngl N: the output layer and the last N-1 layers on the GPUs, the "
                                 "rest in host RAM (default: all).", min=1, max=100_000)]
CpuMoeOpt = Annotated[int, typer.Option(
    "--n-cpu-moe", help="llama.cpp --n-cpu-moe N: the experts of the first N layers in host RAM.", min=0,
    max=100_000)]
DRAFT_CANDIDATES_MAX = 64
# K in the command printed for a combination with a draft: llama.cpp's and mlx-lm's default (3);
# `planner recommend` chooses K.
FIT_LAUNCH_K = 3
SHOWN_COMBINATIONS = 3


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


def combination_launch(c: Any, target_ref: str, method: Any) -> dict[str, str]:
    """The launch command of a combination (engines/*.py renders it), with the draft at FIT_LAUNCH_K."""
    q = c.problem
    s, lay = q.settings, q.layout
    x = engines.LaunchInput(target=target_ref, draft=None, k=FIT_LAUNCH_K, context=s.context,
                            kv_dtype=s.kv_dtype, tp=lay.tp, pp=lay.pp, gpu_memory_utilization=q.utilization,
                            batch=s.batch, weights_quant=s.weights_dtype, gpu_layers=lay.gpu_layers,
                            cpu_moe_layers=lay.cpu_moe_layers, draft_context=s.draft_context)
    if method is not None:
        fields = method.launch_fields()
        draft = fields.get("draft")
        if draft and not Path(draft).expanduser().exists() and q.draft is not None:
            fields["draft"] = q.draft.id  # a catalog alias names its Hub id in a command
        x = replace(x, **fields)
    out = engines.launch(s.engine, x)
    if method is not None:
        # joined as with_notes joins an engine's notes ("; "): "...at load K=3: ..." once read as one sentence
        out["note"] = "; ".join(filter(None, [out.get("note"), f"K={FIT_LAUNCH_K} here: planner recommend "
                                                               f"chooses K"]))
    return out


def combination_json(c: searchmod.Combination, launch: dict[str, str] | None = None) -> dict[str, Any]:
    q = c.problem
    return {"changes": [what for what, _ in c.changes], "flags": [flag for _, flag in c.changes],
            "headroom_bytes": c.headroom_bytes, "used_bytes": c.gpu_bytes, "host_bytes": c.host_bytes,
            "weights_dtype": q.settings.weights_dtype, "kv_dtype": q.settings.kv_dtype,
            "utilization": q.utilization, "context": q.settings.context, "tp": q.layout.tp, "pp": q.layout.pp,
            "gpu_layers": q.layout.gpu_layers, "cpu_moe_layers": q.layout.cpu_moe_layers,
            "decode_time_factor": round(c.speed_factor, 4) if c.speed_factor is not None else None,
            "decode_time_source": c.speed_source, **({"launch": launch} if launch is not None else {}),
            **({"offload_ledger": [{"gpu_layers": o.gpu_layers, "used_bytes": o.used_bytes,
                                    "headroom_bytes": o.headroom_bytes, "host_bytes": o.host_bytes}
                                   for o in searchmod.offload_ledger(q, q.layout.gpu_layers)]}
               if launch is not None and q.layout.gpu_layers is not None else {})}


def fit_json(r, warnings: list[str], launch: dict[str, str] | None = None) -> dict[str, Any]:
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
            "margin_bytes": p.margin_bytes,  # the safety margin each budget leaves past the engine's (--margin)
            "machine": describe(p.machine), "devices": devices, "dominant": r.dominant,
            "suggestions": [{"change": s.change, "headroom_bytes": s.headroom_bytes, "kind": s.kind,
                             "value": s.value, "fits": s.fits} for s in r.suggestions],
            **({"combinations": [combination_json(c, launch if i == 0 else None)
                                 for i, c in enumerate(r.combinations)]} if not r.fits else {}),
            "ledger": report.ledger_json(r.ledger, warnings)}


def _speed(c: searchmod.Combination) -> str:
    return f"x{c.speed_factor:.2f}" if c.speed_factor is not None else "uncertain"


def combinations_text(r: Any, launch: dict[str, str] | None) -> list[str]:
    """The cheapest combination that fits, its command, and the next ones (search.py's ranking rule)."""
    if not r.combinations:
        return ["", "no combination of the changes planner tries fits (weights, KV, utilisation, context, tp/pp"
                    ", offload)"]
    best = r.combinations[0]
    lines = ["", *wrap("cheapest combination that fits (by quality, then context kept, then speed):"),
             "  " + " + ".join(what for what, _ in best.changes),
             "  flags: " + " ".join(f for _, f in best.changes),
             f"  headroom {fmt_bytes(best.headroom_bytes)} on the tightest device{_past_margin(r.problem)}"
             + (f"; host RAM {fmt_bytes(best.host_bytes)}" if best.host_bytes else ""),
             *wrap(f"decode time {_speed(best)} of the plan as asked ({best.speed_source})" if best.speed_factor
                   is not None else f"decode time: {best.speed_source}", indent="  ")]
    for key, value in (launch or {}).items():
        if key == "command":
            lines += command_lines(value, indent="  ", head="command: ")
        elif key == "convert":  # steps run in order before the command: one pasteable command each
            lines += ["  convert:", *(x for step in value.split(" && ") for x in command_lines(step, indent="    "))]
        elif "\n" in value:  # a Python snippet: its own lines
            lines += [f"  {key}:", *(x for line in value.splitlines() for x in python_lines(line, indent="    "))]
        else:
            lines += wrap(f"{key}: {value}", indent="  ")
    if best.problem.layout.gpu_layers is not None:
        rows = searchmod.offload_ledger(best.problem, best.problem.layout.gpu_layers)
        lines += ["", width.table([[f"-ngl {o.gpu_layers}", fmt_bytes(o.used_bytes), fmt_bytes(o.headroom_bytes),
                                    fmt_bytes(o.host_bytes), "yes" if o.headroom_bytes >= 0 else "no"] for o in rows],
                                  ["offload", "GPU used", "headroom", "host RAM", "fits"])]
    rest = r.combinations[1:SHOWN_COMBINATIONS + 1]
    if rest:
        lines += ["", width.table([[" + ".join(w for w, _ in c.changes), fmt_bytes(c.headroom_bytes),
                                    fmt_bytes(c.host_bytes) if c.host_bytes else "-", _speed(c)] for c in rest],
                                  ["also fits", "headroom", "host RAM", "decode time"], shrink=(0,))]
    return lines


def _past_margin(p: fitmod.Problem) -> str:
    """Headroom is counted past the safety margin (--margin): say so where it is printed."""
    return f" (past the {fmt_bytes(p.margin_bytes)} safety margin)" if p.margin_bytes else ""


def fit_table(r, launch: dict[str, str] | None = None) -> str:
    p = r.problem
    rows = []
    one_name = len({d.budget.name for d in r.devices}) == 1  # the header line names it
    for d in r.devices:
        b = d.budget
        rows.append([str(b.index) if one_name else f"{b.index}: {b.name}", fmt_bytes(b.budget_bytes),
                     fmt_bytes(sum(s.weights_bytes for s in d.shares)),
                     fmt_bytes(sum(s.kv_cache_bytes for s in d.shares)),
                     fmt_bytes(sum(s.activation_bytes for s in d.shares)),
                     fmt_bytes(d.overhead_bytes + d.comm_bytes), fmt_bytes(d.used_bytes),
                     fmt_bytes(d.headroom_bytes)])
    head = ["device", "budget", "weights", "KV cache", "activations", "overhead", "used", "headroom"]
    lay = p.layout
    lines = [*wrap(f"machine: {p.machine.display_name} ({p.machine.origin}), engine {p.settings.engine}, "
                   f"tp {lay.tp} x pp {lay.pp}" + (f", draft on device {lay.draft_device}"
                                                    if lay.draft_device is not None else "")),
             width.table(rows, head, shrink=(0,), drop=(6,)), ""]  # used = budget - headroom: --wide  # used = budget - headroom: --wide
    if lay.gpu_layers is not None or lay.cpu_moe_layers:
        t, src = searchmod.decode_seconds(p)
        t_gpu, _ = searchmod.decode_seconds(replace(p, layout=replace(lay, gpu_layers=None, cpu_moe_layers=0)))
        speed = f"decode time x{t / t_gpu:.2f} of all on GPU" if t and t_gpu else src
        lines[-1:-1] = wrap(f"host RAM: {fmt_bytes(sum(d.host_bytes for d in r.devices))} (input embedding, "
                            f"offloaded layers' weights and KV); {speed}")
    verdict = "FITS" if r.fits else "DOES NOT FIT"
    lines += wrap(f"{verdict} at {p.settings.context:,} tokens x {p.settings.batch}: headroom "
                  f"{fmt_bytes(r.headroom_bytes)} on the tightest device{_past_margin(p)}")
    dom = r.dominant
    lines.append(f"largest term: {dom['role']} {dom['term']} {fmt_bytes(dom['bytes'])} "
                 f"({dom['share']:.0%} of device {dom['device']})")
    limit = " (the model's own maximum)" if r.max_context_limit == "model" else ""
    lines.append(f"largest context at batch {p.settings.batch}: {r.max_context:,} tokens{limit}")
    lines.append(f"largest batch at {p.settings.context:,} tokens: {r.max_batch:,}")
    budgets = {d.budget.source for d in r.devices}
    lines += wrap("budget: " + "; ".join(sorted(budgets)))
    if r.suggestions:
        lines.append("")
        lines.append(width.table([[s.change, fmt_bytes(s.headroom_bytes), "yes" if s.fits else "no"]
                                  for s in r.suggestions], ["single change", "headroom", "fits"], shrink=(0,)))
        lines += combinations_text(r, launch)
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
    gpu_layers: GpuLayersOpt = None,
    n_cpu_moe: CpuMoeOpt = 0,
    context: ContextOpt = str(DEFAULT_CONTEXT),
    batch: ParallelBatchOpt = 1,
    draft_context: DraftContextOpt = None,
    engine: EngineAutoOpt = "auto",
    kv_dtype: KvDtypeOpt = None,
    weights_dtype: WeightsDtypeOpt = None,
    group_size: GroupSizeOpt = 128,
    revision: RevisionOpt = None,
    overhead: OverheadOpt = None,
    margin: MarginOpt = None,
    as_json: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Does TARGET (+ --draft) fit the machine? Per-device ledger, largest context and batch, fixes.

    Each device keeps a safety margin free (--margin; default 1 GiB, what llama.cpp's own fit leaves, less
    the engine's own margin), so a combination cut to the byte still starts when an estimate is a little off.

    Exit code 0 when it fits, 1 when it does not, 2 on bad input.

    \b
    Examples:
      planner fit llama-3.1-8b --draft llama-3.2-1b-instruct --machine rtx-4090 --engine llama.cpp
      planner fit ./Llama-3.1-70B --machine 2x-rtx-4090 --engine vllm --weights-dtype int4 --json
      planner fit qwen3-8b --machine m3-max-36gb --engine mlx --context 32k
      planner fit qwen3-8b --gpu-memory 24GiB --gpus 2 --engine vllm
      planner fit target.gguf --draft draft.gguf --machine rtx-4090 --parallel 4 --draft-context 8k
    """
    width.set_wide(wide)
    tspec = load_spec(target, revision=revision)
    method = load_method(draft, kind=method_kind, target=tspec)
    dspec = method.resident_model() if method else None  # what the method keeps resident
    m = resolve_machine(machine, parse_bytes(gpu_memory, what="--gpu-memory") if gpu_memory else None, gpus)
    settings = Settings(context=parse_tokens(context), batch=batch, resolved_engine=engines.get(engine_for(engine, tspec, dspec, kind=m.kind)),
                        kv_dtype=kv_dtype, weights_dtype=weights_dtype, group_size=group_size,
                        overhead_bytes=parse_bytes(overhead, what="--overhead") if overhead else None,
                        draft_context=parse_tokens(draft_context, what="--draft-context") if draft_context
                        else None)
    layout = replace(default_layout(m.n_devices, settings.resolved_engine, tp, pp, draft_device), gpu_layers=gpu_layers,
                     cpu_moe_layers=n_cpu_moe)
    warnings = [f"{s.id}: {w}" for s in (tspec, dspec) if s for w in s.warnings]
    own = settings.resolved_engine.device_margin_bytes
    safety = parse_bytes(margin, what="--margin") if margin else max(DEFAULT_FIT_MARGIN_BYTES - own, 0)
    problem = fitmod.Problem(target=tspec, machine=m, settings=settings, layout=layout, draft=dspec,
                             utilization=utilization, margin_bytes=safety)
    result = verdictmod.fit(problem, smaller_drafts=_smaller_drafts(dspec))
    ref = target if Path(target).expanduser().exists() else tspec.id  # commands name the model, not our alias
    launch = combination_launch(result.combinations[0], ref, method) if result.combinations else None
    if as_json:
        emit(fit_json(result, warnings, launch))
    else:
        for w in warnings:
            warn(w)
        say(fit_table(result, launch))
    if not result.fits:
        raise typer.Exit(code=1)
