"""Roofline forward costs, for machines that are not at hand (every figure labelled "roofline").

Why: the speed model needs t_v(n) and t_d. On the user's own machine a probe measures
them; for a machine only known from its catalogue figures (bandwidth, peak FLOP/s)
the best we can say is the roofline bound plus a named per-forward engine overhead:

  t(n, C, B) = max((weight_bytes * r(nB) + B * kv_bytes + logit_bytes) / bw, B * flops / peak_eff)
               + engine overhead + tensor-parallel all-reduce
  per round   t_o(B) = the engine's speculation machinery, fixed + B x per sequence (spec_round_overhead_s)
  bw          = peak bandwidth x the share a batch-1 decode reaches on this engine and machine class
                (Engine.bandwidth_efficiency: 0.52-0.85, each with its source; the class is the most
                specific of gpu-tp, gpu-hbm, apple-ultra and the machine's kind that the engine
                catalogues, plan/roof.share_key; Engine.format_share scales it per weight format)
  engine overhead = fixed + per layer x layers (Engine.forward_overhead_s; a machine class's own where
                the engine catalogues one, forward_overhead_by_kind); a draft step its own where the
                engine drafts in a proposer loop (draft_forward_overhead_s)
  weight_bytes= weights read once per forward (MoE: only the experts the n tokens touch)
  r(n)        = t_v(n)/t_v(1) of the backend's small-batch kernels for this weight format
                (speed/kernels.py: published curves; 1 where none is published)
  kv_bytes    = KV cache read for the C-token prefix + KV written for the n new tokens
  flops       = 2 * active params * n + sum over attention layers of 4 * n * C * q_heads * head_dim
  peak_eff    = peak FLOP/s x the share the engine's GEMMs reach (Engine.compute_efficiency)
  logit_bytes = n * B * vocab * LOGIT_BYTES (the lm_head's rows, cast to fp32 and read by the sampler)
  all-reduce  = 2 per layer x (latency + 2 (tp-1)/tp x n B hidden x 2 B / link bandwidth)  (tp > 1)

B = 1 is one sequence; `batch` prices B concurrent sequences (plan/load.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from functools import cached_property

from ..core import memo
from ..core.errors import MachineError, UsageError
from ..core.spec import CHUNKED, NONE, SLIDING, ModelSpec
from ..engines import versions
from ..engines.base import Engine, share_key
from ..fits import memory
from ..fits.memory import Settings
from . import kernels
from .kernel_terms import (  # noqa: F401  (re-exported: roofline.kernel_ratio, roofline.MachineLike, ...)
    KernelKey,
    MachineLike,
    beyond_curve_s,
    format_factor,
    kernel_key,
    kernel_ratio,
    matmul_params,
    matrix_seconds,
    routed_experts,
)
from .matmuls import expected_experts_touched

LABEL = "roofline"
@dataclass(frozen=True)
class Roof:
    """A minimal MachineLike for callers holding raw figures (tests, a JSON dict)."""

    bandwidth_bytes_per_s: float
    peak_flops: Mapping[str, float | None]  # None or 0: no figure for that dtype (peak_flops_for skips it)
    name: str = "machine"
    kind: str = "gpu"  # gpu | apple | cpu: which kernels the engine runs (Engine.verify_backend)
    tp: int = 1  # tensor-parallel ranks the figures aggregate (each forward all-reduces across them)
    link_bytes_per_s: float | None = None  # device-to-device bandwidth per rank (None: not catalogued)
    link_latency_s: float = 0.0  # one small all-reduce
    gpu_cores: int | None = None  # Apple GPU cores (the tiled matmul's occupancy); None: not catalogued
    share_kind: str | None = None  # the machine's bandwidth-share key (plan/roof.share_key, e.g. gpu-hbm)
    gpu_family: str | None = None  # the catalogued GPU generation and tier (Machine.gpu_family / gpu_tier):
    gpu_tier: str | None = None  # which chip class's kernels run (speed/kernels.gpu_class)

    @cached_property
    def value_key(self) -> tuple[object, ...]:
        """Every field as one hashable value (the roofline reads no other): forward_cost's memo key."""
        return tuple(tuple(sorted(v.items())) if isinstance(v, Mapping) else v
                     for v in (getattr(self, f.name) for f in fields(self)))


