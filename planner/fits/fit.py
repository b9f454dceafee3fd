"""Fit: split the memory ledger over a machine's devices, give the verdict, the limits and the fixes.

Pure computation over ModelSpec + Machine. The formulas for weights, KV cache and
activations live in memory.py; this module only decides what lands on which device:

  tensor parallel t:  sharded weights / t (embedding and lm_head too where the engine shards the
                      vocabulary), replicated groups whole on every rank; KV heads max(kv_heads // t, 1)
                      per rank (MLA latent: one latent row, replicated); q heads, FFN width and
                      recurrent channels / t for the activations; NCCL buffers per rank (constants.py)
  pipeline parallel p: layers split into p stages (vLLM get_pp_indices; llama.cpp floor(il * p / L)),
                      embedding on the first stage, final norm + lm_head (+ a tied copy) and the
                      logits on the last
  per device:         used = sum(models' weights + KV + activations) + runtime overhead (+ NCCL);
                      budget = floor(memory x utilisation), capped by what is free, minus the
                      engine's margin; headroom = budget - used

The largest context (and batch) is an exact integer search: KV and activations are monotone
in both, and the engine's rounding (llama.cpp pads to 256, vLLM to 16-token blocks) happens
inside memory.py, so `fits(n)` is a step function and binary search finds its last step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .. import engines
from ..core.constants import (
    CPU_USABLE_FRACTION,
    FIT_MAX_BATCH,
    FIT_MAX_GPUS,
    HOST_OVERHEAD_BYTES,
    MAX_CONTEXT,
)
from ..core.errors import UsageError
from ..core.spec import MLA, LayerSpec, ModelSpec, TensorInfo
from . import memory
from .machine import Device, Machine, apple_working_set_fraction, with_overrides
from .memory import (
    Ledger,
    Settings,
    activations,
    kv_cache,
    kv_format,
    kv_per_token,
    ledger,
)

# Engine facts used here live in the engine files (engines/*.py): tp_unsplit_groups (tensor groups kept
# whole on every tensor-parallel rank; vLLM/SGLang shard embedding and lm_head, transformers' tp_plan
# not embed_tokens, llama.cpp's row split only the layers' matrices), tp_main_device_only (llama.cpp
# keeps the unsplit rest on the main GPU), host_input_embedding (llama.cpp keeps the input embedding
# in RAM), tied_copy_on_last_stage, kv_suggestion and weights_ladder (the suggestions' ladders).
SUGGESTION_ORDER = ("kv_dtype", "context", "batch", "draft", "weights", "gpus", "no_draft")


@dataclass(frozen=True)
class Layout:
    """How models are spread: tensor parallel `tp` x pipeline parallel `pp` devices (stage-major:
    device = stage * tp + rank). The draft follows the target's layout unless `draft_device` pins
    it, whole, to one device."""

    tp: int = 1
    pp: int = 1
    draft_device: int | None = None

    @property
    def n_devices(self) -> int:
        return self.tp * self.pp


@dataclass(frozen=True)
class Budget:
    """What one device may hold: floor(memory x fraction), capped by free memory, minus the margin."""

    index: int
    name: str
    kind: str
    memory_bytes: int
    fraction: float
    free_bytes: int | None
    margin_bytes: int
    budget_bytes: int
    source: str


@dataclass(frozen=True)
class Share:
    """One model's bytes on one device."""

    role: str
    id: str
    weights_bytes: int
    kv_cache_bytes: int
    activation_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_cache_bytes + self.activation_bytes


@dataclass(frozen=True)
class DeviceFit:
    """The per-device ledger row: budget, what the models put there, overhead, headroom."""

    budget: Budget
    shares: tuple[Share, ...]
    overhead_bytes: int
    comm_bytes: int
    host_bytes: int  # weights the engine keeps in host RAM for this device's models (not counted here)

    @property
    def used_bytes(self) -> int:
        return sum(s.total_bytes for s in self.shares) + self.overhead_bytes + self.comm_bytes

    @property
    def headroom_bytes(self) -> int:
        return self.budget.budget_bytes - self.used_bytes


