"""Measure speculative decoding against plain decoding, and the speed model's prediction beside it.

Why on the same steppers: the prediction uses t_v(n), t_d and the per-round overhead measured
on exactly the models (and caches) the decode runs, at the mean context of the generation, and
the acceptance the decode itself saw (per position, from the histogram of accepted drafts). So
the error printed is the speed model's error (the round-time algebra), not an acceptance guess.

Timing habits (docs/bench.md "Accuracy benchmark"): warm-up left out, device synchronised around the clock, median of
repeats; prefill is not timed (it is the same with or without a draft).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import UsageError
from ..speed import acceptance as acc
from ..speed import model as speed
from ..speed.model import Costs
from .decode import DecodeResult, Stepper, StepRecord, speculative_decode, target_decode

MakeStepper = Callable[[], Stepper]
# --clock: wall time, or this thread's CPU time (immune to other processes on a shared machine).
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "thread": time.thread_time}


@dataclass(frozen=True)
class BenchResult:
    k: int
    tokens: int
    prompts: int
    baseline_tokens_per_s: float
    speculative_tokens_per_s: float
    measured_speedup: float
    predicted_speedup: float
    error: float  # (predicted - measured) / measured
    greedy_identical: bool | None
    acceptance: dict[str, Any]
    costs: Costs
    prediction: speed.Prediction
    histogram: tuple[int, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    method: str = "draft_model"  # what drafted: a draft model, n-gram lookup, early exit (bench/methods.py)
    generate_speedup: float | None = None  # the same method through transformers' generate(), when run
    generate_identical: bool | None = None


def measure_costs(target: Stepper, draft: Stepper, prefix: Sequence[int], *, k_max: int, vocab_probe: Sequence[int],
                  sync: Callable[[], None] = lambda: None, repeats: int = 5, warmup: int = 2,
                  clock: Callable[[], float] = time.perf_counter) -> Costs:
    """t_v(n) for n = 1..k_max+1 and t_d on a prefix of `len(prefix)` tokens; t_o = both rollbacks.

    Round-robin: each repeat times every point once, in turn, so slow drifts (allocator warm-up,
    frequency, other load) hit all points alike and the ratios t_v(n)/t_v(1), t_d/t_v(1) the speed
    model depends on stay unbiased. `vocab_probe` supplies the token ids fed (k_max+1 valid ids).
    """
    target.forward(list(prefix))
    draft.forward(list(prefix))
    toks = list(vocab_probe)[: k_max + 1]
    km1 = max(k_max - 1, 1)

    def fill() -> None:
        target.forward(toks[:k_max])
        draft.forward(toks[:km1])

    def rollback() -> None:
        target.rollback(k_max)
        draft.rollback(km1)

    def verify_n(n: int) -> Callable[[], object]:
        return lambda: target.forward(toks[:n])

    def rollback_n(n: int) -> Callable[[], object]:
        return lambda: target.rollback(n)

    points: list[tuple[Callable[[], object], Callable[[], object], Callable[[], object]]] = [
        (lambda: None, verify_n(n), rollback_n(n)) for n in range(1, k_max + 2)]
    points.append((lambda: None, lambda: draft.forward(toks[:1]), lambda: draft.rollback(1)))
    points.append((fill, rollback, lambda: None))  # t_o: the rollbacks of one round
    samples: list[list[float]] = [[] for _ in points]
    for i in range(warmup + repeats):
        for j, (before, fn, after) in enumerate(points):
            before()
            sync()
            t0 = clock()
            fn()
            sync()
            if i >= warmup:
                samples[j].append(clock() - t0)
            after()
    med = [statistics.median(x) for x in samples]
    return Costs(verify_s=tuple(med[: k_max + 1]), draft_s=med[k_max + 1], overhead_s=med[k_max + 2],
                 source="measured on the bench's models (round-robin, median)", context=len(prefix))


def histogram(records: Sequence[StepRecord], k: int) -> tuple[int, ...]:
    """counts[j] = full-K rounds in which j drafts were accepted (short final rounds left out)."""
    counts = [0] * (k + 1)
    for r in records:
        if r.drafted == k:
            counts[r.accepted] += 1
    return tuple(counts)


def acceptance_summary(records: Sequence[StepRecord], k: int) -> dict[str, Any]:
    """The same decode's acceptance in every convention (docs/speed.md 'Acceptance')."""
    counts = histogram(records, k)
    drafted = sum(r.drafted for r in records)
    accepted = sum(r.accepted for r in records)
    out: dict[str, Any] = {"histogram": list(counts), "per_position": list(acc.per_position_from_histogram(counts)),
                           "accepted_per_drafted": accepted / drafted if drafted else None,
                           "mean_accepted_length": (accepted + len(records)) / len(records) if records else None}
    if sum(counts):
        fit = acc.from_histogram(counts)
        out.update(alpha=fit.alpha, alpha_low=fit.low, alpha_high=fit.high)
    return out


