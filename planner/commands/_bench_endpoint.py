"""`planner bench TARGET --draft D --endpoint URL`: measure the deployment a server runs, beside the plan.

Why its own module: the closed loop (drive a live server, read its engine's counters, predict the
same target, draft, K, engine and machine, and compare) shares nothing with the torch bench in
commands/bench.py but the command name; it never imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import engines
from ..bench import endpoint as E
from ..bench.endpoint_profile import Counted, Served, build_profile, measured_costs, tokens_per_round
from ..bench.http_endpoint import Endpoint, exchange_json, parse_endpoint
from ..core import paths
from ..core.constants import DEFAULT_CONTEXT, DEFAULT_MAX_K
from ..core.errors import EndpointError, UsageError
from ..core.fmt import tabulate
from ..core.spec import ModelSpec
from ..core.units import parse_tokens
from ..drafting import DraftingMethod, DraftModel
from ..fits.fit import default_layout
from ..fits.machine import Machine
from ..fits.machine_lookup import resolve_machine
from ..fits.memory import Settings
from ..plan import recommend as P
from ..plan.costs import roofline_verify
from ..plan.request import Pricing, Target, Where, Workload
from ..plan.roof import roofline_machine
from ..probe.acceptance import Prompt, load_prompts
from ..sources import load_spec
from ..speed import roofline
from ..speed.acceptance import accepted_per_drafted
from ..speed.adaptive import EVERY_ROUND
from ..speed.model import Costs
from ..speed.profile_file import save_profile
from ._common import emit, say, warn

LLAMA = E.LLAMA  # --engine's default: the engine whose per-request timings the loop reads best
KIND_OF_WORKLOAD = {"chat": ("chat",), "code": ("code",), "reasoning": ("math",), "prose": ("prose",),
                    "math": ("math",), "all": ("chat", "code", "math", "prose")}


@dataclass(frozen=True)
class Bench:
    """One closed-loop bench as the flags set it: the target and draft, the machine, the engine and the build
    its server reports, the endpoints, context, K, the load (tokens, concurrency, workload, temperature) and
    the prompts file (None: the bundled prompts)."""

    spec: ModelSpec
    dspec: ModelSpec
    machine: Machine
    engine: str
    build: str
    ep: Endpoint
    bep: Endpoint | None
    context: int
    k: int
    tokens: int
    concurrency: int
    workload: str
    temperature: float
    prompts: str | None


@dataclass(frozen=True)
class Predicted:
    """The planner's answer for the deployment: speeds, acceptance and the costs behind them."""

    tokens_per_s: float
    baseline_tokens_per_s: float
    speedup: float
    acceptance_rate: float
    mean_accepted_per_round: float
    alpha: float
    acceptance_source: str
    costs: Costs


def bench_endpoint(target: str, draft: str | None, *, endpoint: str, engine: str, workload: str,
                   prompts: str | None, requests: int, concurrency: int, baseline_endpoint: str | None,
                   k: int | None, tokens: int, temperature: float, machine: str | None, context: str | None,
                   timeout_s: float, save_to: str | None, as_json: bool) -> int:
    """Run the closed loop and print it; returns the exit code (0 speculation faster or no baseline, 1 slower).

    Raises:
        UsageError: bad flags; EndpointError: the server is down, slow or answers something else.
    """
    if not draft:
        raise UsageError("Cannot bench --endpoint without --draft (expected the draft the server runs, a .gguf "
                         "file or model folder): the prediction needs it.")
    eng = engines.canonical(engine)
    if eng not in E.ENGINES:
        raise UsageError(f"Cannot bench --endpoint with --engine {engine} (expected one of {', '.join(E.ENGINES)}).")
    ep = parse_endpoint(endpoint)
    bep = parse_endpoint(baseline_endpoint, what="--baseline-endpoint") if baseline_endpoint else None
    reqs = _requests(load_prompts(prompts), workload, requests, custom=prompts is not None)
    spec, dspec = load_spec(target), load_spec(draft)
    m = resolve_machine(machine or "auto")
    ctx = parse_tokens(context) if context else DEFAULT_CONTEXT
    pred, kk = _predict(spec, target, DraftModel(spec=dspec, ref=draft), m, eng, ctx, k, temperature)
    if k is None:
        warn(f"--k not given: comparing with the planner's best K = {kk}; pass the K the server drafts "
             f"(llama-server --spec-draft-n-max) for a like-for-like comparison")
    build = _build_info(ep, eng, timeout_s)

    def progress(msg: str) -> None:
        say(f"bench: {msg}", err=True)

    progress(f"warm-up request to {ep.url}")
    E.run(ep, eng, reqs[:1], tokens=min(tokens, 8), concurrency=1, temperature=temperature, timeout_s=timeout_s)
    spec_run = E.run(ep, eng, reqs, tokens=tokens, concurrency=concurrency, temperature=temperature,
                     timeout_s=timeout_s, progress=progress)
    base_tps, base_why = _baseline(ep, bep, eng, reqs, tokens, concurrency, temperature, timeout_s, progress)
    bench = Bench(spec=spec, dspec=dspec, machine=m, engine=eng, build=build, ep=ep, bep=bep, context=ctx, k=kk,
                  tokens=tokens, concurrency=concurrency, workload=workload, temperature=temperature, prompts=prompts)
    doc = result_json(bench, spec_run, base_tps, base_why, pred)
    if save_to:
        _save(save_to, doc, bench, spec_run, base_tps, pred)
    if as_json:
        emit(doc)
    else:
        say(endpoint_text(doc))
    speedup = doc["measured"]["speedup"]
    return 1 if speedup is not None and speedup <= 1.0 else 0