@dataclass(frozen=True)
class Suggestion:
    """One change on its own, and the headroom it leaves on the tightest device."""

    kind: str
    change: str
    value: str | int
    headroom_bytes: int
    fits: bool


@dataclass(frozen=True)
class Problem:
    """Everything a fit depends on; `evaluate` is a pure function of it and (context, batch)."""

    target: ModelSpec
    machine: Machine
    settings: Settings
    layout: Layout = field(default_factory=Layout)
    draft: ModelSpec | None = None
    draft_settings: Settings | None = None  # default: `settings` (a suggestion may change the target's only)
    utilization: float | None = None


@dataclass(frozen=True)
class FitResult:
    """Verdict, per-device ledger, limits, what dominates, and the fixes when it does not fit."""

    problem: Problem
    devices: tuple[DeviceFit, ...]
    max_context: int
    max_context_limit: str  # "memory" | "model" (the target's max context fits)
    max_batch: int
    dominant: dict
    suggestions: tuple[Suggestion, ...]
    ledger: Ledger

    @property
    def fits(self) -> bool:
        return all(d.headroom_bytes >= 0 for d in self.devices)

    @property
    def headroom_bytes(self) -> int:
        return min(d.headroom_bytes for d in self.devices)


# --- budgets --------------------------------------------------------------------------

def device_budget(dev: Device, engine: str, utilization: float | None = None) -> Budget:
    """Bytes an engine may fill on `dev`.

    GPU: memory x (--utilization or the engine's share: vLLM 0.9, others 1.0); Apple: memory x the
    Metal working-set share; CPU: RAM x the share left after OS headroom. Capped by the free
    memory detection saw, minus the engine's margin (llama.cpp 1 GiB on GPU/Metal devices).

    Raises:
        UsageError: a utilisation outside (0, 1].
    """
    if utilization is not None and not 0 < utilization <= 1:
        raise UsageError(f"Cannot use --utilization {utilization}: expected a fraction in (0, 1].")
    if dev.kind == "gpu":
        frac = utilization if utilization is not None else engines.get(engine).gpu_utilization
        why = "--utilization" if utilization is not None else f"{engine} default"
    elif dev.kind == "apple":
        frac = utilization or dev.usable_fraction or apple_working_set_fraction(dev.memory_bytes)
        why = "--utilization" if utilization is not None else "Metal GPU working set of unified memory"
    else:
        frac = utilization or dev.usable_fraction or CPU_USABLE_FRACTION
        why = "--utilization" if utilization is not None else "RAM left after OS headroom"
    margin = engines.get(engine).device_margin_bytes if dev.kind != "cpu" else 0
    cap = math.floor(dev.memory_bytes * frac)
    src = f"{frac:.4g} x memory ({why})"
    if dev.free_bytes is not None and dev.free_bytes < cap:
        cap, src = dev.free_bytes, f"free memory seen at detection (< {frac:.4g} x memory)"
    if margin:
        src += f" - {margin} B {engine} margin"
    return Budget(dev.index, dev.name, dev.kind, dev.memory_bytes, frac, dev.free_bytes, margin, cap - margin, src)


def overhead_for(kind: str, s: Settings) -> tuple[int, str]:
    """Runtime overhead per device: the engine's GPU context, none on Metal/CPU, or --overhead."""
    if s.overhead_bytes is not None:
        return s.overhead_bytes, "given (--overhead)"
    if kind == "gpu":
        e = engines.get(s.engine)
        return e.overhead_bytes, e.overhead_source
    return HOST_OVERHEAD_BYTES, "no CUDA context on Metal/CPU runs (constants.HOST_OVERHEAD_BYTES)"


# --- splitting one model over devices ----------------------------------------------------