@dataclass(frozen=True)
class ForwardCost:
    """One forward of n new tokens of one sequence on a C-token KV prefix."""

    seconds: float  # max(memory_s, compute_s) + overhead_s
    memory_s: float
    compute_s: float
    overhead_s: float
    bytes_moved: int
    weight_bytes: int
    kv_bytes: int
    flops: float
    bound: str  # "memory" | "compute"
    n: int
    context: int
    source: str  # always starts with "roofline"
    seconds_low: float = 0.0  # the same forward at the low and high end of the kernel-curve interval
    seconds_high: float = 0.0
    kernel_basis: str = "none"  # measured | op-level | none (speed/kernels.py)
    batch: int = 1
    logit_bytes: int = 0
    comm_s: float = 0.0  # tensor-parallel all-reduce time (0 at tp 1)


# --- bytes ----------------------------------------------------------------------

def weight_bytes_read(spec: ModelSpec, s: Settings, n: int) -> int:
    """Weight bytes one forward of n tokens reads.

    # resident weights (memory.weights, after any --weights-dtype override)
    #  - routed experts not touched: experts_bytes * (1 - distinct(n)/E)
    #  - an untied input embedding (a row gather): table - n rows; tied tables are read whole by the lm_head
    #  - vision/audio towers (resident, idle while decoding text)
    """
    total, _, _ = memory.weights(spec, s)
    groups = memory.bytes_by_group(spec, s)
    skip = groups.get("vision", 0)
    if spec.moe and groups.get("experts"):
        touched = expected_experts_touched(spec.moe.experts, spec.moe.experts_per_token, n) / spec.moe.experts
        skip += round(groups["experts"] * (1.0 - touched))
    emb = groups.get("embedding", 0)
    if emb and not spec.tied_embeddings and spec.vocab:
        skip += emb - emb * min(n, spec.vocab) // spec.vocab  # keep the n gathered rows
    return total - skip


def kv_bytes_moved(spec: ModelSpec, s: Settings, context: int, n: int) -> int:
    """KV (and recurrent state) bytes one forward reads and writes.

    # read: the cache of a C-token prefix (memory.kv_cache: engine layout, sliding windows,
    #       MLA latent, recurrent state) ; write: n new rows per attention layer + the state again
    # kv row bytes/token/layer = kv_heads * (head_dim_k + head_dim_v) * kv dtype bytes
    """
    # a pure function of the spec and these values, the same on every machine: once per value (core/memo.py)
    return memo.per_object(spec, ("kv_moved", s, context, n), lambda: _kv_bytes_moved(spec, s, context, n))


def _kv_bytes_moved(spec: ModelSpec, s: Settings, context: int, n: int) -> int:
    one = replace(s, batch=1, context=context)
    read, state = memory.kv_cache(spec, one, context)
    fmt = memory.kv_format(one.kv_dtype, spec.dtype, one.resolved_engine)
    # the row sum is the spec's at this format and engine: once per spec (core/memo.py), not per n x machine
    rows = memo.per_object(spec, ("kv_rows", fmt, one.engine), lambda: sum(
        memory.layer_token_bytes(layer, fmt, one.resolved_engine) for layer in spec.layers if layer.has_kv))
    return read + n * rows + state


# --- FLOPs -----------------------------------------------------------------------

def forward_flops(spec: ModelSpec, context: int, n: int) -> float:
    """FLOPs of one forward of n tokens on a C-token prefix.

    # matmuls: 2 * active params * n (an untied input embedding is a gather, not a matmul)
    # attention per layer: QK^T + PV = 2 * n * C_eff * q_heads * (head_dim_k + head_dim_v)
    #   (= 4 * n * C * q_heads * head_dim when K and V heads match); C_eff = min(C, window) on
    #   sliding/chunked layers; recurrent-only layers add none
    """
    # a pure function of the spec, the prefix and n: once per value, not once per machine (core/memo.py)
    return memo.per_object(spec, ("flops", context, n), lambda: _forward_flops(spec, context, n))


def _forward_flops(spec: ModelSpec, context: int, n: int) -> float:
    params = spec.params_active - (0 if spec.tied_embeddings else spec.vocab * spec.hidden)
    attention = 0
    for layer in spec.layers:
        if layer.attention == NONE:
            continue
        span = min(context, layer.window) if layer.attention in (SLIDING, CHUNKED) and layer.window else context
        attention += 2 * n * span * layer.q_heads * (layer.head_dim_k + layer.head_dim_v)
    return 2.0 * max(params, 0) * n + attention


