"""Search: combinations of changes that make a Problem fit, ranked by what they cost.

Why its own module: suggest.py says what each change does alone, but a 70B model on two 24 GB
cards needs several at once (int4 weights and a higher utilisation). This module walks the
combinations the engine can express (engines/*.py: weights_ladder, kv_suggestion,
partial_offload, default_split; the GPU utilisation steps below; the layouts of the machine's own
devices; a shorter context), keeps those that fit and ranks them. The ranking rule, quality
first, then speed:

  1. quality: the weights rung (0 = as given, then each step down the engine's weights_ladder),
     then the KV cache quantised (0 / 1)
  2. context given up: a shorter context than asked ranks after every full-context plan
  3. speed: decode time per token relative to the plan as asked, from the bytes one token reads
     (target weights + KV at the device bandwidth, tensor-parallel ranks in parallel, pipeline
     stages in series, offloaded layers at the host RAM bandwidth); "uncertain" (no host
     bandwidth catalogued) ranks after every known figure
  4. then the utilisation raised less, fewer changes, more headroom
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace

from ..core.constants import CPU_USABLE_FRACTION
from ..core.spec import ModelSpec
from .fit import Layout, Problem, evaluate, fits, heads_refuse_tp, last_true, max_context
from .memory import kv_format, kv_per_token
from .split import host_kv, resident_tensors

# GPU utilisation steps tried above an engine default below 1.0 (vLLM/SGLang). Assumed: above 0.97 the
# remaining 3% (0.7 GiB of a 24 GiB card) is about what CUDA graphs and the sampler take outside the
# profiled budget, so higher values risk an out-of-memory at start-up.
UTILIZATION_STEPS = (0.95, 0.97)
# A context shorter than this (or than the one asked, if smaller) is not offered: too short to be a plan.
MIN_CONTEXT = 1024
# At most this many fitting combinations are returned (the cheapest first).
MAX_RESULTS = 8


@dataclass(frozen=True)
class Combination:
    """One set of changes that fits, what it costs and the Problem it describes."""

    problem: Problem
    changes: tuple[tuple[str, str], ...]  # (what, the planner flag that asks for it)
    weights_rung: int  # 0: as given; n: the n-th step of the engine's weights_ladder
    kv_quantised: bool
    context_cut: bool
    utilization_raise: float
    headroom_bytes: int
    gpu_bytes: int  # used on the tightest device
    host_bytes: int  # weights (and offloaded KV) in host RAM
    speed_factor: float | None  # decode time per token / the plan as asked; None: uncertain
    speed_source: str

    @property
    def rank_key(self) -> tuple:
        speed = self.speed_factor if self.speed_factor is not None else math.inf
        return (self.weights_rung, self.kv_quantised, self.context_cut, speed, self.utilization_raise,
                len(self.changes), -self.headroom_bytes)


# --- the cost of a plan: bytes one decoded token reads ---------------------------------------

def _read_bytes(p: Problem) -> tuple[int, int]:
    """(bytes read from GPU memory per rank, bytes read from host RAM) for one decoded token.

    Weights: every resident tensor once per token, routed experts at experts_per_token / experts
    (MoE), the input embedding not at all (one row); tensor-parallel ranks read 1/tp each; KV:
    the whole cache at the planned context.
    """
    spec, s, lay = p.target, p.settings, p.layout
    first = lay.first_gpu_layer(spec.n_layers)
    share = (spec.moe.experts_per_token / spec.moe.experts) if spec.moe and spec.moe.experts else 1.0
    gpu = host = 0.0
    for t in resident_tensors(spec, s):
        if t.group == "embedding" and not (spec.tied_embeddings and not _has_head(spec, s)):
            continue
        n = t.nbytes * (share if t.group == "experts" else 1.0)
        on_host = t.layer is not None and t.layer < spec.n_layers and (
            t.layer < first or (t.group == "experts" and t.layer < lay.cpu_moe_layers))
        if on_host:
            host += n
        else:
            gpu += n
    devs = evaluate(p, s.context, s.batch)
    kv_gpu = sum(sh.kv_cache_bytes for d in devs for sh in d.shares if sh.role == "target")
    return int(gpu / lay.tp + kv_gpu / lay.tp), int(host + host_kv(spec, s, s.context, first))


def _has_head(spec: ModelSpec, s) -> bool:
    return any(t.group == "lm_head" for t in resident_tensors(spec, s))


def decode_seconds(p: Problem) -> tuple[float | None, str]:
    """Seconds one decoded token spends reading memory: GPU bytes / device bandwidth + host bytes /
    host bandwidth; None when a bandwidth it needs is not known."""
    m = p.machine
    gpu, host = _read_bytes(p)
    if not m.bandwidth_bytes_per_s:
        return None, f"uncertain: '{m.display_name}' has no memory-bandwidth figure"
    t = gpu / m.bandwidth_bytes_per_s
    if host:
        if not m.host_bandwidth_bytes_per_s:
            return None, ("uncertain: offloaded layers run at host RAM bandwidth, which the machine description "
                          "does not give (host_bandwidth_bytes_per_s)")
        t += host / m.host_bandwidth_bytes_per_s
        return t, "bytes read per token: device bandwidth, offloaded layers at host RAM bandwidth"
    return t, "bytes read per token at the device bandwidth"


# --- the combinations ----------------------------------------------------------------------

def _weights(p: Problem) -> list[tuple[int, str | None]]:
    s = p.settings
    e = s.resolved_engine
    now = sum(t.nbytes for t in resident_tensors(p.target, s))
    out: list[tuple[int, str | None]] = [(0, s.weights_dtype)]
    for scheme in e.weights_ladder:
        new = replace(s, weights_dtype=scheme, group_size=e.quant_group_size or s.group_size)
        if sum(t.nbytes for t in resident_tensors(p.target, new)) < now:
            out.append((len(out), scheme))
    return out


def _kvs(p: Problem) -> list[str | None]:
    s = p.settings
    cand = s.resolved_engine.kv_suggestion
    if cand is None or s.kv_dtype is not None or kv_per_token(p.target, replace(s, kv_dtype=cand)) >= \
            kv_per_token(p.target, s):
        return [s.kv_dtype]
    return [s.kv_dtype, cand]


def _utilizations(p: Problem) -> list[float | None]:
    e = p.settings.resolved_engine
    if p.utilization is not None or p.machine.kind != "gpu" or e.gpu_utilization >= 1.0:
        return [p.utilization]
    return [None, *(u for u in UTILIZATION_STEPS if u > e.gpu_utilization)]


def _layouts(p: Problem) -> list[Layout]:
    """The layout asked, and the other tp x pp splits of the same devices the engine runs."""
    lay, e = p.layout, p.settings.resolved_engine
    out = [lay]
    n = lay.n_devices
    if n == 1 or lay.draft_device is not None or e.default_split != "tp":
        return out  # llama.cpp splits by layers, MLX runs on one device
    for tp in range(1, n + 1):
        pp = n // tp
        if tp * pp != n or (tp, pp) == (lay.tp, lay.pp) or pp > p.target.n_layers:
            continue
        if tp > 1 and any(heads_refuse_tp(x, tp, p.settings.resolved_engine) for x in (p.target, p.draft) if x):  # the rule fit refuses with (fit.py)
            continue
        out.append(replace(lay, tp=tp, pp=pp))
    return out


def _combos(p: Problem) -> Iterator[tuple[Problem, int, tuple[tuple[str, str], ...], float]]:
    s = p.settings
    base_u = p.utilization if p.utilization is not None else s.resolved_engine.gpu_utilization
    for rung, w in _weights(p):
        for kv in _kvs(p):
            for u in _utilizations(p):
                for lay in _layouts(p):
                    ts = replace(s, weights_dtype=w, kv_dtype=kv)
                    if w != s.weights_dtype:
                        ts = replace(ts, group_size=s.resolved_engine.quant_group_size or s.group_size)
                    ds = replace(p.draft_settings or s, kv_dtype=kv)
                    q = replace(p, settings=ts, draft_settings=ds if p.draft else None, utilization=u, layout=lay)
                    changes = []
                    if w != s.weights_dtype:
                        changes.append((f"weights {w}", f"--weights-dtype {w}"))
                    if kv != s.kv_dtype:
                        changes.append((f"KV {kv_format(kv, p.target.dtype, s.resolved_engine)}", f"--kv-dtype {kv}"))
                    if u != p.utilization:
                        changes.append((f"utilisation {u}", f"--utilization {u}"))
                    if lay != p.layout:
                        changes.append((f"tp {lay.tp} x pp {lay.pp}", f"--tp {lay.tp} --pp {lay.pp}"))
                    yield q, rung, tuple(changes), (u - base_u) if u is not None else 0.0


def _fits_at(q: Problem, context: int) -> bool:
    return fits(evaluate(q, context, q.settings.batch))


def _largest(pred, lo: int, hi: int) -> int | None:
    """Largest n in [lo, hi] with pred(n) for a monotone (true, then false) pred; None if none."""
    if lo > hi or not pred(lo):
        return None
    return last_true(pred, lo, hi)


def _offloads(q: Problem) -> Iterator[tuple[Problem, tuple[str, str]]]:
    """llama.cpp: the most layers (-ngl N) that fit, and for MoE the fewest --n-cpu-moe that fit."""
    if not q.settings.resolved_engine.partial_offload or q.machine.kind == "cpu" or q.layout.draft_device \
            is not None:
        return
    n, ctx = q.target.n_layers, q.settings.context
    if q.target.moe is not None:  # fewest layers whose experts go to RAM: fits(k) is false, then true
        k = _largest(lambda j: not _fits_at(replace(q, layout=replace(q.layout, cpu_moe_layers=j)), ctx), 0, n)
        if k is not None and k < n:
            k += 1
            yield (replace(q, layout=replace(q.layout, cpu_moe_layers=k)),
                   (f"experts of {k} of {n} layers in RAM", f"--n-cpu-moe {k}"))
    ngl = _largest(lambda g: _fits_at(replace(q, layout=replace(q.layout, gpu_layers=g)), ctx), q.layout.pp + 1, n)
    if ngl is not None:
        yield (replace(q, layout=replace(q.layout, gpu_layers=ngl)),
               (f"{ngl - 1} of {n} layers + output on GPU", f"--gpu-layers {ngl}"))


@dataclass(frozen=True)
class OffloadRow:
    """One -ngl N of a partial offload: what the tightest GPU uses, what stays in host RAM."""

    gpu_layers: int
    used_bytes: int
    headroom_bytes: int
    host_bytes: int


def offload_ledger(q: Problem, around: int, *, steps: tuple[int, ...] = (2, 1, 0, -4, -8, -16)) -> list[OffloadRow]:
    """The ledger at -ngl values around `around` (one more layer on the GPUs does not fit, fewer leave
    room): for each, the tightest device's use and headroom and the bytes in host RAM."""
    n = q.target.n_layers
    rows = []
    for g in sorted({around + d for d in steps if q.layout.pp + 1 <= around + d <= n + 1}, reverse=True):
        r = replace(q, layout=replace(q.layout, gpu_layers=g))
        devs = evaluate(r, r.settings.context, r.settings.batch)
        tight = min(devs, key=lambda d: d.headroom_bytes)
        rows.append(OffloadRow(g, tight.used_bytes, tight.headroom_bytes, sum(d.host_bytes for d in devs)))
    return rows


