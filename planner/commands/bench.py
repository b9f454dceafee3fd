"""`planner bench`: run real speculative decoding here; measured vs predicted speed-up, and lossless check."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Annotated, Any

import typer

from ..bench.decode import HFStepper
from ..bench.deps import require
from ..bench.methods import EarlyExitStepper, NgramStepper, generate_speedup
from ..bench.models import check_memory, check_model, encode_prompts, load_model
from ..bench.progress import Progress
from ..bench.runner import WARMUP, BenchResult, Timing, bench_clock, choose_k, result_json, run_pair
from ..core.constants import DEFAULT_MAX_K
from ..core.errors import IncompatiblePair, PlannerError, UsageError
from ..core.fmt import tabulate
from ..pairing import pair as pairing
from ..probe.acceptance import Prompt, load_prompts
from ..probe.device import cpu_threads, resolve_device
from ..probe.settings import check_threads
from ..probe.timing import sync as device_sync
from ..sources import load_spec
from ..sources.tokenizer import fingerprint_for
from ._bench_endpoint import LLAMA, bench_endpoint
from ._common import app, emit, say, warn
from ._options import JsonOpt, MachineOpt

KOpt = Annotated[str, typer.Option("--k", help="Tokens drafted per round, or 'auto' (chosen by the speed model "
                                               "from measured costs and an exploratory run).")]
TokensOpt = Annotated[int, typer.Option("--tokens", help="New tokens per prompt.", min=1, max=4096)]
PromptsOpt = Annotated[str | None, typer.Option("--prompts", help="Prompts file (JSON or one per line; JSON "
                                                                  "entries may be token ids, {\"ids\": [1, 2, 3]}, for "
                                                                  "folders without tokenizer files); default: the "
                                                                  "bundled calibration set.")]
MaxPromptsOpt = Annotated[int, typer.Option("--max-prompts", help="Use at most this many prompts.", min=1,
                                            max=100_000)]
RepeatsOpt = Annotated[int, typer.Option("--repeats", help="Timed repeats (median); one warm-up before.", min=1,
                                         max=1000)]
TempOpt = Annotated[float, typer.Option("--temperature", help="0 = greedy (output must equal the target's).",
                                        min=0, max=100)]
DeviceOpt = Annotated[str, typer.Option("--device", help="cpu | cuda | mps | auto.")]
DtypeOpt = Annotated[str, typer.Option("--dtype", help="f32 | bf16 | f16 (compute dtype of both models).")]
ClockOpt = Annotated[str, typer.Option("--clock", help="wall | thread (CPU time of one torch thread: immune to "
                                                       "other processes on a shared machine; CPU only).")]
BenchMethodOpt = Annotated[str, typer.Option(
    "--method", help="draft_model (needs --draft) | ngram (prompt lookup) | early_exit (the target's first layers).")]
ExitLayerOpt = Annotated[int | None, typer.Option("--exit-layer", help="early_exit: layers that draft (default: a "
                                                                       "quarter of the target's).", min=1)]
GenerateOpt = Annotated[bool, typer.Option("--generate", help="ngram / early_exit: also time transformers' own "
                                                              "generate() with the same method.")]
BENCH_METHODS = ("draft_model", "ngram", "early_exit")
ThreadsOpt = Annotated[int | None, typer.Option("--threads", help="CPU threads for torch, 1..the CPU count "
                                                                  "(default: torch's; --clock thread: 1).")]
EndpointOpt = Annotated[str | None, typer.Option("--endpoint", help="Measure a running server instead (http://HOST:PORT "
                                                                    "of llama-server, vLLM or SGLang); no torch.")]
BaselineEndpointOpt = Annotated[str | None, typer.Option(
    "--baseline-endpoint", help="--endpoint: a second server of the same target without the draft (the baseline).")]
EndpointEngineOpt = Annotated[str, typer.Option("--engine", help="--endpoint: llama.cpp | vllm | sglang.")]
BenchWorkloadOpt = Annotated[str, typer.Option("--workload", help="--endpoint: bundled prompts of this kind: chat | "
                                                                  "code | reasoning | prose | all.")]
RequestsOpt = Annotated[int, typer.Option("--requests", help="--endpoint: requests to send (cycling the prompts).",
                                          min=1, max=10_000)]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", help="--endpoint: requests in flight at once.", min=1,
                                             max=256)]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="--endpoint: seconds one request may take.", min=0.1,
                                           max=3600)]
BenchContextOpt = Annotated[str | None, typer.Option("--context", "-c", help="--endpoint: the server's context "
                                                                             "(-c), for the prediction.")]
SaveProfileOpt = Annotated[str | None, typer.Option("--save-profile", help="--endpoint: write what was measured as "
                                                                           "a profile (recommend/check/report "
                                                                           "--profile).")]


@app.command()
def bench(
    target: Annotated[str, typer.Argument(help="Target: local model folder (safetensors) or .gguf file.")],
    draft: Annotated[str | None, typer.Option("--draft", "-d", help="Draft: local model folder or .gguf file.")]
    = None,
    method: BenchMethodOpt = "draft_model",
    exit_layer: ExitLayerOpt = None,
    generate: GenerateOpt = False,
    k: KOpt = "auto",
    tokens: TokensOpt = 64,
    prompts: PromptsOpt = None,
    max_prompts: MaxPromptsOpt = 4,
    repeats: RepeatsOpt = 3,
    temperature: TempOpt = 0.0,
    device: DeviceOpt = "cpu",
    dtype: DtypeOpt = "f32",
    clock: ClockOpt = "wall",
    threads: ThreadsOpt = None,
    endpoint: EndpointOpt = None,
    baseline_endpoint: BaselineEndpointOpt = None,
    engine: EndpointEngineOpt = LLAMA,
    workload: BenchWorkloadOpt = "chat",
    requests: RequestsOpt = 8,
    concurrency: ConcurrencyOpt = 1,
    timeout: TimeoutOpt = 120.0,
    machine: MachineOpt = None,
    context: BenchContextOpt = None,
    save_profile: SaveProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Measure baseline and speculative tokens/s on the same prompts, acceptance in every convention,
    and the speed model's prediction from costs measured on the same models.

    Exit code: 0 when speculation was faster (or the output was checked lossless and not slower),
    1 when it was slower or greedy output differed from the target's, 2 bad input.

    \b
    Examples:
      planner bench ./smollm2-360m --draft ./smollm2-135m --k auto --tokens 64
      planner bench .cache/gguf/SmolLM2-135M-Instruct.Q4_1.gguf --draft .cache/gguf/SmolLM2-135M-Instruct.Q4_1.gguf --json
      planner bench .cache/gguf/SmolLM2-135M-Instruct.Q4_1.gguf --method ngram --k 4 --generate
      planner bench .cache/gguf/gemma-3-270m-q4_k_m.gguf --method early_exit --exit-layer 6 --k 2
      planner bench target.gguf --draft draft.gguf --endpoint http://127.0.0.1:8080 --k 4 --json
    """
    kk = _k(k)
    if endpoint:
        raise typer.Exit(bench_endpoint(target, draft, endpoint=endpoint, engine=engine, workload=workload,
                                        prompts=prompts, requests=requests, concurrency=concurrency,
                                        baseline_endpoint=baseline_endpoint, k=kk, tokens=tokens,
                                        temperature=temperature, machine=machine, context=context,
                                        timeout_s=timeout, save_to=save_profile, as_json=as_json))
    if baseline_endpoint or save_profile:
        raise UsageError("Cannot use --baseline-endpoint or --save-profile without --endpoint (they measure a "
                         "running server). Pass --endpoint URL.")
    _check_method(method, draft, temperature)
    check_threads(threads)
    if clock == "thread" and threads not in (None, 1):
        raise UsageError(f"Cannot bench with --clock thread and --threads {threads} (expected --threads 1: "
                         f"one thread's CPU time misses the work of the others). Drop --threads.")
    dt = {"f32": "F32", "fp32": "F32", "bf16": "BF16", "f16": "F16", "fp16": "F16"}.get(dtype.lower())
    if dt is None:
        raise UsageError(f"Cannot bench with --dtype '{dtype}' (expected f32, bf16 or f16).")
    require()  # torch and transformers, every missing one named at once, before the first of them loads
    dev = resolve_device(device)
    clock_fn = bench_clock(clock, dev)
    plist = load_prompts(prompts)
    need_tok = any(p.ids is None for p in plist[:max_prompts])  # token-id prompts need no tokenizer
    # every input checked before either model loads
    checked = [check_model(ref, tokenizer=need_tok) for ref in ((target, draft) if draft else (target,))]
    check_memory(checked, device=dev, dtype=dt)
    if draft and method == "draft_model":
        _pair_first(target, draft)
    with cpu_threads(threads):
        res = _run(target, draft, dev=dev, dt=dt, k=kk, tokens=tokens, prompts=plist, max_prompts=max_prompts,
                   repeats=repeats, temperature=temperature, clock=clock_fn, tokenizer=need_tok, method=method,
                   exit_layer=exit_layer, generate=generate)
    if as_json:
        emit(result_json(res))
    else:
        say(bench_text(res))
    ok = res.measured_speedup > 1.0 and res.greedy_identical is not False
    raise typer.Exit(0 if ok else 1)