def peak_flops_for(spec: ModelSpec, s: Settings, machine: MachineLike, compute_dtype: str | None = None) -> tuple[float, str]:
    """Peak FLOP/s of the machine for this model's matmuls, and the key used.

    fp8 weights run fp8 matmuls; every other weight format (bf16, fp16, int8/int4/GGUF weight-only)
    computes in the activation dtype: bf16 unless the model is fp16.

    Raises:
        MachineError: the machine lists no usable peak.
    """
    key = compute_dtype
    if key is None:
        w_fmt = memory.weights(spec, s)[1]
        key = "fp8" if w_fmt.startswith("F8") else ("fp16" if spec.dtype == "F16" else "bf16")
    peaks = machine.peak_flops or {}
    for k in (key, "bf16", "fp16"):
        v = peaks.get(k)
        if v:
            return float(v), k
    raise MachineError(f"Cannot compute a roofline for '{getattr(machine, 'name', 'machine')}': no peak FLOP/s "
                       f"for {key} (expected peak_flops with one of {key}, bf16, fp16; got {dict(peaks)}). "
                       f"Add it to the machine's catalogue entry.")


# --- overhead and the composed cost -----------------------------------------------------

def engine_overhead_s(engine: Engine, n_layers: int, *, draft: bool = False,
                      share_kind: str | None = None) -> tuple[float, str]:
    """Per-forward engine overhead (named default per engine) and its source; `draft`: one draft step's.

    # overhead = fixed per forward + per layer * n_layers   (Engine.forward_overhead_s, engines/*.py)
    # on a machine class with its own measured cost: Engine.forward_overhead_by_kind[share_kind]
    # a draft step: Engine.draft_forward_overhead_s where the engine's proposer loop has its own cost
    """
    e = engine
    if draft and e.draft_forward_overhead_s is not None:
        fixed, per_layer = e.draft_forward_overhead_s
        return fixed + per_layer * n_layers, e.draft_forward_overhead_source
    key = share_key(share_kind)
    by_kind = e.forward_overhead_by_kind.get(key) if key is not None else None
    if by_kind is not None:
        (fixed, per_layer), why = by_kind
        choice = versions.fixed_cost(e.name, key) if key is not None else None  # by engine build, where catalogued
        if choice is not None:
            fixed, why = choice.entry.value, f"{choice.entry.source}; {choice.note}"
        return fixed + per_layer * n_layers, why
    fixed, per_layer = e.forward_overhead_s
    return fixed + per_layer * n_layers, e.forward_overhead_source


# The sampler's view of the lm_head output: bf16 rows written (2 B), cast to fp32 (4 B written) and read
# back by sampling or rejection sampling (4 B) -- vLLM v1/sample/sampler.py Sampler.forward casts
# `logits.to(torch.float32)` before the logits processors; one read is the least any sampler does.
LOGIT_BYTES = 2 + 4 + 4
ACTIVATION_BYTES = 2  # bf16/fp16 activations cross the tensor-parallel all-reduce


def logit_bytes(spec: ModelSpec, tokens: int) -> int:
    """Bytes the vocabulary-wide logits of `tokens` rows move (every verified position is sampled)."""
    return tokens * spec.vocab * LOGIT_BYTES


def allreduce_s(spec: ModelSpec, machine: MachineLike, tokens: int) -> float:
    """Tensor-parallel communication of one forward: two all-reduces per layer (attention, MLP outputs).

    # ring all-reduce of m bytes over tp ranks: latency + 2 (tp-1)/tp * m / link bandwidth
    # m = tokens * hidden * 2 B ; 2 per decoder layer (Megatron-style TP, as vLLM/SGLang shard)
    0 at tp 1, and when the machine catalogues no link (then the caller says it is not modelled).
    """
    tp = int(getattr(machine, "tp", 1) or 1)
    link = getattr(machine, "link_bytes_per_s", None)
    if tp <= 1 or not link:
        return 0.0
    m = tokens * spec.hidden * ACTIVATION_BYTES
    one = float(getattr(machine, "link_latency_s", 0.0)) + 2 * (tp - 1) / tp * m / float(link)
    return 2 * spec.n_layers * one


def spec_round_overhead_s(engine: Engine, batch: int) -> tuple[float, float, str]:
    """Per-round cost of the engine's speculation machinery at `batch` sequences: (central, optimistic, source).

    # t_o(B) = fixed + B * per sequence   (Engine.spec_round_overhead_s)
    # optimistic end: the fixed part only (per-sequence work hidden by asynchronous scheduling)
    """
    e = engine
    fixed, per_seq = e.spec_round_overhead_s
    return fixed + batch * per_seq, fixed, e.spec_round_overhead_source