def bench_clock(name: str, device: str) -> Callable[[], float]:
    """The clock `--clock NAME` times with; `thread` also pins torch to one thread, so the CPU time
    of this thread is all the decode's work.

    Raises:
        UsageError: an unknown clock, or `thread` on a device other than cpu.
    """
    if name not in CLOCKS:
        raise UsageError(f"Cannot use --clock '{name}' (expected wall or thread).")
    if name == "thread":
        if device != "cpu":
            raise UsageError(f"Cannot use --clock thread on '{device}' (expected --device cpu).")
        import torch

        torch.set_num_threads(1)
    return CLOCKS[name]


# decodes of every prompt before the timed repeats (compile, caches, clocks settle), discarded
WARMUP = 1


def _decode_all(fn: Callable[[list[int]], DecodeResult], prompts: Sequence[list[int]],
                done: Callable[[], None] = lambda: None) -> tuple[float, list]:
    results = []
    for p in prompts:
        results.append(fn(list(p)))
        done()  # one decode finished: the progress line (rate-limited by its caller)
    return sum(r.seconds for r in results), results


@dataclass(frozen=True)
class Timing:
    """How a bench reads time: `sync` waits for the device around the clock, `clock` is wall time or this
    thread's CPU time (`time.thread_time`, with one torch thread: immune to other processes)."""

    sync: Callable[[], None] = lambda: None
    clock: Callable[[], float] = time.perf_counter