def _requests(plist: Sequence[Prompt], workload: str, n: int, *, custom: bool) -> list[E.Request]:
    """n requests cycling over the prompts of the workload's kind (a --prompts file: all of them)."""
    kinds = KIND_OF_WORKLOAD.get(workload.strip().lower())
    if kinds is None:
        raise UsageError(f"Cannot bench --workload '{workload}' (expected one of {', '.join(KIND_OF_WORKLOAD)}).")
    chosen = list(plist) if custom else [p for p in plist if p.kind in kinds]
    if not chosen:
        raise UsageError(f"Cannot bench --workload {workload}: no prompt of that kind (expected one in the prompts).")
    return [E.Request(p.kind, p.ids if p.ids is not None else p.text) for p in (chosen[i % len(chosen)]
                                                                                 for i in range(n))]


def _predict(spec: ModelSpec, target_ref: str, method: DraftModel, m: Machine, eng: str, ctx: int, k: int | None,
             temperature: float) -> tuple[Predicted, int]:
    """The plan for exactly this pair: `recommend` with this draft alone, at K (or its best K)."""
    resolved = engines.get(eng)  # the engine, resolved once: the Engine travels down, not its name
    layout = default_layout(m.n_devices, resolved, None, None)
    roof = roofline_machine(m, layout, resolved)
    k_max = max(DEFAULT_MAX_K, k or 0)
    seen: dict[str, Costs] = {}

    def costs_for(meth: DraftingMethod, s: Settings) -> Costs:  # the roofline, as recommend's default, kept for the profile
        verify = roofline.verify_costs(spec, roof, context=s.context, n_max=k_max + 1, settings=s)
        c = roofline_verify(verify, meth.step_s(roof, s), roof.name, s)
        seen.setdefault(s.kv_dtype or "auto", c)
        return c

    stop = EVERY_ROUND if resolved.confidence_stop else None
    rec = P.recommend(Target(spec, target_ref if paths.exists(target_ref) else spec.id, candidates=[method]),
                      Where(m, resolved, layout=layout), Workload(context=ctx, temperature=temperature),
                      Pricing(costs_for=costs_for, k_max=k_max, k_fixed=k, adaptive=stop))
    opts = [(o, o.prediction) for o in rec.plans if o.draft == method.label and o.prediction is not None]
    if not opts:
        raise UsageError(f"Cannot predict {spec.id} with draft {method.label} on {eng}: no plan was priced.")
    o, pr = opts[0]
    kk = o.k
    alpha = o.acceptance.alpha if o.acceptance is not None else float("nan")
    costs = seen.get(o.kv_dtype, next(iter(seen.values())))
    base = 1.0 / costs.verify_s[0]
    return Predicted(tokens_per_s=base * o.speedup, baseline_tokens_per_s=base, speedup=o.speedup,
                     acceptance_rate=accepted_per_drafted(alpha, kk), mean_accepted_per_round=pr.tokens_per_round - 1,
                     alpha=alpha, acceptance_source=o.acceptance.source if o.acceptance else "unknown",
                     costs=costs), kk