def stage_ranges(n_layers: int, pp: int, engine: str) -> tuple[tuple[int, int], ...]:
    """[start, end) layer ranges of the pp pipeline stages.

    vLLM/SGLang (vllm/distributed/utils.py get_pp_indices): n // pp layers each, the remainder
    one each to the stages before the last. Others (llama.cpp's equal tensor_split: layer il on
    device floor(il * pp / n)): the same formula.

    Raises:
        UsageError: more stages than layers.
    """
    if not 1 <= pp <= n_layers:
        raise UsageError(f"Cannot split {n_layers} layers into {pp} pipeline stages (expected 1..{n_layers}).")
    if engines.get(engine).pp_vllm_stages:
        parts = [n_layers // pp] * pp
        for i in range(2, n_layers % pp + 2):
            parts[-i] += 1
    else:
        parts = [0] * pp
        for il in range(n_layers):
            parts[il * pp // n_layers] += 1
    out, start = [], 0
    for n in parts:
        out.append((start, start + n))
        start += n
    return tuple(out)


def _ceil_div(n: int, d: int) -> int:
    return -(-n // d)


def shard_layer(layer: LayerSpec, tp: int, engine: str) -> LayerSpec:
    """One tensor-parallel rank's view of a layer: heads, FFN width and recurrent channels / tp;
    KV heads max(kv_heads // tp, 1) (replicated when fewer than tp); a latent MLA row stays whole."""
    if tp == 1:
        return layer
    kv = layer.kv_heads
    if kv and not (layer.attention == MLA and engines.get(engine).latent_mla):
        kv = max(kv // tp, 1)
    return replace(layer, q_heads=_ceil_div(layer.q_heads, tp), kv_heads=kv, ffn_width=_ceil_div(layer.ffn_width, tp),
                   conv_dim=_ceil_div(layer.conv_dim, tp),
                   recurrent_state_elems=_ceil_div(layer.recurrent_state_elems, tp))


def shard_spec(spec: ModelSpec, stage: tuple[int, int], tp: int, engine: str, *, last: bool) -> ModelSpec:
    """The part of `spec` one device runs: the stage's layers, sharded; logits only on the last stage."""
    a, b = stage
    layers = tuple(shard_layer(layer, tp, engine) for layer in spec.layers[a:b])
    moe = spec.moe
    if moe is not None and tp > 1:
        moe = replace(moe, expert_intermediate=_ceil_div(moe.expert_intermediate, tp),
                      shared_intermediate=_ceil_div(moe.shared_intermediate, tp))
    return replace(spec, layers=layers, moe=moe, vocab=spec.vocab if last else 0)


def resident_tensors(spec: ModelSpec, s: Settings) -> tuple[TensorInfo, ...]:
    """The tensors memory.weights() sums, as tensors (re-sized under --weights-dtype)."""
    return memory.resident_tensors(spec, s)


def weight_split(spec: ModelSpec, s: Settings, layout_tp: int, layout_pp: int, *,
                 on_host_ok: bool) -> tuple[list[int], int]:
    """(weight bytes per device in stage-major order, bytes kept in host RAM).

    Layer tensors go to their layer's stage; embedding/vision/other to the first stage, final
    norm and lm_head to the last (a tied embedding is copied there by vLLM/SGLang/llama.cpp when
    it is not the first stage). llama.cpp keeps the input embedding in host RAM (`on_host_ok`).
    Within a stage, groups the engine shards are divided by tp (ceil), the others stay whole on
    every rank (llama.cpp: on the stage's first rank only).
    """
    key = ("split", memory._scheme_name(spec, s), s.group_size, s.engine, layout_tp, layout_pp, on_host_ok)
    if key not in spec.weights.memo:
        spec.weights.memo[key] = _weight_split(spec, s, layout_tp, layout_pp, on_host_ok=on_host_ok)
    per_device, host = spec.weights.memo[key]
    return list(per_device), host


def _weight_split(spec: ModelSpec, s: Settings, layout_tp: int, layout_pp: int, *,
                  on_host_ok: bool) -> tuple[list[int], int]:
    e, tp, pp = engines.get(s.engine), layout_tp, layout_pp
    stages = stage_ranges(spec.n_layers, pp, e.name)
    stage_of = [i for i, (a, b) in enumerate(stages) for _ in range(a, b)]
    split = [0] * pp  # bytes divided over the stage's ranks
    whole = [0] * pp  # bytes every rank (or the main rank) holds whole
    host = 0
    unsplit = e.tp_unsplit_groups
    tensors = resident_tensors(spec, s)
    has_head = any(t.group == "lm_head" for t in tensors)
    for t in tensors:
        layer = t.layer
        if t.group == "vision":  # a vision tower's own layer numbers are not the decoder's
            st = 0
        elif layer is not None and layer < spec.n_layers:
            st = stage_of[layer]
        elif t.group in ("lm_head", "norm"):
            st = pp - 1
        else:
            st = 0
        if t.group == "embedding" and on_host_ok and e.host_input_embedding:
            host += t.nbytes
            if spec.tied_embeddings and not has_head:  # the output head reads a device copy
                whole[pp - 1] += t.nbytes
            continue
        if t.group == "embedding" and spec.tied_embeddings and not has_head and pp > 1 \
                and e.tied_copy_on_last_stage:
            (whole if t.group in unsplit else split)[pp - 1] += t.nbytes
        (whole if t.group in unsplit else split)[st] += t.nbytes
    per_device = []
    for st in range(pp):
        for rank in range(tp):
            keep = whole[st] if (rank == 0 or not e.tp_main_device_only) else 0
            per_device.append(_ceil_div(split[st], tp) + keep)
    return per_device, host


def dynamic_split(spec: ModelSpec, s: Settings, tp: int, pp: int, context: int) -> list[tuple[int, int]]:
    """(KV cache + state, activations) per device in stage-major order, from memory.py's formulas."""
    out = []
    stages = stage_ranges(spec.n_layers, pp, s.engine)
    for st, stage in enumerate(stages):
        part = shard_spec(spec, stage, tp, s.engine, last=st == pp - 1)
        kv, _ = kv_cache(part, s, context)
        act = activations(part, s, context)
        out.extend([(kv, act)] * tp)
    return out


# --- evaluating a problem ------------------------------------------------------------------

@dataclass(frozen=True)
class _Placed:
    role: str
    spec: ModelSpec
    settings: Settings
    devices: tuple[int, ...]
    tp: int
    pp: int
    weights: tuple[int, ...]
    host_bytes: int


def _check_layout(p: Problem) -> None:
    lay, n = p.layout, p.machine.n_devices
    if lay.tp < 1 or lay.pp < 1:
        raise UsageError(f"Cannot use --tp {lay.tp} --pp {lay.pp}: both must be at least 1.")
    if lay.n_devices > n:
        raise UsageError(f"Cannot place tp {lay.tp} x pp {lay.pp} = {lay.n_devices} devices on "
                         f"'{p.machine.display_name}' with {n} device(s). Use --gpus N or a smaller --tp/--pp.")
    if lay.draft_device is not None and not 0 <= lay.draft_device < n:
        raise UsageError(f"Cannot put the draft on device {lay.draft_device}: expected 0..{n - 1}.")
    if lay.draft_device is not None and p.draft is None:
        raise UsageError("Cannot use --draft-device without --draft.")


def _place(p: Problem) -> tuple[_Placed, ...]:
    _check_layout(p)
    lay, kind = p.layout, p.machine.kind
    host_ok = kind != "cpu"
    t_devs = tuple(range(lay.n_devices))
    w, host = weight_split(p.target, p.settings, lay.tp, lay.pp, on_host_ok=host_ok)
    placed = [_Placed("target", p.target, p.settings, t_devs, lay.tp, lay.pp, tuple(w), host)]
    if p.draft is not None:
        ds = p.draft_settings or p.settings
        if lay.draft_device is None:
            dw, dh = weight_split(p.draft, ds, lay.tp, lay.pp, on_host_ok=host_ok)
            placed.append(_Placed("draft", p.draft, ds, t_devs, lay.tp, lay.pp, tuple(dw), dh))
        else:
            dw, dh = weight_split(p.draft, ds, 1, 1, on_host_ok=host_ok)
            placed.append(_Placed("draft", p.draft, ds, (lay.draft_device,), 1, 1, tuple(dw), dh))
    return tuple(placed)


def evaluate(p: Problem, context: int, batch: int, placed: tuple[_Placed, ...] | None = None,
             budgets: tuple[Budget, ...] | None = None) -> tuple[DeviceFit, ...]:
    """Per-device ledger at (context, batch), for the devices the layout uses.

    Raises:
        UsageError: a layout the machine cannot hold, or a bad context/batch.
    """
    placed = placed if placed is not None else _place(p)
    budgets = budgets if budgets is not None else _budgets(p)
    overhead, _ = overhead_for(p.machine.kind, p.settings)
    used = sorted({d for m in placed for d in m.devices})
    shares: dict[int, list[Share]] = {d: [] for d in used}
    hosts = dict.fromkeys(used, 0)
    tp_devices: set[int] = set()
    for m in placed:
        s = replace(m.settings, context=context, batch=batch)
        ctx = s.draft_context if (m.role == "draft" and s.draft_context) else context
        dyn = dynamic_split(m.spec, s, m.tp, m.pp, ctx)
        for i, dev in enumerate(m.devices):
            kv, act = dyn[i]
            shares[dev].append(Share(m.role, m.spec.id, m.weights[i], kv, act))
        hosts[m.devices[0]] += m.host_bytes
        if m.tp > 1:
            tp_devices.update(m.devices)
    comm = engines.get(p.settings.engine).tp_comm_bytes if p.machine.kind == "gpu" else 0
    return tuple(DeviceFit(budgets[d], tuple(shares[d]), overhead, comm if d in tp_devices else 0, hosts[d])
                 for d in used)


def _budgets(p: Problem) -> tuple[Budget, ...]:
    return tuple(device_budget(d, p.settings.engine, p.utilization) for d in p.machine.devices)


def _fits(devs: Sequence[DeviceFit]) -> bool:
    return all(d.headroom_bytes >= 0 for d in devs)


def _last_true(pred, lo: int, hi: int) -> int:
    """Largest n in [lo, hi] with pred(n), given pred(lo) is true and pred is monotone (true then false)."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if pred(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def max_context(p: Problem, *, batch: int | None = None) -> tuple[int, str]:
    """Largest context that fits at `batch` (default the settings'), and what limits it.

    Returns:
        (tokens, "memory") when memory is the limit, (the target's max context, "model") when that
        fits, (0, "memory") when even one token does not fit.
    """
    b = p.settings.batch if batch is None else batch
    placed, budgets = _place(p), _budgets(p)
    ok = lambda n: _fits(evaluate(p, n, b, placed, budgets))  # noqa: E731
    cap = p.target.max_context if p.target.max_context and p.target.max_context > 0 else MAX_CONTEXT
    if not ok(1):
        return 0, "memory"
    if ok(cap):
        return cap, "model"
    return _last_true(ok, 1, cap), "memory"


def max_batch(p: Problem, *, context: int | None = None) -> int:
    """Largest batch (concurrent sequences) that fits at `context` (0 when one does not), up to FIT_MAX_BATCH."""
    c = p.settings.context if context is None else context
    placed, budgets = _place(p), _budgets(p)
    ok = lambda n: _fits(evaluate(p, c, n, placed, budgets))  # noqa: E731
    if not ok(1):
        return 0
    hi = 1
    while hi < FIT_MAX_BATCH and ok(min(hi * 2, FIT_MAX_BATCH)):
        hi = min(hi * 2, FIT_MAX_BATCH)
    return _last_true(ok, hi, min(hi * 2, FIT_MAX_BATCH)) if hi < FIT_MAX_BATCH else hi


def dominant(devs: Sequence[DeviceFit]) -> dict:
    """The largest single term on the tightest device: {device, role, term, bytes, share}."""
    d = min(devs, key=lambda x: x.headroom_bytes)
    terms = [("runtime", "overhead", d.overhead_bytes), ("runtime", "communication buffers", d.comm_bytes)]
    for s in d.shares:
        terms += [(s.role, "weights", s.weights_bytes), (s.role, "KV cache", s.kv_cache_bytes),
                  (s.role, "activations", s.activation_bytes)]
    role, term, n = max(terms, key=lambda x: x[2])
    return {"device": d.budget.index, "role": role, "term": term, "bytes": n,
            "share": n / d.used_bytes if d.used_bytes else 0.0}


def _headroom(p: Problem) -> int:
    return min(d.headroom_bytes for d in evaluate(p, p.settings.context, p.settings.batch))


# --- suggestions ---------------------------------------------------------------------------

def _suggest_kv(p: Problem) -> list[Suggestion]:
    cand = engines.get(p.settings.engine).kv_suggestion
    if cand is None:
        return []
    s = p.settings
    now = kv_per_token(p.target, s)
    new_s = replace(s, kv_dtype=cand)
    if kv_per_token(p.target, new_s) >= now:
        return []
    q = replace(p, settings=new_s, draft_settings=replace(p.draft_settings or s, kv_dtype=cand))
    h = _headroom(q)
    fmt = kv_format(cand, p.target.dtype, s.engine)
    return [Suggestion("kv_dtype", f"KV cache as {fmt} (--kv-dtype {cand})", cand, h, h >= 0)]


def _suggest_limits(p: Problem, mc: int, mb: int) -> list[Suggestion]:
    out = []
    s = p.settings
    if 0 < mc < s.context:
        h = min(d.headroom_bytes for d in evaluate(p, mc, s.batch))
        out.append(Suggestion("context", f"shorter context: --context {mc}", mc, h, True))
    if s.batch > 1 and 0 < mb < s.batch:
        h = min(d.headroom_bytes for d in evaluate(p, s.context, mb))
        out.append(Suggestion("batch", f"fewer sequences: --batch {mb}", mb, h, True))
    return out


def _first_fitting(cands: Sequence[tuple[str, Problem]]) -> tuple[str, int] | None:
    """The first candidate that fits, else the last one (the smallest), with its headroom."""
    last = None
    for label, q in cands:
        h = _headroom(q)
        if h >= 0:
            return label, h
        last = (label, h)
    return last


def _suggest_weights(p: Problem) -> list[Suggestion]:
    s = p.settings
    now = sum(t.nbytes for t in resident_tensors(p.target, s))
    cands = []
    e = engines.get(s.engine)
    for scheme in e.weights_ladder:
        new_s = replace(s, weights_dtype=scheme, group_size=e.quant_group_size or s.group_size)
        if sum(t.nbytes for t in resident_tensors(p.target, new_s)) < now:
            cands.append((scheme, replace(p, settings=new_s, draft_settings=p.draft_settings or s)))
    best = _first_fitting(cands)
    if best is None:
        return []
    scheme, h = best
    return [Suggestion("weights", f"target weights as {scheme} (--weights-dtype {scheme})", scheme, h, h >= 0)]


def _suggest_draft(p: Problem, smaller: Sequence[ModelSpec]) -> list[Suggestion]:
    if p.draft is None:
        return []
    now = sum(t.nbytes for t in resident_tensors(p.draft, p.draft_settings or p.settings))
    cands = sorted((d for d in smaller if d.weights.resident_bytes < now),
                   key=lambda d: d.weights.resident_bytes, reverse=True)
    best = _first_fitting([(d.id, replace(p, draft=d)) for d in cands])
    if best is None:
        return []
    ref, h = best
    return [Suggestion("draft", f"a smaller draft: --draft {ref}", ref, h, h >= 0)]


def _suggest_gpus(p: Problem) -> list[Suggestion]:
    m, lay = p.machine, p.layout
    if m.kind != "gpu" or lay.draft_device is not None:
        return []
    grow_pp = lay.pp > 1 and lay.tp == 1
    heads = {layer.q_heads for layer in p.target.layers if layer.q_heads}
    for n in range(lay.n_devices + 1, FIT_MAX_GPUS + 1):
        if grow_pp:
            if n > p.target.n_layers:
                break
            new = replace(lay, pp=n)
        else:
            if n % lay.pp or any(h % (n // lay.pp) for h in heads):
                continue  # tensor parallel must divide the attention heads (vLLM checks it)
            new = replace(lay, tp=n // lay.pp)
        q = replace(p, machine=with_overrides(m, n_devices=max(n, m.n_devices)), layout=new)
        h = _headroom(q)
        if h >= 0:
            flag = f"--pp {new.pp}" if grow_pp else f"--tp {new.tp}" + (f" --pp {new.pp}" if new.pp > 1 else "")
            return [Suggestion("gpus", f"{n} GPUs: --gpus {n} {flag}", n, h, True)]
    return []


def _suggest_no_draft(p: Problem) -> list[Suggestion]:
    if p.draft is None:
        return []
    h = _headroom(replace(p, draft=None, draft_settings=None, layout=replace(p.layout, draft_device=None)))
    return [Suggestion("no_draft", "no draft (plain decoding)", "", h, h >= 0)]


def suggest(p: Problem, mc: int, mb: int, smaller_drafts: Sequence[ModelSpec] = ()) -> tuple[Suggestion, ...]:
    """Single changes ranked: those that fit first, then in SUGGESTION_ORDER (least intrusive first)."""
    out = [*_suggest_kv(p), *_suggest_limits(p, mc, mb), *_suggest_draft(p, smaller_drafts),
           *_suggest_weights(p), *_suggest_gpus(p), *_suggest_no_draft(p)]
    return tuple(sorted(out, key=lambda x: (not x.fits, SUGGESTION_ORDER.index(x.kind))))


# --- the whole answer ------------------------------------------------------------------------

def single_device_ledger(p: Problem) -> Ledger:
    """memory.ledger() of the pair (one device's view, as `planner memory`), with this machine's overhead."""
    overhead, src = overhead_for(p.machine.kind, p.settings)
    led = ledger(p.target, p.settings, p.draft)
    return replace(led, overhead_bytes=overhead, overhead_source=src)


def fit(p: Problem, *, smaller_drafts: Sequence[ModelSpec] = ()) -> FitResult:
    """Verdict for `p` with the per-device split, the largest context and batch, and suggestions.

    Args:
        p: target (+ draft), machine, settings, layout, utilisation.
        smaller_drafts: candidate drafts for the "smaller draft" suggestion.

    Returns:
        The FitResult; `suggestions` is empty when it fits.

    Raises:
        UsageError: a layout the machine cannot hold, or bad settings.

    Example:
        >>> from planner.sources import load_spec
        >>> from planner.fits.machine_lookup import get_machine
        >>> r = fit(Problem(load_spec("llama-3.1-8b"), get_machine("rtx-4090"), Settings(engine="llama.cpp")))
        >>> r.fits, r.max_context_limit
        (True, 'memory')
    """
    devs = evaluate(p, p.settings.context, p.settings.batch)
    mc, limit = max_context(p)
    mb = max_batch(p)
    sugg = () if _fits(devs) else suggest(p, mc, mb, smaller_drafts)
    return FitResult(problem=p, devices=devs, max_context=mc, max_context_limit=limit, max_batch=mb,
                     dominant=dominant(devs), suggestions=sugg, ledger=single_device_ledger(p))


def default_layout(n_devices: int, engine: str, tp: int | None = None, pp: int | None = None,
                   draft_device: int | None = None) -> Layout:
    """Default: every device, split by layers in llama.cpp (its default --split-mode layer) and
    tensor-parallel elsewhere; MLX runs on one device."""
    if tp is None and pp is None:
        split = engines.get(engine).default_split
        if split == "single" or n_devices == 1:
            tp, pp = 1, 1
        elif split == "pp":
            tp, pp = 1, n_devices
        else:
            tp, pp = n_devices, 1
    return Layout(tp=tp or 1, pp=pp or 1, draft_device=draft_device)
