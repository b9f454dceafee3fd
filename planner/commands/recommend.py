"""`planner recommend`: the best draft, K and KV dtype for this target on this machine, or "don't speculate"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Annotated, Any

import typer

from .. import engines
from ..core import paths
from ..core.constants import ADAPTIVE_MAX_K, DEFAULT_CONTEXT, DEFAULT_MAX_K
from ..core.errors import UsageError
from ..core.units import parse_batches, parse_bytes, parse_tokens
from ..drafting import DraftModel, make_method
from ..engines import versions
from ..engines.base import DRAFT_MODEL, EAGLE3
from ..fits import fit as fitmod
from ..fits import search
from ..fits.fit import default_layout
from ..fits.machine import measured_json
from ..fits.machine_lookup import resolve_machine
from ..fits.memory import Settings
from ..plan import recommend as P
from ..plan.acceptance_source import parse_acceptance, profile_acceptance_source
from ..plan.costs import profile_costs
from ..plan.drafting_stop import policies_for
from ..plan.request import Pricing, Target, Where, Workload
from ..probe.runner import run_synthetic
from ..probe.settings import ProbeSettings
from ..render import width
from ..render.recommend_text import measured_text, recommendation_text
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
    VerboseOpt,
    WeightsDtypeOpt,
    WideOpt,
    WorkloadOpt,
)
from ._recommend_json import recommendation_json

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
    verbose: VerboseOpt = False,
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
    given = parse_acceptance(acceptance) if acceptance else None
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
        costs_for = profile_costs(prof, spec, roof, origin=profile)
        k_cap = min(max_k, len(prof.target.verify_s) - 1)
        if prof.acceptance is not None and prof.draft is not None:
            a = prof.acceptance
            lo, hi = max(0.0, a.alpha - 2 * a.alpha_std), min(1.0, a.alpha + 2 * a.alpha_std)
            measured = {prof.draft.id: Acceptance(a.alpha, lo, hi, given=f"alpha = {a.alpha:.3f} (measured)",
                                                  source=profile_acceptance_source(a, profile))}
    ref = target if _is_path(target) else spec.id  # launch commands name the model, not our alias
    # what is asked, settled here at the edge (plan/request.py); the plan takes them whole
    asked = Target(spec, ref, candidates=cands, methods=kinds, weights_dtype=weights_dtype,
                   draft_weights_dtype=draft_weights_dtype)
    where = Where(m, resolved, layout=layout, utilization=utilization, kv_dtypes=[kv_dtype] if kv_dtype else None)
    load = Workload(context=ctx, batch=first_batch, batches=batches, prompts=work, temperature=temperature)
    pricing = Pricing(costs_for=costs_for, given_acceptance=given, measured_acceptance=measured, k_max=k_cap,
                      k_fixed=k, adaptive=policy)

    def run(asked: Target, where: Where, load: Workload) -> P.Recommendation:
        with versions.selected(built):  # the engine build the costs are priced for
            return P.recommend(asked, where, load, pricing)
    rec = run(asked, where, load)
    if not rec.baseline_fits:
        rec = _with_cheapest_fit(rec, run, asked, where, load)
    if as_json:
        emit({**recommendation_json(rec), **({"machine_measured": measured_json(m)} if m.measured else {})})
    else:
        for w in spec.warnings:
            warn(f"{spec.id}: {w}")
        say(recommendation_text(rec, m.display_name if m.origin == "detected" else None, show_all,
                                measured_text(m), explain=verbose))
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


def _with_cheapest_fit(rec: P.Recommendation, run: Callable[[Target, Where, Workload], P.Recommendation],
                       asked: Target, where: Where, load: Workload) -> P.Recommendation:
    """The target does not fit as asked: plan again with the cheapest combination of changes that fits
    the target alone (fits/search.py), or say that none does. Partial offload is left to `planner fit`
    (the speed model prices weights at device bandwidth)."""
    s = Settings(context=load.context, batch=load.batch, resolved_engine=where.engine,
                 weights_dtype=asked.weights_dtype, kv_dtype=where.kv_dtypes[0] if where.kv_dtypes else None)
    layout = where.layout or default_layout(where.machine.n_devices, where.engine)
    combos = [c for c in search.search(fitmod.Problem(asked.spec, where.machine, s, layout,
                                                      utilization=where.utilization))
              if c.problem.layout.gpu_layers is None and not c.problem.layout.cpu_moe_layers]
    if not combos:
        return replace(rec, notes=(*rec.notes, "no combination of weights, KV, utilisation, context and tp/pp "
                                                "fits the target on this machine: see 'planner fit'"))
    c = combos[0]
    q = c.problem
    new = run(replace(asked, weights_dtype=q.settings.weights_dtype),
              replace(where, layout=q.layout, utilization=q.utilization,
                      kv_dtypes=[q.settings.kv_dtype] if q.settings.kv_dtype else where.kv_dtypes),
              replace(load, context=q.settings.context))
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