def forward_cost(spec: ModelSpec, machine: MachineLike, *, n: int, context: int, settings: Settings | None = None,
                 overhead_s: float | None = None, compute_dtype: str | None = None, batch: int | None = None) -> ForwardCost:
    """Roofline time of one forward of n new tokens for each of `batch` sequences on a `context`-token prefix.

    A batch reads the weights once (MoE: the experts its n x batch tokens touch), every sequence's KV
    cache, and computes n x batch tokens:
      weight bytes = weight_bytes_read(n x batch);  kv bytes = batch x kv_bytes_moved(context, n)
      flops        = batch x forward_flops(context, n);  kernel ratio at n x batch columns, held at the
      last published point (past it the FLOP roof binds: a large batch is compute-bound)

    Args:
        spec: the model.
        machine: anything with bandwidth_bytes_per_s and peak_flops (see MachineLike).
        n: new tokens in the forward (1 for decode / a draft step, K+1 for verification).
        context: tokens already in the KV cache.
        settings: engine, KV dtype, weights override (batch and context are taken from here).
        overhead_s: per-forward overhead; None = the engine's named default.
        compute_dtype: peak_flops key to use (default from the weights' format).
        batch: concurrent sequences in the forward (serving load); None: the settings' batch.

    Returns:
        ForwardCost with the bytes, FLOPs, which roof binds and the source text.

    Raises:
        UsageError: n < 1 or context < 1; MachineError: no bandwidth or peak.
    """
    s = settings or Settings(context=context)
    batch = s.batch if batch is None else batch
    # A plan prices the same forward many times (each K's round, the break-even search, the fit's batch
    # ladder): 21k distinct of 38k calls in a 10-machine report. Memoised per spec by value: a Roof (what
    # plans pass, rebuilt per call) by its fields; any other MachineLike is computed each time (issue #33).
    roof = _roof_key(machine)
    if roof is None:
        return _forward_cost(spec, machine, n, context, s, overhead_s, compute_dtype, batch)
    key = ("forward", roof, n, context, s, overhead_s, compute_dtype, batch, versions.current_key())
    return memo.per_object(spec, key, lambda: _forward_cost(spec, machine, n, context, s, overhead_s,
                                                            compute_dtype, batch))


def _roof_key(machine: MachineLike) -> tuple[object, ...] | None:
    """A Roof as a hashable value (Roof.value_key), or None for other machines."""
    return machine.value_key if type(machine) is Roof else None


