"""The budgeted probe: t_v(1..K+1) of the target, t_d of the draft, the per-round overhead.

How a model is timed (`probe_model`):
1. memory is checked before anything is allocated (shapes are known torch-free);
2. sample stacks are timed first: the embedding/head shell alone, then the shell plus m layers
   of each distinct layer kind; per layer cost = (t(shell + m layers) - t(shell)) / m, and
   t(model) = t(shell) + sum over kinds of count x per-layer cost (labelled "extrapolated");
3. if the whole model fits in memory and, by the samples' numbers, in the time left, it is
   built and timed too (labelled "synthetic"), and the extrapolation error is recorded.
Every timed call goes through timing.measure: warm-up, device sync, median of repeats, and a
Deadline so the whole probe stays within --budget-s.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.metadata
import platform
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core import constants
from ..core.errors import UsageError
from ..core.spec import LayerSpec, ModelSpec
from ..speed.profile import Acceptance, ModelCurve, Profile, diagnose
from . import require_torch
from .synthetic import (
    DTYPE_BYTES,
    SyntheticLM,
    activation_bytes,
    approximations,
    layer_groups,
    model_bytes,
    probe_dtype,
)
from .timing import Deadline, measure_round_robin, sync, time_call

Progress = Callable[[str, float], None]


@dataclass(frozen=True)
class ProbeSettings:
    """What to probe and how hard.

    `mode`: auto (samples, then the whole model when it fits), extrapolate (samples only) or
    full (the whole model, error if it does not fit). `memory_bytes` overrides the detected
    available memory (tests, or to keep room for other work).
    """

    device: str = "auto"
    dtype: str | None = None
    max_k: int = 8
    context: int = 4096
    budget_s: float | None = None
    repeats: int = constants.PROBE_REPEATS
    warmup: int = constants.PROBE_WARMUP
    seed: int = 0
    temperature: float = 1.0
    mode: str = "auto"
    group_layers: int = 2
    memory_bytes: int | None = None
    threads: int | None = None
    clock: str = "wall"

    def __post_init__(self) -> None:
        if not 1 <= self.max_k <= 64:
            raise UsageError(f"Cannot probe with --max-k {self.max_k} (expected 1..64).")
        if self.context < 1:
            raise UsageError(f"Cannot probe with --context {self.context} (expected >= 1).")
        if self.budget_s is not None and self.budget_s <= 0:
            raise UsageError(f"Cannot probe with --budget-s {self.budget_s} (expected > 0 seconds).")
        if self.mode not in ("auto", "extrapolate", "full"):
            raise UsageError(f"Cannot probe in mode '{self.mode}' (expected auto, extrapolate or full).")
        if self.repeats < 1 or self.warmup < 0 or self.group_layers < 1:
            raise UsageError("Cannot probe with repeats < 1, warmup < 0 or group_layers < 1.")
        if self.threads is not None and self.threads < 1:
            raise UsageError(f"Cannot probe with --threads {self.threads} (expected >= 1).")
        if self.clock not in ("wall", "thread"):
            raise UsageError(f"Cannot probe with --clock {self.clock} (expected wall or thread).")
        if self.clock == "thread" and (self.threads != 1 or self.device not in ("cpu", "auto")):
            raise UsageError("Cannot probe with --clock thread unless --device cpu --threads 1 (expected one "
                             "CPU thread: thread CPU time misses work done on other threads or devices).")

    @property
    def clock_fn(self) -> Callable[[], float]:
        """Wall clock, or this thread's CPU time (preemption by other processes excluded)."""
        return time.thread_time if self.clock == "thread" else time.perf_counter


@contextlib.contextmanager
def cpu_threads(n: int | None) -> Iterator[None]:
    """Run with torch's intra-op CPU threads set to n (None: leave torch's default), then restore.

    Why: on a busy machine, OpenMP threads that wait on a descheduled sibling make single calls
    tens of times slower; fewer threads than free cores gives stable numbers.
    """
    torch = require_torch()
    old = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


# --- machine ---------------------------------------------------------------------------------

