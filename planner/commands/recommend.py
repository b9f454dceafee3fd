"""`planner recommend`: the best draft, K and KV dtype for this target on this machine, or "don't speculate"."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Annotated, Any

import typer

from .. import engines
from ..core import paths
from ..core.constants import ADAPTIVE_MAX_K, DEFAULT_CONTEXT, DEFAULT_MAX_K
from ..core.errors import UsageError, one_line
from ..core.fmt import fmt_bytes
from ..core.units import parse_batches, parse_bytes, parse_tokens
from ..drafting import DraftModel, make_method
from ..engines import versions
from ..engines.base import DRAFT_MODEL, EAGLE3
from ..fits import fit as fitmod
from ..fits import memory, search
from ..fits.fit import default_layout
from ..fits.machine import measured_json
from ..fits.machine_lookup import resolve_machine
from ..fits.memory import Settings
from ..plan import recommend as P
from ..plan.drafting_stop import policies_for
from ..probe.runner import run_synthetic
from ..probe.settings import ProbeSettings
from ..render import width
from ..render.width import command_lines, python_lines, wrap
from ..sources import load_spec
from ..speed.acceptance import Acceptance
from ..speed.adaptive import EVERY_ROUND, Adaptive
from ..speed.profile_file import load_profile
from ._common import app, emit, engine_for, say, warn
from ._methods import parse_methods, parse_workload
from ._options import (
    AcceptanceOpt,
    ContextOpt,
    EngineVersionOpt,
    GpuMemoryOpt,
    GpusOpt,
    JsonOpt,
    MachineOpt,
    MethodsOpt,
    ModelArg,
    PpOpt,
    ProfileOpt,
    RecEngineOpt,
    RecMaxKOpt,
    RemeasureOpt,
    RevisionOpt,
    TemperatureOpt,
    TpOpt,
    UtilizationOpt,
    WeightsDtypeOpt,
    WideOpt,
    WorkloadOpt,
)

DraftOpt = Annotated[str | None, typer.Option(
    "--draft", "-d", help="The draft model to plan with (same forms as the target); --candidates for several.")]
HeadOpt = Annotated[str | None, typer.Option(
    "--head", help="An EAGLE-3 head to plan with (--method eagle3): a catalogued head's repo or a directory "
                   "(config.json + safetensors), for a head the catalog does not list.")]
CandidatesOpt = Annotated[str | None, typer.Option(
    "--candidates", help="Comma-separated drafts to consider (default: catalog models sharing the target's "
                         "tokenizer).")]
KvOpt = Annotated[str | None, typer.Option("--kv-dtype", help="Only this KV cache type (default: try the "
                                                              "engine's unquantised and 8-bit types).")]
ProbeFlag = Annotated[bool, typer.Option("--probe", help="Measure costs now with a quick synthetic probe "
                                                         "(needs torch; this machine only).")]
BatchesOpt = Annotated[str, typer.Option(
    "--batch", "-b", "--parallel", "-np",
    help="Concurrent sequences. A list (1,8,32,128) prices every plan at each and finds the crossover.")]
KOpt = Annotated[int | None, typer.Option("--k", help="Judge every plan at this K (the one you deploy), even "
                                                      "when it is slower; default: the best K.", min=1, max=64)]
PMinOpt = Annotated[float | None, typer.Option(
    "--draft-p-min", help="llama.cpp: stop drafting after the first draft token under this probability (llama-server "
                          "--spec-draft-p-min); K is then the most a round drafts. Default: llama-server's 0.75 "
                          "with the best K, or every round drafting K when --k is given.", min=0.0, max=0.999)]
DraftMinOpt = Annotated[int, typer.Option("--draft-min", help="llama.cpp with --draft-p-min: drafts shorter than this "
                                                              "are dropped (--spec-draft-n-min).", min=0, max=64)]
AllOpt = Annotated[bool, typer.Option("--all", help="Show every plan, not only the top 3.")]
DraftWeightsOpt = Annotated[str | None, typer.Option(
    "--draft-weights-dtype", help="The drafts' own weight format (default: as --weights-dtype).")]


@app.command()
def recommend(
    target: ModelArg,
    machine: MachineOpt = None,
    remeasure: RemeasureOpt = False,
    gpu_memory: GpuMemoryOpt = None,
    gpus: GpusOpt = None,
    tp: TpOpt = None,
    pp: PpOpt = None,
    utilization: UtilizationOpt = None,
    context: ContextOpt = str(DEFAULT_CONTEXT),
    batch: BatchesOpt = "1",
    engine: RecEngineOpt = "auto",
    draft: DraftOpt = None,
    head: HeadOpt = None,
    candidates: CandidatesOpt = None,
    profile: ProfileOpt = None,
    probe: ProbeFlag = False,
    acceptance: AcceptanceOpt = None,
    kv_dtype: KvOpt = None,
    max_k: RecMaxKOpt = None,
    k: KOpt = None,
    weights_dtype: WeightsDtypeOpt = None,
    draft_weights_dtype: DraftWeightsOpt = None,
    temperature: TemperatureOpt = 0.0,
    workload: WorkloadOpt = "chat",
    method: MethodsOpt = None,
    draft_p_min: PMinOpt = None,
    draft_min: DraftMinOpt = 0,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
    wide: WideOpt = False,
    show_all: AllOpt = False,
    engine_version: EngineVersionOpt = None,
) -> None:
    """Rank candidate drafts x K x KV dtype that fit and are compatible; print the best plan and how to launch it.

    Exit code: 0 a plan was made (speculation or plain decoding; when the target does not fit as asked, with
    the cheapest combination of changes that fits, named in a note), 1 nothing fits, 2 bad input.

    \b
    Examples:
      planner recommend qwen2.5-7b-instruct --machine rtx-4090
      planner recommend llama-3.1-8b-instruct --machine m3-max-36gb --engine llama.cpp --context 16k
      planner recommend qwen2.5-7b-instruct --draft qwen2.5-0.5b-instruct --machine rtx-4090
      planner recommend ./my-model --candidates qwen2.5-0.5b-instruct,qwen2.5-1.5b-instruct --acceptance 0.75
      planner recommend llama-3.1-8b-instruct --method eagle3 --head ./my-eagle3-head --machine h100-sxm
      planner recommend llama-3.3-70b-instruct --machine 2x-rtx-4090 --profile probe.json --json
      planner recommend target.gguf --candidates small.gguf,tiny.gguf --machine rtx-4090
      planner recommend llama-3.1-8b-instruct --machine h100-sxm --method eagle3,ngram --workload code
    """
    width.set_wide(wide)
    batches = parse_batches(batch)
    kinds, work = parse_methods(method), parse_workload(workload)
    first_batch = batches[0]  # the first value sizes memory and ranks the plans
    spec = load_spec(target, revision=revision)
    m = resolve_machine(machine, parse_bytes(gpu_memory, what="--gpu-memory") if gpu_memory else None, gpus,
                        remeasure=remeasure)
    eng = engine_for(engine, spec, kind=m.kind)
    resolved = engines.get(eng)  # the engine, resolved once at the entry: the Engine travels down, not its name
    built = versions.parse(engine_version, eng)  # the engine build the costs are priced for (engines/versions.py)
    ctx = parse_tokens(context)
    layout = default_layout(m.n_devices, resolved, tp, pp)
    cands = _given_drafts(spec, draft, head, candidates, kinds, work, draft_weights_dtype)
    given = P.parse_acceptance(acceptance) if acceptance else None
    policy = Adaptive(draft_p_min, draft_min) if draft_p_min is not None else None
    if policy is None and k is not None:
        policy = EVERY_ROUND  # --k alone fixes K: every round drafts K (llama.cpp: --spec-draft-p-min 0)
    elif policy is None and draft_min and resolved.default_stop:
        policy = Adaptive(resolved.default_stop[0], draft_min)  # --draft-min with the engine's stop
    elif policy is None and draft_min:
        raise UsageError(f"Cannot use --draft-min on {eng}: it drafts K tokens every round (only llama.cpp stops "
                         f"drafting and drops short drafts). Drop --draft-min or use --engine llama.cpp.")
    stop = policies_for(resolved, DRAFT_MODEL, policy)[0]  # the policy a draft model's plan takes
    if max_k is not None and k is not None and k > max_k:  # as report and check refuse it
        raise UsageError(f"Cannot use --k {k} with --max-k {max_k}: expected K <= --max-k.")
    if max_k is None:  # a confidence stop drafts up to llama-server's n_max unless told otherwise
        max_k = ADAPTIVE_MAX_K if stop is not None and stop.p_min > 0 else DEFAULT_MAX_K
    if k is not None and k > max_k:
        max_k = k  # judging K needs the verify curve up to K + 1
    costs_for, measured, k_cap = None, None, max_k
    if profile or probe:
        prof = _profile(profile, spec, cands, m, ctx, max_k) if profile else _probe_now(spec, cands, ctx, max_k)
        _warn_backend(prof, eng, weights_dtype or spec.weights.dominant_dtype)
        roof = P.roofline_machine(m, layout, resolved) if m.bandwidth_bytes_per_s else None
        costs_for = P.profile_costs(prof, spec, roof, origin=profile)
        k_cap = min(max_k, len(prof.target.verify_s) - 1)
        if prof.acceptance is not None and prof.draft is not None:
            a = prof.acceptance
            lo, hi = max(0.0, a.alpha - 2 * a.alpha_std), min(1.0, a.alpha + 2 * a.alpha_std)
            measured = {prof.draft.id: Acceptance(a.alpha, lo, hi, given=f"alpha = {a.alpha:.3f} (measured)",
                                                  source=P.profile_acceptance_source(a, profile))}
    ref = target if _is_path(target) else spec.id  # launch commands name the model, not our alias
    plan = dict(context=ctx, layout=layout, kv_dtypes=[kv_dtype] if kv_dtype else None, utilization=utilization,
                weights_dtype=weights_dtype)

    def run(**asked: Any) -> Any:
        with versions.selected(built):
            return P.recommend(spec, ref, m, engine=resolved, batch=first_batch, candidates=cands, costs_for=costs_for,
                               given_acceptance=given, measured_acceptance=measured, k_max=k_cap,
                               temperature=temperature, k_fixed=k, draft_weights_dtype=draft_weights_dtype,
                               batches=batches, workload=work, methods=kinds, adaptive=policy, **asked)
    rec = run(**plan)
    if not rec.baseline_fits:
        rec = _with_cheapest_fit(rec, run, plan, spec, m, eng, first_batch)
    if as_json:
        emit({**recommendation_json(rec), **({"machine_measured": measured_json(m)} if m.measured else {})})
    else:
        for w in spec.warnings:
            warn(f"{spec.id}: {w}")
        say(recommendation_text(rec, m.display_name if m.origin == "detected" else None, show_all,
                                measured_text(m)))
    raise typer.Exit(0 if rec.baseline_fits else 1)


def _given_drafts(spec: Any, draft: str | None, head: str | None, candidates: str | None,
                  kinds: tuple[str, ...] | None, work: str, draft_weights_dtype: str | None) -> list[Any] | None:
    """--draft D, --candidates A,B and --head H as the drafting methods to rank (None: the catalog's).

    --draft is one draft model, as every other command takes it; --candidates several; --head an EAGLE-3
    head the catalog may not list (make_method reads it like `planner pair`).

    Raises:
        UsageError: --head without eagle3 among --method, or --draft / --candidates when --method leaves out
            draft_model (the draft would be dropped without a word).
    """
    refs = [r for r in dict.fromkeys(x.strip() for x in [draft or "", *(candidates or "").split(",")]) if r]
    if refs and kinds is not None and DRAFT_MODEL not in kinds:
        raise UsageError(f"Cannot use --draft/--candidates with --method {','.join(kinds)}: a draft model is "
                         f"method draft_model. Add draft_model to --method or drop the draft.")
    if head and kinds is not None and EAGLE3 not in kinds:
        raise UsageError(f"Cannot use --head with --method {','.join(kinds)}: a head drafts with method eagle3. "
                         f"Add eagle3 to --method.")
    if not refs and not head:
        return None
    out: list[Any] = []
    for r in refs:
        c = load_spec(r)
        out.append(DraftModel(spec=c, ref=r if _is_path(r) else c.id, weights_dtype=draft_weights_dtype))
    if head:
        out.append(make_method(EAGLE3, spec, head, workload=work))
    return out


def _with_cheapest_fit(rec: Any, run: Any, plan: dict[str, Any], spec: Any, m: Any, eng: str, batch: int) -> Any:
    """The target does not fit as asked: plan again with the cheapest combination of changes that fits
    the target alone (fits/search.py), or say that none does. Partial offload is left to `planner fit`
    (the speed model prices weights at device bandwidth)."""
    s = Settings(context=plan["context"], batch=batch, engine=eng, weights_dtype=plan["weights_dtype"],
                 kv_dtype=(plan["kv_dtypes"] or [None])[0])
    combos = [c for c in search.search(fitmod.Problem(spec, m, s, plan["layout"], utilization=plan["utilization"]))
              if c.problem.layout.gpu_layers is None and not c.problem.layout.cpu_moe_layers]
    if not combos:
        return replace(rec, notes=(*rec.notes, "no combination of weights, KV, utilisation, context and tp/pp "
                                                "fits the target on this machine: see 'planner fit'"))
    c = combos[0]
    q = c.problem
    new = run(context=q.settings.context, layout=q.layout, utilization=q.utilization,
              weights_dtype=q.settings.weights_dtype,
              kv_dtypes=[q.settings.kv_dtype] if q.settings.kv_dtype else plan["kv_dtypes"])
    what = " + ".join(w for w, _ in c.changes)
    flags = " ".join(f for _, f in c.changes)
    return replace(new, notes=(f"the target does not fit as asked: planned with the cheapest combination that "
                               f"fits ({what}; {flags}; ranked by quality, then context kept, then speed)",
                               *new.notes))


def _is_path(ref: str) -> bool:
    return paths.exists(ref)


def _profile(path: str, spec: Any, cands: Any, m: Any, ctx: int, k_max: int) -> Any:
    prof = load_profile(path)
    if len(prof.target.verify_s) < 2:  # before any warning: a bad input is one error line
        raise UsageError(f"Cannot plan from profile '{path}': it holds {len(prof.target.verify_s)} verify cost(s) "
                         f"(expected t_v(1) and at least t_v(2)). Probe with --max-k 1 or more.")
    if prof.unreliable:  # the probe's own sanity check failed twice (probe/sanity.py)
        warn(f"profile '{path}': {prof.unreliable}")
    if prof.target.id != spec.id:
        warn(f"profile '{path}' measured '{prof.target.id}', not '{spec.id}': its curve is used as given")
    if prof.context != ctx:
        warn(f"profile measured at context {prof.context}, planning for {ctx}")
    return prof


def _warn_backend(prof: Any, engine: str, weights: str | None) -> None:
    """The costs were measured by another engine, or at another dtype, than the command printed runs."""
    ran = engines.measured_by(prof.backend)
    if ran != engine:
        warn(f"the profile was measured with {prof.backend}, and the command runs {engine}: kernels, CUDA graphs and "
             f"per-step overheads differ, so its costs may not carry over; probe with the engine you deploy"
             + (" (planner probe --backend llamacpp)" if engine == engines.llamacpp.NAME else ""))
    if weights and prof.dtype and weights.upper() != prof.dtype.upper():
        warn(f"the profile was measured at {prof.dtype}, the plan sizes weights as {weights}: weight reads and "
             f"matmul kernels differ at another dtype")


def _probe_now(spec: Any, cands: Any, ctx: int, k_max: int) -> Any:
    """A quick synthetic probe of the target (and the first --candidates draft) on this machine."""
    draft = cands[0].resident_model() if cands else None
    warn(f"probing {spec.id}" + (f" and {draft.id}" if draft else "") + " on this machine (synthetic, "
         "default budget); other drafts' steps are scaled from the roofline")
    return run_synthetic(spec, draft, ProbeSettings(context=ctx, max_k=k_max))


def method_kind(o: Any) -> str:
    """The plan's drafting method ("none": plain decoding)."""
    return o.method.kind if o.method is not None else "none"


def draft_weights_bytes(o: Any) -> int:
    """Weight bytes the method keeps resident beside the target (0: n-gram, early exit, plain decoding)."""
    p = o.problem
    if p is None or p.draft is None:
        return 0
    return memory.weights(p.draft, p.draft_settings or p.settings)[0]


def option_json(o: Any) -> dict[str, Any]:
    a = o.acceptance
    return {"method": method_kind(o), "draft": o.draft, "draft_ref": o.draft_ref,
            "draft_weights_bytes": draft_weights_bytes(o), "k": o.k, "kv_dtype": o.kv_dtype,
            "speedup": round(o.speedup, 4), "speedup_interval": [round(x, 4) for x in o.speedup_interval],
            "verdict": o.verdict, "fits": o.fits, "headroom_bytes": o.headroom_bytes, "compatible": o.compatible,
            "fallback": o.fallback, "reasons": list(o.reasons),
            "acceptance": None if a is None else {"alpha": a.alpha, "low": a.low, "high": a.high, "given": a.given,
                                                  "source": a.source,
                                                  **({"decay": {"depth": a.decay.depth, "factor": a.decay.factor,
                                                                "source": a.decay.source}} if a.decay else {})},
            "costs_source": o.costs_source,
            "baseline_tokens_per_s": round(o.baseline_tokens_per_s, 3) if o.baseline_tokens_per_s else None,
            **({"per_batch": [batch_json(p) for p in o.per_batch], "crossover_batch": o.crossover_batch}
               if o.per_batch else {}),
            "break_even_alpha": o.prediction.break_even_alpha if o.prediction else None,
            "speedup_by_k": [round(x, 4) for x in o.prediction.speedup_by_k] if o.prediction else [],
            # how K drafts: every round (null), or stopping after the first draft token under p_min (llama.cpp)
            "drafting_stop": ({"p_min": o.stop.p_min, "n_min": o.stop.n_min}
                              if getattr(o, "stop", None) is not None and o.stop.p_min > 0 else None),
            "launch": o.launch}


def batch_json(p: Any) -> dict[str, Any]:
    return {"batch": p.batch, "k": p.k, "speedup": round(p.speedup, 4),
            "speedup_interval": [round(x, 4) for x in p.speedup_interval], "verdict": p.verdict,
            "tokens_per_s_per_seq": round(p.tokens_per_s_per_seq, 3), "tokens_per_s": round(p.tokens_per_s, 3),
            "baseline_tokens_per_s": round(p.baseline_tokens_per_s, 3), "fits": p.fits,
            "headroom_bytes": p.headroom_bytes}


def recommendation_json(rec: Any) -> dict[str, Any]:
    """The `planner recommend --json` schema (docs/recommend.md)."""
    c = rec.choice
    return {"target": rec.target, "machine": rec.machine, "engine": rec.engine, "context": rec.context,
            "batch": rec.batch, "baseline_fits": rec.baseline_fits,
            "baseline_headroom_bytes": rec.baseline_headroom_bytes,
            "tokenizer_family": rec.tokenizer_family, "tokenizer_match": rec.tokenizer_match,
            "plans": [option_json(o) for o in rec.plans],
            "recommendation": {"method": method_kind(c), "draft": c.draft,
                               "draft_weights_bytes": draft_weights_bytes(c),
                               "k": c.k if c.draft else None, "kv_dtype": c.kv_dtype,
                               "speedup": round(c.speedup, 4), "speedup_interval": list(c.speedup_interval),
                               "verdict": c.verdict, "reasons": list(c.reasons), "launch": c.launch,
                               "fits": c.fits, "headroom_bytes": c.headroom_bytes,
                               "baseline_tokens_per_s": round(c.baseline_tokens_per_s, 3)
                               if c.baseline_tokens_per_s else None},
            "notes": list(rec.notes)}


SHOWN_PLANS = 3  # rows of the plan table without --all


def _speed_cells(o: Any) -> list[str]:
    """speed-up (interval) and verdict: none for a plan that does not fit or will not run."""
    if not o.usable:
        return ["-", "-"]
    return [f"{o.speedup:.2f}x ({o.speedup_interval[0]:.2f}-{o.speedup_interval[1]:.2f})", o.verdict]


def _short(draft: str | None) -> str:
    return one_line((draft or "-").rpartition("/")[2])  # the org is in the RECOMMENDED line and the JSON


def _names(drafts: list[str]) -> str:
    """Drafts of one row: 'Llama-3.2-1B [-Instruct]' for a base and its instruct tune, else joined."""
    names = list(dict.fromkeys(_short(d) for d in drafts))
    if len(names) == 2:
        a, b = sorted(names, key=len)
        if b.startswith(a):
            return f"{a} [{b[len(a):]}]"
    return " | ".join(names)


def _method_cell(o: Any, names: str) -> str:
    """A draft model's row names the draft; another method's says which method first (eagle3: head)."""
    kind = method_kind(o)
    if kind in ("draft_model", "none") or names.startswith(kind):
        return names
    short = re.sub(rf"(?i)-?{re.escape(kind)}-?", "-", names).strip("-") or names  # the prefix says it
    return f"{kind}: {short}"


def key_runs(o: Any) -> str:
    return "yes" if o.compatible and not o.fallback else ("fallback" if o.fallback else "NO")


def key_alpha(o: Any) -> str:
    return f"{o.acceptance.alpha:.2f}" if o.acceptance else "-"


def _draft_bytes(o: Any) -> int | None:
    """The draft's resident weight bytes (equal for a base and its instruct tune), None without a draft."""
    resident = o.method.resident_model() if o.method is not None else None
    return resident.weights.resident_bytes if resident is not None else None


def plan_rows(plans: Any, limit: int | None) -> tuple[list[list[str]], int]:
    """Table rows with plans of identical figures collapsed into one (base and instruct drafts of one size,
    KV types that change no speed figure; the headroom is the first plan's, its range with --wide), in rank
    order; and how many rows `limit` left out."""
    groups: dict[tuple, list[Any]] = {}
    for o in plans:
        # what differs; a draft's size too, so only a base and its instruct tune of one size share a row
        # (an unusable 3B and 8B, both "-", once merged into one row under the 3B's headroom)
        key = (method_kind(o), o.k, *_speed_cells(o), o.fits, key_runs(o), key_alpha(o), _draft_bytes(o))
        groups.setdefault(key, []).append(o)
    rows = []
    for same in groups.values():
        o = same[0]
        lo, hi = min(x.headroom_bytes for x in same), max(x.headroom_bytes for x in same)
        a, b = fmt_bytes(lo).split(" "), fmt_bytes(hi).split(" ")
        if lo == hi or not o.usable:  # a plan that cannot run: how close the nearest comes
            head = fmt_bytes(hi)
        elif not width.is_wide():  # the row's first (ranked) plan; --wide shows the range
            head = fmt_bytes(o.headroom_bytes)
        else:
            head = f"{a[0]}-{b[0]} {a[1]}" if a[1] == b[1] and lo >= 0 else f"{fmt_bytes(lo)} to {fmt_bytes(hi)}"
        rows.append([_method_cell(o, _names([x.draft for x in same])), "/".join(dict.fromkeys(x.kv_dtype for x in same)), str(o.k),
                     *_speed_cells(o), "yes" if o.fits else "NO", head, key_runs(o), key_alpha(o)])
    if limit is None or len(rows) <= limit:
        return rows, 0
    return rows[:limit], len(rows) - limit


def measured_text(m: Any) -> str | None:
    """One line for a machine measured on this host: each figure's median and IQR, when, and from which
    saved profile (None: a catalogued machine, nothing measured)."""
    if not m.measured:
        return None
    figs = ", ".join(f"{k} {s.median / 1e9:.1f} GB/s (IQR {s.q1 / 1e9:.1f}-{s.q3 / 1e9:.1f}, {s.kept} trials)"
                     if k == "bandwidth" else f"{k} {s.median:.3g}" for k, s in m.measured.items())
    where = (f"from the saved profile {m.profile_path}" if m.profile_path
             else "now (save with planner machines detect --save)")
    return f"measured {figs} at {m.measured_at}, {where}" + (f"; {m.contention}" if m.contention else "")


def recommendation_text(rec: Any, machine_label: str | None = None, show_all: bool = False,
                        measured: str | None = None) -> str:
    lines = [f"target   {one_line(rec.target)}", *wrap(f"machine  {one_line(machine_label or rec.machine)}   engine {rec.engine}   "
                                             f"context {rec.context:,}   batch {rec.batch}"),
             *(wrap(one_line(measured), indent="         ") if measured else ()),
             *wrap(f"drafts   tokenizer family {rec.tokenizer_family or '?'} ({rec.tokenizer_match})"), ""]
    rows, left = plan_rows(rec.plans, None if show_all else SHOWN_PLANS)
    if rows:
        lines.append(width.table(rows, ["draft / method", "KV", "K", "speed-up (range)", "verdict", "fits", "headroom",
                                        "runs", "alpha"], shrink=(0, 3, 6), floor=7, hyphens=True,
                                        drop=(5,)))  # "fits" is the headroom's sign: the first to go at 80
        if left:
            lines.append(f"({left} more plan{'s' if left > 1 else ''}: --all)")
        lines += wrap(f"costs: {rec.plans[0].costs_source}; acceptance: {rec.plans[0].acceptance.source}"
                      if rec.plans[0].acceptance else "")
        lines.append("")
    c = rec.choice
    if c.draft:
        lines += wrap(f"RECOMMENDED  {method_kind(c)} {c.draft}, K={c.k}, KV {c.kv_dtype}: {c.speedup:.2f}x "
                      f"({c.speedup_interval[0]:.2f}-{c.speedup_interval[1]:.2f}x), {c.verdict}")
    else:
        lines.append("RECOMMENDED  no speculation: plain decoding")
    lines += [x for r in c.reasons for x in wrap(f"- {r}", indent="  ")]
    if c.baseline_tokens_per_s:  # the figure users hold against their own plain decode first
        with_plan = f"; with the plan {c.baseline_tokens_per_s * c.speedup:.1f}" if c.draft else ""
        lines += wrap(f"baseline: plain decoding {c.baseline_tokens_per_s:.1f} tok/s per sequence predicted{with_plan} "
                      f"(check the baseline against your own first: the speed-up is relative to it)")
    if c.per_batch:
        cross = (f"speculation stops paying at {c.crossover_batch} concurrent sequences" if c.crossover_batch
                 else f"speculation pays up to {c.per_batch[-1].batch} concurrent sequences")
        lines += wrap("under load: " + ", ".join(f"B={p.batch} {p.speedup:.2f}x (K={p.k})" for p in c.per_batch)
                      + f"; {cross} (per-sequence scheduler costs not modelled)")
    lines.append("")
    for key, value in c.launch.items():
        lines.append(f"{key}:")
        text = str(value)
        if key == "command":
            lines += command_lines(text, indent="  ")
        elif key == "convert":  # steps run in order before the command: one pasteable command each
            lines += [x for step in text.split(" && ") for x in command_lines(step, indent="  ")]
        elif key == "python":
            lines += [x for line in text.splitlines() for x in python_lines(line, indent="  ")]
        else:
            lines += [x for line in text.splitlines() for x in wrap(line, indent="  ")]
    lines += [x for n in rec.notes for x in wrap(f"note: {one_line(n)}")]
    return "\n".join(lines)