def _build_info(ep: Endpoint, eng: str, timeout_s: float) -> str:
    """The engine's build as the server reports it (llama-server /props build_info,
    tools/server/server-context.cpp:4614 at 0c1e570; vLLM /version), or 'unknown'."""
    path = "/props" if eng == E.LLAMA else "/version" if eng == E.VLLM else None
    if path is None:
        return "unknown"
    try:
        doc = exchange_json(ep, "GET", path, timeout_s=timeout_s)
    except EndpointError:
        return "unknown"  # an older server without the route still benches
    v = doc.get("build_info") or doc.get("version")
    return str(v)[:200] if isinstance(v, (str, int, float)) else "unknown"


def _baseline(ep: Endpoint, bep: Endpoint | None, eng: str, reqs: list[E.Request], tokens: int, concurrency: int,
              temperature: float, timeout_s: float, progress: Callable[[str], None]) -> tuple[float | None, str | None]:
    """Plain decoding's tokens/s on the same prompts, or None and why it could not be measured."""
    if bep is not None:
        r = E.run(bep, eng, reqs, tokens=tokens, concurrency=concurrency, temperature=temperature,
                  timeout_s=timeout_s, baseline=eng == E.LLAMA, progress=progress)
        return r.tokens_per_s, None
    if eng != E.LLAMA:
        return None, (f"{eng} fixes speculation at launch (no per-request switch): pass --baseline-endpoint, a "
                      f"second server without the draft")
    r = E.run(ep, eng, reqs, tokens=tokens, concurrency=concurrency, temperature=temperature, timeout_s=timeout_s,
              baseline=True, progress=progress)
    drafted = sum(s.drafted or 0 for s in r.samples)
    if drafted:
        return None, (f"the server ignored the per-request \"speculative.n_max\": 0 and drafted {drafted} tokens "
                      f"(builds since the server-schema rewrite compile it out): pass --baseline-endpoint, a second "
                      f"llama-server without -md")
    return r.tokens_per_s, None


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not b or not math.isfinite(a) or not math.isfinite(b):
        return None
    return round(a / b, 4)


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None or not math.isfinite(x) else round(x, nd)


def result_json(b: Bench, run: E.Measured, base_tps: float | None, base_why: str | None,
                pred: Predicted) -> dict[str, Any]:
    """The `bench --endpoint --json` document (docs/bench.md): measured, predicted and their ratio."""
    engine, ep, bep, k = b.engine, b.ep, b.bep, b.k
    rate = run.acceptance_rate
    if run.rounds and run.accepted is not None:  # both counters come from the same /metrics scrape
        mean_acc, how = run.accepted / run.rounds, f"{engine} counted {run.rounds:.0f} rounds"
    elif run.length_gauge is not None:
        mean_acc, how = run.length_gauge - 1.0, "sglang:spec_accept_length - 1 (the last batch)"
    elif rate is not None:
        mean_acc, how = rate * k, f"accepted / drafted x K (every round drafts K = {k})"
    else:
        mean_acc, how = None, "no drafts counted"
    speedup = run.tokens_per_s / base_tps if base_tps else None
    measured = {"tokens_per_s": _r(run.tokens_per_s), "throughput_tokens_per_s": _r(run.throughput_tokens_per_s),
                "ttft_s": _r(run.ttft_s, 6), "acceptance_rate": _r(rate), "mean_accepted_per_round": _r(mean_acc),
                "mean_accepted_per_round_from": how, "per_position": [round(x, 4) for x in run.per_position],
                "by_kind": {kk: round(v, 4) for kk, v in run.by_kind.items()},
                "drafted": run.drafted, "accepted": run.accepted, "rounds": run.rounds,
                "baseline_tokens_per_s": _r(base_tps), "baseline_reason": base_why, "speedup": _r(speedup),
                "requests": run.requests, "tokens": run.tokens,
                "source": f"{engine} at {ep.url}" + (f"; baseline at {bep.url}" if bep else "")
                          + (f"; {run.gauge_note}" if run.gauge_note else "")}
    predicted = {"tokens_per_s": _r(pred.tokens_per_s), "baseline_tokens_per_s": _r(pred.baseline_tokens_per_s),
                 "speedup": _r(pred.speedup), "acceptance_rate": _r(pred.acceptance_rate),
                 "mean_accepted_per_round": _r(pred.mean_accepted_per_round), "alpha": _r(pred.alpha),
                 "costs_source": pred.costs.source, "acceptance_source": pred.acceptance_source}
    both: tuple[tuple[str, float | None, float | None], ...] = (
        ("tokens_per_s", run.tokens_per_s, pred.tokens_per_s),
        ("baseline_tokens_per_s", base_tps, pred.baseline_tokens_per_s), ("speedup", speedup, pred.speedup),
        ("acceptance_rate", rate, pred.acceptance_rate),
        ("mean_accepted_per_round", mean_acc, pred.mean_accepted_per_round))
    ratio = {key: _ratio(_r(mv), _r(pv)) for key, mv, pv in both}  # of the rounded figures shown above
    return {"target": b.spec.id, "draft": b.dspec.id, "engine": engine, "build": b.build, "endpoint": ep.url,
            "baseline_endpoint": bep.url if bep else None, "machine": b.machine.name, "k": k, "tokens": b.tokens,
            "concurrency": b.concurrency, "workload": b.workload, "measured": measured, "predicted": predicted,
            "ratio": ratio}


