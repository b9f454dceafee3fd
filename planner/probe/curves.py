"""The cost curve of one model: t(n) for n = 1..points within the memory and time left.

How a model is timed (`probe_model`):
1. memory is checked before anything is allocated (shapes are known torch-free);
2. sample stacks are timed first: the embedding/head shell alone, then the shell plus m layers
   of each distinct layer kind; per layer cost = (t(shell + m layers) - t(shell)) / m, and
   t(model) = t(shell) + sum over kinds of count x per-layer cost (labelled "extrapolated");
3. if the whole model fits in memory and, by the samples' numbers, in the time left, it is
   built and timed too (labelled "synthetic"), and the extrapolation error is recorded.
Every timed call goes through timing.measure: warm-up, device sync, median of repeats, and a
Deadline so the whole probe stays within --budget-s. The real-weights probe (runner.run_real)
times its models with the same `time_stacks` and `time_rollback`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..core.errors import UsageError
from ..core.spec import LayerSpec, ModelSpec
from ..speed.profile import ModelCurve
from .device import available_bytes, free_memory
from .settings import ProbeSettings, Progress
from .synthetic import SyntheticLM, approximations
from .synthetic_shapes import DTYPE_BYTES, activation_bytes, layer_groups, model_bytes, probe_dtype
from .timing import Deadline, measure_round_robin, sync, time_call


def time_stacks(models: Sequence[Any], points: int, *, device: str, st: ProbeSettings, deadline: Deadline,
                all_logits: bool = True, tick: Callable[[int], None] | None = None,
                spreads: list[float] | None = None) -> list[list[float]]:
    """Median t(n), n = 1..points, of each model: n tokens appended at the context, then rolled back.

    The models are timed round-robin for each n (timing.measure_round_robin), so a sample stack
    and the stacks it is compared or combined with see the same machine state. The rollback runs
    after each call, outside the clock; each n gets an equal share of what is left of `deadline`.
    `spreads`, when given, receives the largest IQR / median of any model's repeats at n = 1 (the step
    cost the probe's sanity check compares: probe/sanity.py).
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
        if spreads is not None and n == 1:
            spreads.append(max(t.rel_iqr for t in res))
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
                deadline: Deadline, progress: Progress | None = None, all_logits: bool = True,
                spreads: list[float] | None = None) -> ModelCurve:
    """Time one model: t(n) for n = 1..points (verify: all logits; draft step: last logits only).

    Samples first (extrapolated curve), then the whole model when it fits in memory and, by the
    samples' numbers, in the time left (mode auto); mode full / extrapolate force one or the other.
    `spreads` receives the step cost's repeat spread of each timing pass (time_stacks).

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
                           tick=tick(whole, 0.0, 1.0), notes=notes, all_logits=all_logits, spreads=spreads)
    may_full = st.mode == "auto" and full_bytes <= avail
    curve, build_rate = _probe_samples(spec, points=points, st=st, device=device, dtype=dtype, avail=avail - act,
                                       deadline=deadline.sub(0.45 if may_full else 1.0), all_logits=all_logits,
                                       tick=tick("embedding/head + a few layers per kind", 0.0,
                                                 0.5 if may_full else 1.0), notes=notes, spreads=spreads)
    if not may_full:
        why = "" if st.mode == "extrapolate" else f": the whole model needs {full_bytes} bytes, {avail} available"
        return replace(curve, notes=(*curve.notes, f"whole model not instantiated{why}"))
    # predicted cost of the whole model: its build at the samples' rate + every timed call, 30% slack
    cost = full_bytes / build_rate + 1.3 * (st.warmup + st.repeats) * sum(curve.verify_s)
    if cost > deadline.left():
        return replace(curve, notes=(*curve.notes, f"whole model not timed: estimated {cost:.1f} s, "
                                                   f"{max(deadline.left(), 0.0):.1f} s of the budget left"))
    full = _probe_full(spec, points=points, st=st, device=device, dtype=dtype, deadline=deadline,
                       tick=tick(whole, 0.5, 0.5), notes=notes, all_logits=all_logits, spreads=spreads)
    err = max(abs(e - f) / f for e, f in zip(curve.verify_s, full.verify_s, strict=True))
    return replace(full, notes=(*full.notes, f"cross-check: extrapolation from {curve.layers_timed} layer(s) "
                                             f"was within {err:.1%} of the whole model (timed separately, so "
                                             f"machine noise is included)"))


def _probe_samples(spec: ModelSpec, *, points: int, st: ProbeSettings, device: str, dtype: str, avail: int,
                   deadline: Deadline, all_logits: bool, tick: Callable[[int], None],
                   notes: list[str], spreads: list[float] | None = None) -> tuple[ModelCurve, float]:
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
    times = time_stacks(stacks, points, device=device, st=st, deadline=deadline, all_logits=all_logits, tick=tick,
                        spreads=spreads)
    rbs = [time_rollback(m, points, device=device, repeats=st.repeats, deadline=deadline, clock=st.clock_fn)
           for m in stacks]
    del stacks, shell
    free_memory(device)
    est = extrapolate(times[0], [(t, m, c) for t, (_k, m, c) in zip(times[1:], plan, strict=True)])
    rb = extrapolate([rbs[0]], [([r], m, c) for r, (_k, m, c) in zip(rbs[1:], plan, strict=True)])[0]
    timed = sum(m for _k, m, _c in plan)
    return ModelCurve(id=spec.id, verify_s=tuple(est), step_s=est[0], method="synthetic-extrapolated",
                      rollback_s=rb, layers_timed=timed, layers_total=spec.n_layers,
                      notes=(*notes, f"extrapolated: embedding/head timed alone and with {timed} layer(s) of "
                                     f"{len(plan)} kind(s); t = t_shell + sum over kinds of count x per-layer "
                                     f"cost")), rate


def _probe_full(spec: ModelSpec, *, points: int, st: ProbeSettings, device: str, dtype: str,
                deadline: Deadline, tick: Callable[[int], None], notes: list[str], all_logits: bool,
                spreads: list[float] | None = None) -> ModelCurve:
    model = _build(spec, None, st, device=device, dtype=dtype, extra=points + 1)
    times = time_stacks([model], points, device=device, st=st, deadline=deadline, all_logits=all_logits,
                        tick=tick, spreads=spreads)[0]
    rb = time_rollback(model, points, device=device, repeats=st.repeats, deadline=deadline, clock=st.clock_fn)
    del model
    free_memory(device)
    return ModelCurve(id=spec.id, verify_s=tuple(times), step_s=times[0], method="synthetic", rollback_s=rb,
                      layers_timed=spec.n_layers, layers_total=spec.n_layers, notes=tuple(notes))