def _pair_first(target: str, draft: str) -> None:
    """The pair's tokenizers compared from their files (as `planner pair` does, about a second) before
    any model loads: a mismatch was once reported after both loaded and a prompt ran (89 s, #31 item 10).

    Raises:
        IncompatiblePair: the tokenizers differ (plain speculative decoding needs a shared one).
    """
    try:
        t, d = load_spec(target), load_spec(draft)
        report = pairing.pair(t, d, target_tokenizer=fingerprint_for(t), draft_tokenizer=fingerprint_for(d))
    except PlannerError:  # a file the planner's readers cannot read: the loader names the problem, as before
        return
    if report.same_tokenizer is False:
        raise IncompatiblePair(f"Cannot bench this pair: the tokenizers differ ({'; '.join(report.differences)}). "
                               f"Plain speculative decoding needs a shared tokenizer; see 'planner pair'.",
                               list(report.differences))


def _k(k: str) -> int | None:
    """--k as an int, or None for 'auto'.

    Raises:
        UsageError: not 'auto' or an integer in 1..32.
    """
    if k == "auto":
        return None
    try:
        kk = int(k)
    except ValueError as e:
        raise UsageError(f"Cannot use --k '{k}' (expected a positive integer or 'auto').") from e
    if not 1 <= kk <= 32:
        raise UsageError(f"Cannot use --k {kk} (expected 1..32).")
    return kk