def _save(path: str, doc: dict, b: Bench, run: E.Measured, base_tps: float | None, pred: Predicted) -> None:
    """--save-profile: what was measured, in the probe's profile format."""
    spec, dspec, m, eng, build, ctx, k, temperature = (b.spec, b.dspec, b.machine, b.engine, b.build, b.context, b.k,
                                                       b.temperature)
    rate = run.acceptance_rate
    mean_acc = doc["measured"]["mean_accepted_per_round"]
    if rate is None or mean_acc is None:
        raise EndpointError(f"Cannot save a profile from '{doc['endpoint']}': the server counted no drafts (expected "
                            f"a server running the draft). Check that it was launched with the draft.")
    tau = tokens_per_round(mean_acc, 1.0)
    verify, t_d, notes = measured_costs(pred.costs, k=k, baseline_tokens_per_s=base_tps,
                                        spec_tokens_per_s=run.tokens_per_s, tau=tau)
    drafted = run.drafted if run.drafted and run.drafted > 1 else float(run.requests)
    served = Served(target_id=spec.id, draft_id=dspec.id, engine=eng, build=build, device=m.kind,
                    device_name=m.display_name, dtype=spec.weights.dominant_dtype or "unknown", context=ctx, k=k,
                    temperature=temperature)
    counted = Counted(accepted=rate * drafted, drafted=drafted, requests=run.requests, per_position=run.per_position,
                      by_kind=run.by_kind, source=f"measured by planner bench --endpoint {doc['endpoint']} ({eng} "
                                                  f"{build}, {run.requests} requests, K={k})")
    prof = build_profile(served, Costs(tuple(verify), t_d, pred.costs.overhead_s), counted,
                         baseline_measured=base_tps is not None, notes=notes)
    save_profile(prof, path, inputs=[x for x in (b.prompts,) if x])
    warn(f"profile written to {path}")


def endpoint_text(doc: dict[str, Any]) -> str:
    """The human table: each measured figure beside its prediction and their ratio."""
    me, pr, ra = doc["measured"], doc["predicted"], doc["ratio"]

    def f(x: Any, unit: str = "") -> str:
        return "-" if x is None else f"{x:.3f}{unit}" if isinstance(x, float) else str(x)

    rows = [["decode tokens/s", f(me["tokens_per_s"]), f(pr["tokens_per_s"]), f(ra["tokens_per_s"], "x")],
            ["baseline tokens/s", f(me["baseline_tokens_per_s"]), f(pr["baseline_tokens_per_s"]),
             f(ra["baseline_tokens_per_s"], "x")],
            ["speed-up", f(me["speedup"], "x"), f(pr["speedup"], "x"), f(ra["speedup"], "x")],
            ["accepted / drafted", f(me["acceptance_rate"]), f(pr["acceptance_rate"]), f(ra["acceptance_rate"], "x")],
            ["accepted per round", f(me["mean_accepted_per_round"]), f(pr["mean_accepted_per_round"]),
             f(ra["mean_accepted_per_round"], "x")],
            ["time to first token", f(me["ttft_s"], " s"), "-", "-"]]
    head = (f"{doc['target']} + {doc['draft']} on {doc['engine']} ({doc['build']}) at {doc['endpoint']}, "
            f"K={doc['k']}, {me['requests']} requests x {doc['tokens']} tokens, concurrency {doc['concurrency']}")
    lines = [head, tabulate(rows, headers=["", "measured", "predicted", "ratio"], tablefmt="simple",
                            disable_numparse=True)]
    if me["baseline_reason"]:
        lines.append(f"baseline: not measured: {me['baseline_reason']}")
    if me["per_position"]:
        lines.append("per-position acceptance: " + ", ".join(f"{x:.2f}" for x in me["per_position"]))
    lines.append(f"predicted from: costs {pr['costs_source']}; acceptance {pr['acceptance_source']}")
    return "\n".join(lines)