def _forward_cost(spec: ModelSpec, machine: MachineLike, n: int, context: int, s: Settings, overhead_s: float | None,
                  compute_dtype: str | None, batch: int) -> ForwardCost:
    """forward_cost's body (memoised above)."""
    if n < 1 or context < 1 or batch < 1:
        raise UsageError(f"Cannot cost a forward of n={n} tokens x {batch} sequences on a {context}-token prefix: "
                         f"all must be >= 1.")
    bw = float(machine.bandwidth_bytes_per_s or 0)
    if bw <= 0:
        raise MachineError(f"Cannot compute a roofline for '{getattr(machine, 'name', 'machine')}': "
                           f"bandwidth_bytes_per_s is {machine.bandwidth_bytes_per_s} (expected > 0).")
    peak, key = peak_flops_for(spec, s, machine, compute_dtype)
    kind, chip_class = getattr(machine, "kind", "gpu"), kernels.gpu_class(machine)
    kk = kernel_key(spec, s, kind, chip_class)  # once per forward: five terms below read it
    fmt, fmt_why = format_factor(spec, s, machine, kk=kk)
    w = weight_bytes_read(spec, s, n * batch)
    ex = routed_experts(spec, s, machine, n * batch, bw * fmt, peak, kk=kk)  # None: experts priced as dense weights
    w -= round(ex.touched_bytes) if ex else 0
    kv = batch * kv_bytes_moved(spec, s, context, n)
    lg = logit_bytes(spec, n * batch)
    flops = batch * forward_flops(spec, context, n)
    r = kernel_ratio(spec, s, kind, n * batch, measured_only=batch > 1, chip_class=chip_class, machine=machine, kk=kk)
    comp_s = comp_lo = comp_hi = (flops - (ex.flops if ex else 0.0)) / peak
    tiled = matrix_seconds(spec, s, machine, n * batch, peak, experts=ex is None, kk=kk)
    if tiled is not None:  # past the vector kernels: weights stream once, the tiles' FLOPs bind
        r = kernels.Ratio(1.0, 1.0, 1.0, "matrix", tiled[3])
        rest = flops - 2.0 * batch * n * matmul_params(spec)  # attention over the prefix: untiled
        comp_s, comp_lo, comp_hi = (t + max(rest, 0.0) / peak for t in tiled[:3])
    mem_s, mem_lo, mem_hi = ((w * x / fmt + kv + lg) / bw for x in (r.central, r.low, r.high))
    ex_s, ex_lo, ex_hi = (ex.seconds, ex.seconds_low, ex.seconds_high) if ex else (0.0, 0.0, 0.0)
    beyond = (beyond_curve_s(spec, s, machine, n * batch, comp_s, kk=kk)
              if batch > 1 and r.basis not in ("none", "matrix") else 0.0)
    if overhead_s is None:
        overhead_s, why = engine_overhead_s(s.resolved_engine, spec.n_layers, share_kind=getattr(machine, "share_kind", None))
    else:
        why = "given"
    comm = allreduce_s(spec, machine, n * batch)
    extra = overhead_s + comm
    bound = "memory" if mem_s >= comp_s else "compute"
    src = (f"{LABEL}: max({w + kv + lg} B / {bw:.4g} B/s, {flops:.4g} FLOP / {peak:.4g} FLOP/s {key}) "
           f"+ {overhead_s * 1e3:.3g} ms overhead ({why})")
    if comm:
        src += f" + {comm * 1e3:.3g} ms tensor-parallel all-reduce"
    if fmt != 1.0:
        src += f"; weights stream at {fmt:g} x the share ({fmt_why})"
    if r.basis != "none":
        src += f"; {kernels.describe(r, n)}"
    if beyond:
        src += (f"; {beyond * 1e3:.3g} ms of matmul rows past the published kernel curve added, not overlapped "
                f"(low end: overlapped)")
    if ex:
        src += f"; {ex_s * 1e3:.3g} ms {ex.source}"
        w += round(ex.bytes_streamed)
    return ForwardCost(seconds=max(mem_s + beyond, comp_s) + ex_s + extra, memory_s=mem_s + ex_s, compute_s=comp_s,
                       overhead_s=overhead_s, bytes_moved=w + kv + lg, weight_bytes=w, kv_bytes=kv, flops=flops,
                       bound=bound, n=n, context=context, source=src,
                       seconds_low=max(mem_lo, comp_lo) + ex_lo + extra,
                       seconds_high=max(mem_hi + beyond, comp_hi) + ex_hi + extra,
                       kernel_basis=r.basis, batch=batch, logit_bytes=lg, comm_s=comm)


def verify_curve(spec: ModelSpec, machine: MachineLike, *, context: int, n_max: int,
                 settings: Settings | None = None, overhead_s: float | None = None) -> tuple[float, ...]:
    """Roofline t_v(n) for n = 1..n_max (index n-1), ready for speed.predict(verify_s=...)."""
    return tuple(c.seconds for c in verify_costs(spec, machine, context=context, n_max=n_max, settings=settings,
                                                 overhead_s=overhead_s))


def verify_costs(spec: ModelSpec, machine: MachineLike, *, context: int, n_max: int,
                 settings: Settings | None = None, overhead_s: float | None = None) -> tuple[ForwardCost, ...]:
    """The forward costs behind verify_curve, with the kernel-curve interval of each."""
    return tuple(forward_cost(spec, machine, n=n, context=context, settings=settings, overhead_s=overhead_s)
                 for n in range(1, n_max + 1))


def draft_step_s(spec: ModelSpec, machine: MachineLike, *, context: int, settings: Settings | None = None,
                 overhead_s: float | None = None) -> float:
    """Roofline t_d: one draft forward of one token on the same prefix, with the engine's draft-step overhead."""
    if overhead_s is None:
        overhead_s = engine_overhead_s((settings or Settings(context=context)).resolved_engine, spec.n_layers, draft=True,
                                       share_kind=getattr(machine, "share_kind", None))[0]
    return forward_cost(spec, machine, n=1, context=context, settings=settings, overhead_s=overhead_s).seconds


# --- helpers -----------------------------------------------------------------------