def _host_ok(q: Problem, host: int) -> bool:
    m = q.machine
    return m.host_memory_bytes is None or host <= m.host_memory_bytes * CPU_USABLE_FRACTION


def search(p: Problem) -> tuple[Combination, ...]:
    """Every combination of changes that fits, cheapest first (the module's ranking rule).

    Args:
        p: the problem as asked (it need not fit).

    Returns:
        Up to MAX_RESULTS fitting combinations, none of which holds another's changes and more (a
        change that is not needed is not offered); empty when none fits (or `p` fits as it is).

    Raises:
        UsageError: a layout the machine cannot hold.
    """
    if _fits_at(p, p.settings.context):
        return ()
    ref_s, _ = decode_seconds(p)
    want = p.settings.context
    floor = min(MIN_CONTEXT, want)
    found: list[Combination] = []

    def add(q: Problem, rung: int, changes: tuple[tuple[str, str], ...], raise_u: float, cut: bool) -> None:
        devs = evaluate(q, q.settings.context, q.settings.batch)
        host = sum(d.host_bytes for d in devs)
        if not _host_ok(q, host):
            return
        t, src = decode_seconds(q)
        tight = min(devs, key=lambda d: d.headroom_bytes)
        factor = t / ref_s if (t is not None and ref_s) else None
        found.append(Combination(q, changes, rung, q.settings.kv_dtype != p.settings.kv_dtype, cut, raise_u,
                                 tight.headroom_bytes, tight.used_bytes, host, factor, src))

    for q, rung, changes, raise_u in _combos(p):
        if changes and _fits_at(q, want):
            add(q, rung, changes, raise_u, False)
            continue
        for oq, what in _offloads(q):
            add(oq, rung, (*changes, what), raise_u, False)
        mc, _ = max_context(q)
        if floor <= mc < want:
            add(replace(q, settings=replace(q.settings, context=mc)), rung,
                (*changes, (f"context {mc:,}", f"--context {mc}")), raise_u, True)
    minimal = [c for c in found if not any(set(o.changes) < set(c.changes) for o in found)]
    return tuple(sorted(minimal, key=lambda c: c.rank_key)[:MAX_RESULTS])