def resolve_device(name: str) -> str:
    """'auto' -> cuda, else mps, else cpu; an explicit device must be available.

    Raises:
        UsageError: the device is unknown or not available here.
    """
    torch = require_torch()
    name = (name or "auto").strip().lower()
    cuda, mps = torch.cuda.is_available(), bool(getattr(torch.backends, "mps", None)) and \
        torch.backends.mps.is_available()
    if name == "auto":
        return "cuda" if cuda else "mps" if mps else "cpu"
    kind = name.split(":")[0]
    if kind not in ("cpu", "cuda", "mps"):
        raise UsageError(f"Cannot probe on device '{name}' (expected cpu, cuda, cuda:N, mps or auto).")
    if (kind == "cuda" and not cuda) or (kind == "mps" and not mps):
        raise UsageError(f"Cannot probe on device '{name}': torch sees no such device here "
                         f"(expected one of: cpu{', cuda' if cuda else ''}{', mps' if mps else ''}). "
                         f"Use --device auto.")
    return name


def available_bytes(device: str) -> int:
    """Memory the probe may allocate: free device (CUDA) or host (CPU, MPS) memory, less a margin."""
    if device.startswith("cuda"):
        torch = require_torch()
        free, _total = torch.cuda.mem_get_info(torch.device(device))
    else:
        import psutil

        free = psutil.virtual_memory().available
    return max(0, int(free * constants.PROBE_MEMORY_FRACTION) - constants.PROBE_MEMORY_RESERVE_BYTES)


