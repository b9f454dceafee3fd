"""The budgeted probe: t_v(1..K+1) of the target, t_d of the draft, the per-round overhead -> a Profile.

Why one module: both torch probes, on synthetic stacks (`run_synthetic`) and on the real weights
through transformers (`run_real`), start the same way (torch imported and the device context
created inside the --budget-s clock), share the budget between target, draft and overhead, and
end the same way: the per-round overhead measured (speculative sampling's accept/reject), the
Profile assembled with its diagnosis, and an out-of-memory error turned into one UsageError line.
How one model is timed lives in curves.py, the device facts in device.py, the flags in settings.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from ..core.spec import ModelSpec
from ..speed.diagnosis import diagnose
from ..speed.profile import Finding, MeasuredAcceptance, ModelCurve, Profile
from . import require_torch
from .acceptance import measure_acceptance
from .curves import probe_model, time_rollback, time_stacks
from .device import (
    available_bytes,
    budget_for,
    cpu_threads,
    device_name,
    free_memory,
    is_out_of_memory,
    library_versions,
    now,
    release_memory,
    resolve_device,
)
from .real import RealLM, load_causal_lm, load_tokenizer, real_bytes
from .sanity import Steps, Verdict, checked
from .settings import ProbeSettings, Progress
from .synthetic_shapes import probe_dtype
from .timing import Deadline, measure_round_robin, sync

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
            budget: float, dl: Deadline, backend: str, dtype: str, acceptance: MeasuredAcceptance | None,
            notes: Sequence[str], progress: Progress | None, unreliable: str | None = None) -> Profile:
    """Measure the per-round overhead and assemble the profile with its diagnosis (an unreliable
    measurement first, as a problem: probe/sanity.py)."""
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
    found = diagnose(tcurve, dcurve, overhead, acceptance, device)
    if unreliable:
        found = (Finding("unreliable_measurement", "problem", unreliable), *found)
    return Profile(device=device, device_name=device_name(device), backend=backend, dtype=dtype,
                   context=st.context, target=tcurve, draft=dcurve, overhead_s=overhead, overhead_parts=parts,
                   acceptance=acceptance, diagnosis=found, unreliable=unreliable,
                   versions=library_versions(), timestamp=now(), budget_s=budget, elapsed_s=dl.elapsed(),
                   notes=(f"K_max {st.max_k}, context {st.context}, temperature {st.temperature:g}, median of "
                          f"{st.repeats} after {st.warmup} warm-up{threads}", *notes))


def _oom_guarded(run: Callable[[], Profile], st: ProbeSettings) -> Profile:
    """Run a probe; an out-of-memory error becomes one UsageError line, with the memory given back.

    The report is raised outside the except block, so neither the traceback nor the chained error
    keeps the failed frames (and their tensors) alive.
    """
    try:
        return run()
    except (RuntimeError, MemoryError) as e:  # torch.OutOfMemoryError is a RuntimeError
        if not is_out_of_memory(e):
            raise
        reason = (str(e).strip().split("\n", 1)[0] or type(e).__name__)[:160]
        e.__traceback__ = None
    release_memory()
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
    for spec in (target, draft):
        check_heads(spec)
    return _oom_guarded(lambda: _run_synthetic(target, draft, st, progress=progress), st)


def check_heads(spec: ModelSpec | None) -> None:
    """Refuse a model whose attention torch cannot run: query heads must be a multiple of the KV heads.

    Why here: the memory ledger sizes such a config (the bytes are well defined), but SDPA's grouped
    attention (and every engine's GQA kernel) needs num_attention_heads % num_key_value_heads == 0; torch
    otherwise fails deep inside the first forward with a RuntimeError.

    Raises:
        UsageError: a layer with more KV heads than query heads, or query heads not a multiple of them.
    """
    if spec is None:
        return
    for i, lay in enumerate(spec.layers):
        if lay.kv_lora_rank or not lay.kv_heads or not lay.q_heads:
            continue  # MLA, recurrent or attention-free layers: no grouped heads
        if lay.kv_heads > lay.q_heads or lay.q_heads % lay.kv_heads:
            raise UsageError(f"Cannot probe '{spec.id}': layer {i} has {lay.q_heads} query heads and "
                             f"{lay.kv_heads} KV heads (expected num_attention_heads to be a multiple of "
                             f"num_key_value_heads). Check config.json.")


def _run_synthetic(target: ModelSpec, draft: ModelSpec | None, st: ProbeSettings, *,
                   progress: Progress | None) -> Profile:
    device, budget, dl = _start(st)
    share = 0.6 if draft is not None else 0.9
    unreliable = None
    with cpu_threads(st.threads):
        tsp: list[float] = []
        tcurve = probe_model(target, role="target", points=st.max_k + 1, st=st, device=device,
                             deadline=dl.sub(share), progress=_scaled(progress, 0.0, share), spreads=tsp)
        dcurve = None
        if draft is not None:
            dsp: list[float] = []
            dcurve = probe_model(draft, role="draft", points=1, st=st, device=device, deadline=dl.sub(0.7),
                                 progress=_scaled(progress, share, 0.9 - share), all_logits=False, spreads=dsp)
            first = Steps(tcurve.step_s, dcurve.step_s, max(tsp, default=0.0), max(dsp, default=0.0))
            verdict = checked(target, draft, first, lambda: _remeasure_steps(target, draft, st, device, dl))
            tcurve, dcurve = _kept(verdict, tcurve, dcurve)
            unreliable = verdict.unreliable
        vocab = min(target.vocab, draft.vocab) if draft is not None else target.vocab
        dtype, _ = probe_dtype(target.dtype, st.dtype)
        return _finish(tcurve, dcurve, vocab=vocab, st=st, device=device, budget=budget, dl=dl,
                       backend=f"torch-synthetic ({device})", dtype=dtype, acceptance=None, notes=(),
                       progress=progress, unreliable=unreliable)


def _remeasure_steps(target: ModelSpec, draft: ModelSpec, st: ProbeSettings, device: str, dl: Deadline) -> Steps:
    """Both step costs timed again (n = 1 only), round after round within half of what is left each."""
    tsp: list[float] = []
    dsp: list[float] = []
    t = probe_model(target, role="target", points=1, st=st, device=device, deadline=dl.sub(0.5), spreads=tsp)
    d = probe_model(draft, role="draft", points=1, st=st, device=device, deadline=dl.sub(0.5), all_logits=False,
                    spreads=dsp)
    return Steps(t.step_s, d.step_s, max(tsp, default=0.0), max(dsp, default=0.0))


def _kept(verdict: Verdict, tcurve: ModelCurve, dcurve: ModelCurve) -> tuple[ModelCurve, ModelCurve]:
    """The curves with a re-measurement's step costs in them: the target's curve rescaled to its new t_v(1)
    (its shape t_v(n)/t_v(1) was timed round by round, so it stands), the draft's step replaced."""
    if not verdict.remeasured:
        return tcurve, dcurve
    scale = verdict.steps.target_s / tcurve.step_s
    why = ("re-measured: the first step costs were physically impossible (probe/sanity.py)"
           if verdict.unreliable is None else "re-measured once; still impossible: unreliable")
    t = replace(tcurve, verify_s=tuple(v * scale for v in tcurve.verify_s), step_s=verdict.steps.target_s,
                notes=(*tcurve.notes, f"{why}; t_v(1) {tcurve.step_s:.3g} s -> {verdict.steps.target_s:.3g} s"))
    d = replace(dcurve, verify_s=(verdict.steps.draft_s, *dcurve.verify_s[1:]), step_s=verdict.steps.draft_s,
                notes=(*dcurve.notes, f"{why}; t_d {dcurve.step_s:.3g} s -> {verdict.steps.draft_s:.3g} s"))
    return t, d


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
        budget), IncompatiblePair (the draft tokenizes the prompts differently), HeaderError / SourceError
        (a corrupt safetensors file, a missing or unreadable tokenizer, weights transformers cannot load).
    """
    for spec in (target, draft):
        check_heads(spec)
    return _oom_guarded(lambda: _run_real(target_dir, target, draft_dir, draft, st, prompts=prompts,
                                          max_new_tokens=max_new_tokens, progress=progress), st)


def _run_real(target_dir: str, target: ModelSpec, draft_dir: str | None, draft: ModelSpec | None,
              st: ProbeSettings, *, prompts: Sequence[Any], max_new_tokens: int,
              progress: Progress | None) -> Profile:
    device, budget, dl = _start(st)
    dtype, _ = probe_dtype(target.dtype, st.dtype)
    need = real_bytes(target, dtype, st.context) + (real_bytes(draft, dtype, st.context) if draft else 0)
    avail = st.memory_bytes if st.memory_bytes is not None else available_bytes(device)
    if need > avail:
        raise UsageError(f"Cannot load the real weights: they need about {need} bytes with their KV caches, "
                         f"{avail} are available (expected them to fit). Drop --real to use the synthetic probe.")
    tok = dtok = None
    if draft_dir is not None and draft is not None:  # acceptance needs them: a bad tokenizer fails before timing
        tok = load_tokenizer(target_dir)
        dtok = load_tokenizer(draft_dir) if any(Path(draft_dir).glob("tokenizer*.json")) else None
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
            free_memory(device)
            curves.append(ModelCurve(id=spec.id, verify_s=tuple(times), step_s=times[0], method="real",
                                     rollback_s=rb, layers_timed=spec.n_layers, layers_total=spec.n_layers,
                                     notes=(f"transformers {library_versions().get('transformers', '?')}, real "
                                            f"weights from {path}; KV cache filled by a prefill of random tokens",)))
            models.append(model)
        acc = None
        if len(models) == 2:
            acc = measure_acceptance(models[0], models[1], tok, prompts, temperature=st.temperature,
                                     max_new_tokens=max_new_tokens, k_max=st.max_k, device=device, seed=st.seed,
                                     deadline=dl.sub(0.9), draft_tokenizer=dtok,
                                     progress=_scaled(progress, 0.55, 0.4))
        vocab = min(int(m.config.get_text_config().vocab_size) for m in models)
        del models
        free_memory(device)
        return _finish(curves[0], curves[1] if len(curves) > 1 else None, vocab=vocab, st=st, device=device,
                       budget=budget, dl=dl, backend=f"transformers ({device})", dtype=dtype, acceptance=acc,
                       notes=("real weights",), progress=progress)