def _check_method(method: str, draft: str | None, temperature: float) -> None:
    """--method with what it needs, before any model loads.

    Raises:
        UsageError: an unknown method, draft_model without --draft, a --draft for another method, or
            sampling with n-gram lookup (its drafts are one-hot: greedy only).
    """
    if method not in BENCH_METHODS:
        raise UsageError(f"Cannot bench --method '{method}' (expected one of {', '.join(BENCH_METHODS)}).")
    if method == "draft_model" and not draft:
        raise UsageError("Cannot bench --method draft_model without --draft (expected a draft model folder or "
                         ".gguf file). Pass --draft, or --method ngram / early_exit.")
    if method != "draft_model" and draft:
        raise UsageError(f"Cannot bench --method {method} with --draft: it drafts from the target itself.")
    if method == "ngram" and temperature > 0:
        raise UsageError("Cannot bench --method ngram with --temperature > 0: its drafts are one-hot (greedy "
                         "only). Use --temperature 0.")


def _run(target: str, draft: str | None, *, dev: str, dt: str, k: int | None, tokens: int, prompts: Sequence[Prompt],
         max_prompts: int, repeats: int, temperature: float, clock: Callable[[], float], tokenizer: bool = True,
         method: str = "draft_model", exit_layer: int | None = None, generate: bool = False) -> BenchResult:
    """Load the models, take K (None: let the speed model choose it), and run the pair."""
    tmodel, ttok = load_model(target, device=dev, dtype=dt, tokenizer=tokenizer)
    dmodel, dtok = load_model(draft, device=dev, dtype=dt, tokenizer=tokenizer) if draft else (None, None)
    vocab = min(int(getattr(m.config, "vocab_size", 0) or 0) or (1 << 31) for m in (tmodel, dmodel) if m is not None)
    ids = encode_prompts(ttok, prompts, dtok, limit=max_prompts, vocab=vocab)
    layer = exit_layer or max(1, tmodel.config.get_text_config().num_hidden_layers // 4)

    def sync() -> None:
        device_sync(dev)

    def make_target() -> HFStepper:
        return HFStepper(tmodel)

    def make_draft() -> Any:
        if method == "ngram":
            return NgramStepper(int(tmodel.get_output_embeddings().weight.shape[0]))
        if method == "early_exit":
            return EarlyExitStepper(tmodel, layer)
        return HFStepper(dmodel)

    if k is None:
        k, _ = choose_k(make_target, make_draft, ids[0], k_max=DEFAULT_MAX_K, tokens=tokens, temperature=temperature,
                        sync=sync)
        warn(f"--k auto: the speed model chose K={k} from an exploratory run")
    steps = Progress(2 * (WARMUP + repeats) * len(ids), lambda line: say(line, err=True))
    res = run_pair(make_target, make_draft, ids, k=k, tokens=tokens, temperature=temperature, repeats=repeats,
                   warmup=WARMUP, timing=Timing(sync, clock), progress=steps.step)
    res = replace(res, method=method)
    if generate and method != "draft_model":
        g, same = generate_speedup(tmodel, ids, method=method, k=k, tokens=tokens, exit_layer=layer, repeats=repeats,
                                   clock=clock)
        res = replace(res, generate_speedup=g, generate_identical=same)
    return res


def bench_text(r) -> str:
    a = r.acceptance
    rows = [["method", r.method],
            ["baseline (target only)", f"{r.baseline_tokens_per_s:.2f} tok/s"],
            [f"speculative (K={r.k})", f"{r.speculative_tokens_per_s:.2f} tok/s"],
            ["measured speed-up", f"{r.measured_speedup:.3f}x"],
            ["predicted speed-up", f"{r.predicted_speedup:.3f}x (error {r.error:+.1%})"],
            ["greedy output identical", {True: "yes", False: "NO", None: "n/a (sampling)"}[r.greedy_identical]],
            *([["transformers generate() speed-up", f"{r.generate_speedup:.3f}x (prediction error "
                f"{(r.predicted_speedup - r.generate_speedup) / r.generate_speedup:+.1%}; output "
                f"{'identical' if r.generate_identical else 'DIFFERS'})"]] if r.generate_speedup else []),
            ["alpha (from histogram)", f"{a.get('alpha', float('nan')):.3f}"],
            ["accepted / drafted", f"{a['accepted_per_drafted']:.3f}" if a["accepted_per_drafted"] is not None
             else "-"],
            ["mean accepted length (tau)", f"{a['mean_accepted_length']:.3f}" if a["mean_accepted_length"] else "-"],
            ["per-position a_i", ", ".join(f"{x:.2f}" for x in a["per_position"])],
            ["t_v(1), t_v(K+1)", f"{r.costs.verify_s[0] * 1e3:.2f} ms, {r.costs.verify_s[r.k] * 1e3:.2f} ms"],
            ["t_d, t_o", f"{r.costs.draft_s * 1e3:.2f} ms, {r.costs.overhead_s * 1e3:.3f} ms"]]
    return tabulate(rows, tablefmt="simple", disable_numparse=True)