def device_name(device: str) -> str:
    """Human name of the device: GPU name from torch, CPU model from /proc/cpuinfo or platform."""
    if device.startswith("cuda"):
        torch = require_torch()
        return torch.cuda.get_device_name(torch.device(device))
    if device.startswith("mps"):
        return f"Apple GPU (MPS, {platform.machine()})"
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
        for line in fh.read(1 << 20).splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def library_versions() -> dict[str, str]:
    """Versions that change the numbers: python, torch, transformers (if installed), spec-planner."""
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for dist in ("torch", "transformers", "spec-planner"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def budget_for(device: str, budget_s: float | None) -> float:
    return budget_s if budget_s is not None else constants.PROBE_BUDGET_S.get(device.split(":")[0], 60.0)


# --- timing a stack ------------------------------------------------------------------------

def _free(device: str) -> None:
    gc.collect()
    if device.startswith("cuda"):
        require_torch().cuda.empty_cache()


def time_stacks(models: Sequence[Any], points: int, *, device: str, st: ProbeSettings, deadline: Deadline,
                all_logits: bool = True, tick: Callable[[int], None] | None = None) -> list[list[float]]:
    """Median t(n), n = 1..points, of each model: n tokens appended at the context, then rolled back.

    The models are timed round-robin for each n (timing.measure_round_robin), so a sample stack
    and the stacks it is compared or combined with see the same machine state. The rollback runs
    after each call, outside the clock; each n gets an equal share of what is left of `deadline`.
    """
    bases = [m.pos for m in models]
    for m in models:
        m.checkpoint()
    out: list[list[float]] = [[] for _ in models]
    for n in range(1, points + 1):
        if tick:
            tick(n)
        toks = [m.tokens(n, seed=n) for m in models]
        fns = [lambda m=m, t=t: m.forward(t, all_logits=all_logits) for m, t in zip(models, toks, strict=True)]
        resets = [lambda m=m, b=b: m.rollback_to(b) for m, b in zip(models, bases, strict=True)]
        res = measure_round_robin(fns, device=device, repeats=st.repeats, warmup=st.warmup, resets=resets,
                                  deadline=deadline.sub(1.0 / (points - n + 1)), clock=st.clock_fn)
        for i, t in enumerate(res):
            out[i].append(t.median_s)
    return out


def time_rollback(model: Any, n: int, *, device: str, repeats: int, deadline: Deadline,
                  clock: Callable[[], float] = time.perf_counter) -> float:
    """Median seconds of checkpoint + rollback of n appended tokens (the forward itself untimed)."""
    base, toks, samples = model.pos, model.tokens(n, seed=99), []
    for _ in range(max(1, min(repeats, 5))):
        model.checkpoint()
        model.forward(toks)
        sync(device)
        samples.append(time_call(lambda: (model.rollback_to(base), model.checkpoint()), device, clock))
        if deadline.left() <= 0:
            break
    samples.sort()
    return samples[len(samples) // 2]


def extrapolate(shell: Sequence[float], groups: Sequence[tuple[Sequence[float], int, int]]) -> list[float]:
    """t(model) = t(shell) + sum_g count_g * (t(shell + m_g layers of g) - t(shell)) / m_g, per point.

    Args:
        shell: per-point times of the embedding/head shell alone.
        groups: (per-point times of shell + m_g layers, m_g, count_g in the full model) per layer kind.
    """
    out = []
    for i, base in enumerate(shell):
        per_layers = sum(count * max(0.0, times[i] - base) / m for times, m, count in groups)
        out.append(base + per_layers)
    return out


def sample_plan(spec: ModelSpec, *, layers_per_kind: int, context: int, extra: int, dtype_bytes: int,
                avail: int) -> list[tuple[LayerSpec, int, int]]:
    """(kind, m layers to instantiate, count in the model) per distinct layer kind, fitting `avail` together.

    Raises:
        UsageError: not even the embedding/head plus one layer of each kind fits.
    """
    groups = layer_groups(spec.layers)
    shell = model_bytes(spec, [], context=context, extra=extra, dtype_bytes=dtype_bytes)

    def per_layer(kind: LayerSpec) -> int:
        return model_bytes(spec, [kind], context=context, extra=extra, dtype_bytes=dtype_bytes) - shell

    ms = {kind: min(count, layers_per_kind) for kind, count in groups}
    while shell + sum(m * per_layer(k) for k, m in ms.items()) > avail and any(m > 1 for m in ms.values()):
        big = max((k for k in ms if ms[k] > 1), key=lambda k: ms[k] * per_layer(k))
        ms[big] -= 1
    need = shell + sum(m * per_layer(k) for k, m in ms.items())
    if need > avail:
        raise UsageError(f"Cannot probe '{spec.id}': the embedding/head plus one layer of each kind needs {need} "
                         f"bytes, {avail} are available (expected it to fit). Free memory, lower --context or "
                         f"probe on a larger device.")
    return [(kind, ms[kind], count) for kind, count in groups]


def _build(spec: ModelSpec, layers: Sequence[LayerSpec] | None, st: ProbeSettings, *, device: str, dtype: str,
           extra: int, share: SyntheticLM | None = None) -> SyntheticLM:
    return SyntheticLM(spec, layers=layers, device=device, dtype=dtype, context=st.context, extra=extra,
                       seed=st.seed, share_shell=share)


def probe_model(spec: ModelSpec, *, role: str, points: int, st: ProbeSettings, device: str,
                deadline: Deadline, progress: Progress | None = None, all_logits: bool = True) -> ModelCurve:
    """Time one model: t(n) for n = 1..points (verify: all logits; draft step: last logits only).

    Samples first (extrapolated curve), then the whole model when it fits in memory and, by the
    samples' numbers, in the time left (mode auto); mode full / extrapolate force one or the other.

    Raises:
        UsageError: not even one layer of each kind fits in memory, or mode 'full' does not fit.
    """
    dtype, dnote = probe_dtype(spec.dtype, st.dtype)
    db, extra = DTYPE_BYTES[dtype], points + 1
    avail = st.memory_bytes if st.memory_bytes is not None else available_bytes(device)
    act = activation_bytes(spec, points, st.context)
    full_bytes = model_bytes(spec, spec.layers, context=st.context, extra=extra, dtype_bytes=db) + act
    notes = [*approximations(spec, seed=st.seed), *([dnote] if dnote else [])]
    groups = layer_groups(spec.layers)

    def tick(label: str, lo: float, width: float) -> Callable[[int], None]:
        return lambda n: progress(f"{role} {spec.id}: {label}, n={n}", lo + width * (n - 1) / points) \
            if progress else None

    whole = f"all {spec.n_layers} layers"
    if st.mode == "full" and full_bytes > avail:
        raise UsageError(f"Cannot probe {role} '{spec.id}' whole: it needs {full_bytes} bytes, {avail} are "
                         f"available (expected it to fit). Use mode auto to extrapolate from a few layers.")
    whole_is_sample = len(groups) == 1 and groups[0][1] <= st.group_layers
    if (st.mode == "full" or whole_is_sample) and full_bytes <= avail:
        return _probe_full(spec, points=points, st=st, device=device, dtype=dtype, deadline=deadline,
                           tick=tick(whole, 0.0, 1.0), notes=notes, all_logits=all_logits)
    may_full = st.mode == "auto" and full_bytes <= avail
    curve, build_rate = _probe_samples(spec, points=points, st=st, device=device, dtype=dtype, avail=avail - act,
                                       deadline=deadline.sub(0.45 if may_full else 1.0), all_logits=all_logits,
                                       tick=tick("embedding/head + a few layers per kind", 0.0,
                                                 0.5 if may_full else 1.0), notes=notes)
    if not may_full:
        why = "" if st.mode == "extrapolate" else f": the whole model needs {full_bytes} bytes, {avail} available"
        return replace(curve, notes=(*curve.notes, f"whole model not instantiated{why}"))
    # predicted cost of the whole model: its build at the samples' rate + every timed call, 30% slack
    cost = full_bytes / build_rate + 1.3 * (st.warmup + st.repeats) * sum(curve.verify_s)
    if cost > deadline.left():
        return replace(curve, notes=(*curve.notes, f"whole model not timed: estimated {cost:.1f} s, "
                                                   f"{max(deadline.left(), 0.0):.1f} s of the budget left"))
    full = _probe_full(spec, points=points, st=st, device=device, dtype=dtype, deadline=deadline,
                       tick=tick(whole, 0.5, 0.5), notes=notes, all_logits=all_logits)
    err = max(abs(e - f) / f for e, f in zip(curve.verify_s, full.verify_s, strict=True))
    return replace(full, notes=(*full.notes, f"cross-check: extrapolation from {curve.layers_timed} layer(s) "
                                             f"was within {err:.1%} of the whole model (timed separately, so "
                                             f"machine noise is included)"))


def _probe_samples(spec: ModelSpec, *, points: int, st: ProbeSettings, device: str, dtype: str, avail: int,
                   deadline: Deadline, all_logits: bool, tick: Callable[[int], None],
                   notes: list[str]) -> tuple[ModelCurve, float]:
    """Extrapolated curve from the shell alone and the shell + m layers per kind, timed round-robin.

    Returns the curve and the build rate seen (bytes/s), to predict the whole model's build.
    """
    db, extra = DTYPE_BYTES[dtype], points + 1
    plan = sample_plan(spec, layers_per_kind=st.group_layers, context=st.context, extra=extra, dtype_bytes=db,
                       avail=avail)
    t0 = time.perf_counter()
    shell = _build(spec, [], st, device=device, dtype=dtype, extra=extra)
    stacks = [shell] + [_build(spec, [k] * m, st, device=device, dtype=dtype, extra=extra, share=shell)
                        for k, m, _c in plan]
    sync(device)
    built = shell.nbytes() + sum(s.nbytes() - shell.nbytes() for s in stacks[1:])  # one shared shell
    rate = built / max(time.perf_counter() - t0, 1e-6)
    times = time_stacks(stacks, points, device=device, st=st, deadline=deadline, all_logits=all_logits, tick=tick)
    rbs = [time_rollback(m, points, device=device, repeats=st.repeats, deadline=deadline, clock=st.clock_fn)
           for m in stacks]
    del stacks, shell
    _free(device)
    est = extrapolate(times[0], [(t, m, c) for t, (_k, m, c) in zip(times[1:], plan, strict=True)])
    rb = extrapolate([rbs[0]], [([r], m, c) for r, (_k, m, c) in zip(rbs[1:], plan, strict=True)])[0]
    timed = sum(m for _k, m, _c in plan)
    return ModelCurve(id=spec.id, verify_s=tuple(est), step_s=est[0], method="synthetic-extrapolated",
                      rollback_s=rb, layers_timed=timed, layers_total=spec.n_layers,
                      notes=(*notes, f"extrapolated: embedding/head timed alone and with {timed} layer(s) of "
                                     f"{len(plan)} kind(s); t = t_shell + sum over kinds of count x per-layer "
                                     f"cost")), rate


def _probe_full(spec: ModelSpec, *, points: int, st: ProbeSettings, device: str, dtype: str,
                deadline: Deadline, tick: Callable[[int], None], notes: list[str], all_logits: bool) -> ModelCurve:
    model = _build(spec, None, st, device=device, dtype=dtype, extra=points + 1)
    times = time_stacks([model], points, device=device, st=st, deadline=deadline, all_logits=all_logits,
                        tick=tick)[0]
    rb = time_rollback(model, points, device=device, repeats=st.repeats, deadline=deadline, clock=st.clock_fn)
    del model
    _free(device)
    return ModelCurve(id=spec.id, verify_s=tuple(times), step_s=times[0], method="synthetic", rollback_s=rb,
                      layers_timed=spec.n_layers, layers_total=spec.n_layers, notes=tuple(notes))


# --- per-round overhead --------------------------------------------------------------------

def sampling_overhead(vocab: int, k: int, *, device: str, temperature: float, st: ProbeSettings,
                      deadline: Deadline) -> tuple[float, float]:
    """(round_s, draft_sample_s): accept/reject of K drafted tokens + residual sample, and one draft sample.

    The round follows speculative sampling (Leviathan et al. 2023): p = target probs at K+1
    positions, q = draft probs at K; accept token i while u_i * q_i <= p_i; sample the next token
    from norm(max(0, p - q)) at the first rejection (or from p at K+1 if all accepted). fp32,
    on the device, with the host sync an engine needs to know how many were accepted.
    """
    torch = require_torch()
    g = torch.Generator(device="cpu")
    g.manual_seed(st.seed)
    t = max(temperature, 1e-3)
    tl = torch.randn(k + 1, vocab, generator=g).to(device)
    dl = torch.randn(k, vocab, generator=g).to(device)
    drafted = torch.randint(0, vocab, (k, 1), generator=g).to(device)

    def one_round() -> int:
        p, q = torch.softmax(tl / t, -1), torch.softmax(dl / t, -1)
        pt, qt = p[:k].gather(1, drafted)[:, 0], q.gather(1, drafted)[:, 0]
        accept = (torch.rand(k, device=device) * qt <= pt).int()
        n_acc = int(accept.cumprod(0).sum().item())
        r = (p[n_acc] - q[n_acc]).clamp_min(0) if n_acc < k else p[k]
        return int(torch.multinomial(r / r.sum(), 1).item())

    def draft_sample() -> int:
        return int(torch.multinomial(torch.softmax(dl[0] / t, -1), 1).item())

    with torch.inference_mode():
        rnd, ds = measure_round_robin([one_round, draft_sample], device=device, repeats=st.repeats,
                                      warmup=st.warmup, deadline=deadline, clock=st.clock_fn)
    return rnd.median_s, ds.median_s


# --- the probe -----------------------------------------------------------------------------

def _start(st: ProbeSettings) -> tuple[str, float, Deadline]:
    clock_start = time.perf_counter()  # the budget covers importing torch too
    require_torch()
    device = resolve_device(st.device)
    if st.clock == "thread" and device != "cpu":
        raise UsageError(f"Cannot probe with --clock thread on '{device}' (expected --device cpu).")
    budget = budget_for(device, st.budget_s)
    dl = Deadline(budget)
    dl.start = clock_start
    if device != "cpu":  # create the device context now, so no build or timed call pays for it
        require_torch().zeros(1, device=device)
        sync(device)
    return device, budget, dl


def _scaled(progress: Progress | None, lo: float, width: float) -> Progress | None:
    if progress is None:
        return None
    return lambda msg, frac: progress(msg, lo + width * frac)


def _finish(tcurve: ModelCurve, dcurve: ModelCurve | None, *, vocab: int, st: ProbeSettings, device: str,
            budget: float, dl: Deadline, backend: str, dtype: str, acceptance: Acceptance | None,
            notes: Sequence[str], progress: Progress | None) -> Profile:
    """Measure the per-round overhead and assemble the profile with its diagnosis."""
    if progress:
        progress("per-round overhead: sampling, comparison, rollback", 0.95)
    round_s, sample_s = sampling_overhead(vocab, st.max_k, device=device, temperature=st.temperature, st=st,
                                          deadline=dl.sub(1.0))
    parts = {"sampling_comparison_s": round_s, "target_rollback_s": tcurve.rollback_s}
    if dcurve is not None:
        parts["draft_rollback_s"] = dcurve.rollback_s
        dcurve = replace(dcurve, step_s=dcurve.step_s + sample_s,
                         notes=(*dcurve.notes, f"step_s = one-token forward + sampling one token ({sample_s:.3g} s)"))
    overhead = sum(parts.values())
    if progress:
        progress("done", 1.0)
    threads = f", {st.threads} CPU thread(s)" if st.threads and device == "cpu" else ""
    threads += ", thread CPU time (not wall time)" if st.clock == "thread" else ""
    return Profile(device=device, device_name=device_name(device), backend=backend, dtype=dtype,
                   context=st.context, target=tcurve, draft=dcurve, overhead_s=overhead, overhead_parts=parts,
                   acceptance=acceptance, diagnosis=diagnose(tcurve, dcurve, overhead, acceptance),
                   versions=library_versions(), timestamp=now(), budget_s=budget, elapsed_s=dl.elapsed(),
                   notes=(f"K_max {st.max_k}, context {st.context}, temperature {st.temperature:g}, median of "
                          f"{st.repeats} after {st.warmup} warm-up{threads}", *notes))


def is_out_of_memory(e: BaseException) -> bool:
    """torch.OutOfMemoryError (CUDA/MPS allocators), MemoryError, or a RuntimeError saying so (CPU allocator)."""
    torch = sys.modules.get("torch")
    oom = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    if (oom is not None and isinstance(e, oom)) or isinstance(e, MemoryError):
        return True
    text = str(e).lower()
    return isinstance(e, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def _release_memory() -> None:
    """Return cached device memory after a failed allocation (tensors are gone with the failed frames)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is None:
        return
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    mps = getattr(torch, "mps", None)
    if mps is not None and hasattr(mps, "empty_cache") and torch.backends.mps.is_available():
        mps.empty_cache()


def _oom_guarded(run: Callable[[], Profile], st: ProbeSettings) -> Profile:
    """Run a probe; an out-of-memory error becomes one UsageError line, with the memory given back.

    The report is raised outside the except block, so neither the traceback nor the chained error
    keeps the failed frames (and their tensors) alive.
    """
    try:
        return run()
    except BaseException as e:
        if not is_out_of_memory(e):
            raise
        reason = (str(e).strip().split("\n", 1)[0] or type(e).__name__)[:160]
        e.__traceback__ = None
    _release_memory()
    raise UsageError(f"Cannot probe on '{st.device}': the device ran out of memory although the probe had "
                     f"checked its free memory first ({reason}). Lower --context or --max-k, use --dtype bf16 or "
                     f"f16, or free memory held by other programs.")


def run_synthetic(target: ModelSpec, draft: ModelSpec | None, st: ProbeSettings, *,
                  progress: Progress | None = None) -> Profile:
    """The synthetic probe of a target (and draft) on this machine, within the budget.

    Memory is checked before anything is allocated; if the device still runs out (another process
    took memory, an estimate was short), the error is reported and the memory released.

    Args:
        target: the target's spec (t_v(n) for n = 1..max_k+1).
        draft: the draft's spec (t_d), or None.
        st: device, dtype, K, context, budget, repeats.
        progress: called with (message, fraction done) while probing.

    Returns:
        The Profile (curves, overhead, diagnosis, device, versions, timestamp).

    Raises:
        TorchUnavailable: torch is not installed.
        UsageError: bad device/dtype, a model that does not fit even one layer, or out of memory.
    """
    return _oom_guarded(lambda: _run_synthetic(target, draft, st, progress=progress), st)


def _run_synthetic(target: ModelSpec, draft: ModelSpec | None, st: ProbeSettings, *,
                   progress: Progress | None) -> Profile:
    device, budget, dl = _start(st)
    share = 0.6 if draft is not None else 0.9
    with cpu_threads(st.threads):
        tcurve = probe_model(target, role="target", points=st.max_k + 1, st=st, device=device,
                             deadline=dl.sub(share), progress=_scaled(progress, 0.0, share))
        dcurve = None
        if draft is not None:
            dcurve = probe_model(draft, role="draft", points=1, st=st, device=device, deadline=dl.sub(0.85),
                                 progress=_scaled(progress, share, 0.9 - share), all_logits=False)
        vocab = min(target.vocab, draft.vocab) if draft is not None else target.vocab
        dtype, _ = probe_dtype(target.dtype, st.dtype)
        return _finish(tcurve, dcurve, vocab=vocab, st=st, device=device, budget=budget, dl=dl,
                       backend=f"torch-synthetic ({device})", dtype=dtype, acceptance=None, notes=(),
                       progress=progress)


def run_real(target_dir: str, target: ModelSpec, draft_dir: str | None, draft: ModelSpec | None,
             st: ProbeSettings, *, prompts: Sequence[Any] = (), max_new_tokens: int = 32,
             progress: Progress | None = None) -> Profile:
    """The same curves on the real models (transformers, local safetensors), plus acceptance with a draft.

    Args:
        target_dir / draft_dir: local model folders with config.json and *.safetensors.
        target / draft: their specs (for the memory check).
        st: device, dtype, K, context, budget, temperature.
        prompts: calibration prompts (acceptance.load_prompts()).
        max_new_tokens: continuation length the target generates per prompt.
        progress: called with (message, fraction done).

    Raises:
        TorchUnavailable, UsageError (not local safetensors, does not fit, out of memory, prefill over
        budget), IncompatiblePair (the draft tokenizes the prompts differently).
    """
    return _oom_guarded(lambda: _run_real(target_dir, target, draft_dir, draft, st, prompts=prompts,
                                          max_new_tokens=max_new_tokens, progress=progress), st)


def _run_real(target_dir: str, target: ModelSpec, draft_dir: str | None, draft: ModelSpec | None,
              st: ProbeSettings, *, prompts: Sequence[Any], max_new_tokens: int,
              progress: Progress | None) -> Profile:
    from .acceptance import measure_acceptance
    from .real import RealLM, load_causal_lm, real_bytes

    device, budget, dl = _start(st)
    dtype, _ = probe_dtype(target.dtype, st.dtype)
    need = real_bytes(target, dtype, st.context) + (real_bytes(draft, dtype, st.context) if draft else 0)
    avail = st.memory_bytes if st.memory_bytes is not None else available_bytes(device)
    if need > avail:
        raise UsageError(f"Cannot load the real weights: they need about {need} bytes with their KV caches, "
                         f"{avail} are available (expected them to fit). Drop --real to use the synthetic probe.")
    curves: list[ModelCurve] = []
    models = []
    with cpu_threads(st.threads):
        for role, path, spec, points, lo in (("target", target_dir, target, st.max_k + 1, 0.0),
                                             ("draft", draft_dir, draft, 1, 0.4)):
            if path is None or spec is None:
                continue
            if progress:
                progress(f"{role} {spec.id}: loading real weights", lo)
            model = load_causal_lm(path, device=device, dtype=dtype)
            lm = RealLM(model, device=device, context=st.context, seed=st.seed, deadline=dl.sub(0.5))
            tick = (lambda n, role=role, spec=spec, lo=lo, points=points: progress(f"{role} {spec.id}: real weights, n={n}",
                                                                    lo + 0.3 * n / points)) if progress else None
            times = time_stacks([lm], points, device=device, st=st, deadline=dl.sub(0.4 if role == "target" else 0.5),
                                all_logits=role == "target", tick=tick)[0]
            rb = time_rollback(lm, points, device=device, repeats=st.repeats, deadline=dl, clock=st.clock_fn)
            del lm
            _free(device)
            curves.append(ModelCurve(id=spec.id, verify_s=tuple(times), step_s=times[0], method="real",
                                     rollback_s=rb, layers_timed=spec.n_layers, layers_total=spec.n_layers,
                                     notes=(f"transformers {library_versions().get('transformers', '?')}, real "
                                            f"weights from {path}; KV cache filled by a prefill of random tokens",)))
            models.append(model)
        acc = None
        if len(models) == 2:
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(target_dir, trust_remote_code=False)
            dtok = None
            if any(Path(draft_dir).glob("tokenizer*.json")):
                dtok = AutoTokenizer.from_pretrained(draft_dir, trust_remote_code=False)
            acc = measure_acceptance(models[0], models[1], tok, prompts, temperature=st.temperature,
                                     max_new_tokens=max_new_tokens, k_max=st.max_k, device=device, seed=st.seed,
                                     deadline=dl.sub(0.9), draft_tokenizer=dtok,
                                     progress=_scaled(progress, 0.55, 0.4))
        vocab = min(int(m.config.get_text_config().vocab_size) for m in models)
        del models
        _free(device)
        return _finish(curves[0], curves[1] if len(curves) > 1 else None, vocab=vocab, st=st, device=device,
                       budget=budget, dl=dl, backend=f"transformers ({device})", dtype=dtype, acceptance=acc,
                       notes=("real weights",), progress=progress)


def now() -> str:
    """UTC timestamp, ISO 8601, seconds."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()