def run_pair(make_target: MakeStepper, make_draft: MakeStepper, prompts: Sequence[list[int]], *, k: int,
             tokens: int, temperature: float = 0.0, repeats: int = 3, warmup: int = WARMUP, seed: int = 0,
             cost_repeats: int = 5, timing: Timing = Timing(),  # frozen: one shared default is safe
             progress: Callable[[str], None] = lambda what: None) -> BenchResult:
    """Baseline vs speculative tokens/s on the same prompts, and the prediction from measured costs.

    Each repeat decodes every prompt with fresh caches; the median total time over repeats is used.
    `timing` says how time is read (Timing); `progress(what)` is called after each of the
    2 x (warmup + repeats) x prompts decodes.
    """
    import torch

    sync, clock = timing.sync, timing.clock

    def gen() -> Any:
        return torch.Generator().manual_seed(seed)

    base_times, spec_times = [], []
    base_res: list[DecodeResult] = []
    spec_res: list[DecodeResult] = []
    for i in range(warmup + repeats):  # interleaved, so both see the same machine state
        tb, base_res = _decode_all(lambda p: target_decode(make_target(), p, max_new_tokens=tokens,
                                                           temperature=temperature, generator=gen(), sync=sync,
                                                           clock=clock),
                                   prompts, lambda: progress("baseline"))
        ts, spec_res = _decode_all(lambda p: speculative_decode(make_target(), make_draft(), p, k=k,
                                                                max_new_tokens=tokens, temperature=temperature,
                                                                generator=gen(), sync=sync, clock=clock), prompts,
                                   lambda: progress("speculative"))
        if i >= warmup:
            base_times.append(tb)
            spec_times.append(ts)
    n_tokens = tokens * len(prompts)
    base_tps = n_tokens / statistics.median(base_times)
    spec_tps = n_tokens / statistics.median(spec_times)
    records = [r for res in spec_res for r in res.records]
    summary = acceptance_summary(records, k)
    identical = all(b.tokens == s.tokens for b, s in zip(base_res, spec_res, strict=True)) if temperature <= 0 \
        else None
    mid = sum(len(p) for p in prompts) // len(prompts) + tokens // 2
    probe_ids = list(prompts[0])[: k + 1] or [0]
    probe_ids += [probe_ids[-1]] * (k + 1 - len(probe_ids))
    filler = (list(prompts[0]) * (mid // max(len(prompts[0]), 1) + 1))[:mid]
    costs = measure_costs(make_target(), make_draft(), filler, k_max=k, vocab_probe=probe_ids, sync=sync,
                          repeats=cost_repeats, clock=clock)
    per_pos = summary["per_position"]
    alpha: Any = per_pos if len(per_pos) >= k else summary.get("alpha", 0.0)
    pred = speed.predict(costs.verify_s, costs.draft_s, alpha, costs.overhead_s, k_max=k)
    predicted = pred.speedup_by_k[k - 1]
    measured = spec_tps / base_tps
    return BenchResult(k=k, tokens=tokens, prompts=len(prompts), baseline_tokens_per_s=base_tps,
                       speculative_tokens_per_s=spec_tps, measured_speedup=measured, predicted_speedup=predicted,
                       error=(predicted - measured) / measured, greedy_identical=identical, acceptance=summary,
                       costs=costs, prediction=pred, histogram=tuple(summary["histogram"]))


def choose_k(make_target: MakeStepper, make_draft: MakeStepper, prompt: list[int], *, k_max: int, tokens: int,
             temperature: float = 0.0, sync: Callable[[], None] = lambda: None) -> tuple[int, speed.Prediction]:
    """`--k auto`: one exploratory decode at K = k_max gives per-position acceptance; costs are measured;
    the speed model picks K."""
    res = speculative_decode(make_target(), make_draft(), prompt, k=k_max, max_new_tokens=tokens,
                             temperature=temperature, sync=sync)
    summary = acceptance_summary(res.records, k_max)
    filler = (prompt * (tokens // max(len(prompt), 1) + 2))[: len(prompt) + tokens // 2]
    ids = (prompt + [prompt[-1]] * (k_max + 1))[: k_max + 1]
    costs = measure_costs(make_target(), make_draft(), filler, k_max=k_max, vocab_probe=ids, sync=sync)
    per_pos = summary["per_position"]
    alpha: Any = per_pos if len(per_pos) >= k_max else summary.get("alpha", 0.5)
    pred = speed.predict(costs.verify_s, costs.draft_s, alpha, costs.overhead_s, k_max=min(k_max, len(per_pos) or k_max))
    return pred.k_best, pred


def result_json(r: BenchResult) -> dict[str, Any]:
    """The `planner bench --json` schema (docs/bench.md)."""
    return {"baseline_tokens_per_s": r.baseline_tokens_per_s, "speculative_tokens_per_s": r.speculative_tokens_per_s,
            "measured_speedup": r.measured_speedup, "predicted_speedup": r.predicted_speedup, "error": r.error,
            "k": r.k, "tokens": r.tokens, "prompts": r.prompts, "acceptance": r.acceptance,
            "greedy_identical": r.greedy_identical, "method": r.method,
            "generate": None if r.generate_speedup is None else
            {"measured_speedup": r.generate_speedup, "greedy_identical": r.generate_identical,
             "error": (r.predicted_speedup - r.generate_speedup) / r.generate_speedup},
            "costs": {"verify_s": list(r.costs.verify_s), "draft_s": r.costs.draft_s,
                      "overhead_s": r.costs.overhead_s, "context": r.costs.context},
            "prediction": {"k_best": r.prediction.k_best, "speedup_best": r.prediction.speedup,
                           "verdict": r.prediction.verdict, "reasons": list(r.prediction.reasons)}}
