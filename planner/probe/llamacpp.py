"""llama.cpp probe backend: t_v(n) and t_d with the real quantised kernels of GGUF files.

Why a second backend: whether verification is batch-parallel depends on the kernels that run
it. llama.cpp multiplies quantised weights with different kernels for one row (vector dot
products) and for several rows (tiled matrix products, or dequantise-then-GEMM), so K+1 tokens
can cost several single-token steps: on this project's 2-core CPU, SmolLM2-135M Q4_1 takes about
3.9x as long for 8 tokens as for 1 and Gemma-3-270M Q4_K_M about 2x (docs/llamacpp.md). A torch
model with the same shapes does not show that; the GGUF run through llama.cpp does.

How, per model (llama-cpp-python's ctypes binding of llama.h, imported inside functions):
  1. load the GGUF (every layer offloaded when the build has a GPU backend and --device is not
     cpu); one sequence, context = deployment context + K + 1, n_batch = n_ubatch = 512, flash
     attention auto and the SWA cache sized as llama-server does (swa_full off);
  2. prefill the KV cache with `context` fixed-seed random ids (control tokens excluded);
  3. t_v(n), n = 1..K+1: decode n tokens at the end of the prefix with logits for every row (as a
     verification does), synchronise, read the logits; the n tokens are removed from the cache
     after each call, outside the clock (timing.measure_round_robin: warm-up, median of repeats);
  4. the draft's step t_d: decode one token and pick the greedy next token from its logits.
Per-round overhead: the greedy pick over K+1 rows of target logits plus both cache rollbacks.
Acceptance is not measured here (use --real with safetensors checkpoints, or --acceptance).
"""

from __future__ import annotations

import ctypes
import importlib.metadata
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..core.errors import LlamaCppUnavailable, UsageError
from ..core.spec import ModelSpec
from ..engines import llamacpp as llamacpp_engine
from ..fits.memory import Settings, activations, kv_cache
from ..sources import load_spec
from ..speed.diagnosis import diagnose
from ..speed.profile import ModelCurve, Profile
from .device import available_bytes, budget_for, device_name, library_versions, now
from .settings import ProbeSettings
from .timing import Deadline, measure_round_robin

Progress = Callable[[str, float], None]
N_BATCH = 512  # n_batch = n_ubatch: llama.cpp's default ubatch (common/common.h)
PREFILL_SHARE = 0.5  # of the time left: more and the prefill would starve the timed calls
LOG_LINES = 200  # llama.cpp log lines kept: to explain a failure, and what it allocated
GGML_LOG_KEPT = frozenset({2, 3, 4})  # ggml_log_level INFO, WARN, ERROR (DEBUG = 1 and CONT = 5 dropped)


def require_llama_cpp(what: str = "llama.cpp probe") -> ModuleType:
    """Import llama_cpp or raise LlamaCppUnavailable naming `what` needs it."""
    try:
        import llama_cpp
    except ImportError as e:
        raise LlamaCppUnavailable(what) from e
    return llama_cpp


def binding_version() -> str:
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


# --- the binding: quiet logs, one model + context at a time ------------------------------------

_LOG: deque[str] = deque(maxlen=LOG_LINES)
_LOG_CALLBACK: Any = None  # the ctypes callback must outlive every call that may log


def _quiet(L: ModuleType) -> None:
    """Route llama.cpp's log into a small ring buffer (kept for error messages) instead of stderr."""
    global _LOG_CALLBACK
    if _LOG_CALLBACK is None:
        def keep(level: int, text: bytes, _user: ctypes.c_void_p) -> None:
            if level in GGML_LOG_KEPT:
                _LOG.append((text or b"").decode("utf-8", "replace").rstrip())

        _LOG_CALLBACK = L.llama_log_callback(keep)
        L.llama_log_set(_LOG_CALLBACK, ctypes.c_void_p(0))
        L.llama_backend_init()


def llama_log() -> list[str]:
    """The last LOG_LINES lines llama.cpp logged (buffer sizes, errors), oldest first."""
    return list(_LOG)


def _last_error() -> str:
    lines = [x for x in _LOG if x and ("error" in x.lower() or "failed" in x.lower())]
    return (lines or [x for x in _LOG if x] or ["no log"])[-1][:300]


@dataclass
class LlamaModel:
    """A loaded GGUF with one context (one sequence) and what timing needs from it."""

    L: ModuleType
    model: Any
    ctx: Any
    n_vocab: int
    n_ctx: int
    vocab: Any

    def memory(self) -> Any:
        return self.L.llama_get_memory(self.ctx)

    def rollback(self, keep: int) -> None:
        """Remove every cell from position `keep` on (sequence 0)."""
        self.L.llama_memory_seq_rm(self.memory(), 0, keep, -1)

    def logits(self, rows: int) -> Any:
        """The last decode's logits as a (rows, n_vocab) float32 array (waits for the device)."""
        import numpy as np

        ptr = self.L.llama_get_logits(self.ctx)
        return np.ctypeslib.as_array(ptr, shape=(rows, self.n_vocab))


@contextmanager
def load(path: str, *, context: int, gpu: bool, threads: int | None) -> Iterator[LlamaModel]:
    """Load a GGUF and create its context; free both on exit.

    Raises:
        LlamaCppUnavailable: llama-cpp-python is missing.
        UsageError: llama.cpp cannot load the file or create the context (its last log line says why).
    """
    L = require_llama_cpp()
    _quiet(L)
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = -1 if gpu else 0  # -1: every layer (llama.cpp's "all")
    model = L.llama_model_load_from_file(str(path).encode(), mp)
    if not model:
        raise UsageError(f"Cannot load GGUF '{path}' with llama.cpp (llama-cpp-python {binding_version()}): "
                         f"{_last_error()} (expected a model this build supports). Update llama-cpp-python.")
    cp = L.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = context, N_BATCH, N_BATCH, 1
    if threads:
        cp.n_threads = cp.n_threads_batch = threads
    cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_AUTO  # llama-server's default (-fa auto)
    cp.swa_full = False  # llama-server's default: SWA cache pad(window + n_ubatch, 256)
    cp.no_perf = True
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        L.llama_model_free(model)
        raise UsageError(f"Cannot create a llama.cpp context of {context} tokens for '{path}': {_last_error()} "
                         f"(expected enough memory). Use a shorter --context.")
    vocab = L.llama_model_get_vocab(model)
    try:
        yield LlamaModel(L, model, ctx, int(L.llama_vocab_n_tokens(vocab)), int(L.llama_n_ctx(ctx)), vocab)
    finally:
        L.llama_free(ctx)
        L.llama_model_free(model)


class Batch:
    """A llama_batch holding `tokens` for sequence 0 from position `pos0`; `all_logits`: every row outputs."""

    def __init__(self, m: LlamaModel, tokens: Sequence[int], pos0: int, *, all_logits: bool) -> None:
        self.L, self.n = m.L, len(tokens)
        self.b = m.L.llama_batch_init(self.n, 0, 1)
        self.b.n_tokens = self.n
        for i, t in enumerate(tokens):
            self.b.token[i] = t
            self.b.pos[i] = pos0 + i
            self.b.n_seq_id[i] = 1
            self.b.seq_id[i][0] = 0
            self.b.logits[i] = 1 if (all_logits or i == self.n - 1) else 0

    def decode(self, m: LlamaModel) -> None:
        rc = m.L.llama_decode(m.ctx, self.b)
        if rc != 0:
            raise UsageError(f"Cannot decode {self.n} tokens with llama.cpp: llama_decode returned {rc} "
                             f"({_last_error()}). Use a shorter --context.")
        m.L.llama_synchronize(m.ctx)

    def free(self) -> None:
        if self.b is not None:
            self.L.llama_batch_free(self.b)
            self.b = None


def random_tokens(m: LlamaModel, n: int, seed: int) -> list[int]:
    """n fixed-seed random ids of the vocabulary, control tokens (BOS, EOS, chat markers) excluded."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out: list[int] = []
    while len(out) < n:
        for t in rng.integers(0, m.n_vocab, size=max(64, 2 * (n - len(out)))).tolist():
            if not m.L.llama_vocab_is_control(m.vocab, t):
                out.append(t)
                if len(out) == n:
                    break
    return out


def prefill(m: LlamaModel, tokens: Sequence[int], *, deadline: Deadline, tick: Callable[[float], None]) -> None:
    """Fill the cache with `tokens` in n_batch chunks; stop early with an error when it would overrun.

    Raises:
        UsageError: the prefill alone would take more than PREFILL_SHARE of the time left.
    """
    chunks = [tokens[i:i + N_BATCH] for i in range(0, len(tokens), N_BATCH)]
    share = deadline.sub(PREFILL_SHARE)
    for i, chunk in enumerate(chunks):
        b = Batch(m, chunk, i * N_BATCH, all_logits=False)
        try:
            b.decode(m)
        finally:
            b.free()
        tick((i + 1) / len(chunks))
        left = len(chunks) - i - 1
        if left and share.elapsed() / (i + 1) * left > share.left():
            raise UsageError(f"Cannot prefill {len(tokens)} tokens within the probe budget: {i + 1} of "
                             f"{len(chunks)} chunks took {share.elapsed():.1f} s (expected the prefill to use at "
                             f"most half of the {deadline.budget_s:.0f} s budget). Use a shorter --context or a "
                             f"larger --budget-s.")


# --- timing ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Timed:
    """One model's medians: t(n) for n = 1..points, its rollback, the greedy pick over `points` rows."""

    times_s: tuple[float, ...]
    rollback_s: float
    pick_s: float


def time_model(path: str, *, points: int, all_logits: bool, st: ProbeSettings, gpu: bool, deadline: Deadline,
               progress: Progress | None, label: str) -> Timed:
    """Load `path`, prefill st.context tokens, time decode of n = 1..points tokens at the end of it."""
    import numpy as np

    ctx = st.context
    with load(path, context=ctx + points + 1, gpu=gpu, threads=st.threads) as m:
        toks = random_tokens(m, ctx + points, st.seed)
        if progress:
            progress(f"{label}: prefill of {ctx} tokens", 0.0)
        prefill(m, toks[:ctx], deadline=deadline,
                tick=lambda f: progress(f"{label}: prefill", 0.5 * f) if progress else None)
        batches = [Batch(m, toks[ctx:ctx + n], ctx, all_logits=all_logits) for n in range(1, points + 1)]
        try:
            def call(b: Batch) -> Callable[[], object]:
                rows = b.n if all_logits else 1

                def run() -> object:
                    b.decode(m)
                    return m.logits(rows) if all_logits else m.logits(1)
                return run

            if progress:
                progress(f"{label}: timing n = 1..{points}", 0.5)
            timings = measure_round_robin([call(b) for b in batches], device="cpu", repeats=st.repeats,
                                          warmup=st.warmup, resets=[lambda: m.rollback(ctx)] * len(batches),
                                          deadline=deadline, clock=st.clock_fn)
            last = batches[-1]
            last.decode(m)
            rows = last.n if all_logits else 1
            pick = measure_round_robin([lambda: np.argmax(m.logits(rows), axis=1)], device="cpu",
                                       repeats=st.repeats, warmup=1, deadline=deadline)[0]
            rb = measure_round_robin([lambda: m.rollback(ctx)], device="cpu", repeats=st.repeats, warmup=1,
                                     resets=[lambda: last.decode(m)], deadline=deadline)[0]
            m.rollback(ctx)
        finally:
            for b in batches:
                b.free()
    return Timed(tuple(t.median_s for t in timings), rb.median_s, pick.median_s)


def _need_bytes(spec: ModelSpec, context: int) -> int:
    s = Settings(context=context, resolved_engine=llamacpp_engine.ENGINE)
    return spec.weights.resident_bytes + kv_cache(spec, s, context)[0] + activations(spec, s, context)


def _check_memory(specs: Sequence[ModelSpec], context: int, st: ProbeSettings, gpu: bool) -> None:
    """Host memory check before loading (GPU memory is left to llama.cpp's own allocation error)."""
    if gpu:
        return

    avail = st.memory_bytes if st.memory_bytes is not None else available_bytes("cpu")
    for spec in specs:
        need = _need_bytes(spec, context)
        if need > avail:
            raise UsageError(f"Cannot probe '{spec.id}' with llama.cpp: weights, KV cache and compute buffer need "
                             f"{need} bytes at context {context}, {avail} are available (expected them to fit). "
                             f"Use a shorter --context.")


def _device(L: ModuleType, requested: str) -> tuple[bool, str]:
    """(offload to GPU, device label) for --device with this llama.cpp build.

    Raises:
        UsageError: a GPU device was asked for and the build has no GPU backend.
    """
    name = (requested or "auto").strip().lower()
    gpu_build = bool(L.llama_supports_gpu_offload())
    if name == "cpu":
        return False, "cpu"
    if name == "auto":
        return gpu_build, "gpu" if gpu_build else "cpu"
    if not gpu_build:
        raise UsageError(f"Cannot probe on device '{requested}' with llama.cpp: this llama-cpp-python build has no "
                         f"GPU backend (expected cpu or auto). Rebuild it with CMAKE_ARGS=-DGGML_CUDA=on (or "
                         f"-DGGML_METAL=on), or use --device cpu.")
    return True, "gpu"


def _curve(spec: ModelSpec, path: str, t: Timed, *, context: int, label: str, note: str) -> ModelCurve:
    return ModelCurve(id=spec.id, verify_s=t.times_s, step_s=t.times_s[0], method="llamacpp",
                      rollback_s=t.rollback_s, layers_timed=spec.n_layers, layers_total=spec.n_layers,
                      notes=(f"llama.cpp (llama-cpp-python {binding_version()}), {label}; real "
                             f"{spec.quantization or spec.weights.dominant_dtype} weights from {path}; KV cache "
                             f"filled by a prefill of {context} random tokens; {note}",))


def run_llamacpp(target_path: str, target: ModelSpec, draft_path: str | None, draft: ModelSpec | None,
                 st: ProbeSettings, *, progress: Progress | None = None) -> Profile:
    """Cost curves of GGUF models measured through llama.cpp, as a Profile (same format as the torch probe).

    Args:
        target_path / draft_path: the .gguf files (draft optional).
        target / draft: their specs (ids, layer counts, memory check).
        st: planner.probe.runner.ProbeSettings (device, max_k, context, budget, repeats, seed, threads).
        progress: called with (message, fraction done).

    Returns:
        The Profile: t_v(1..K+1) of the target, t_d of the draft (one token + greedy pick), overhead.

    Raises:
        LlamaCppUnavailable: llama-cpp-python is not installed.
        UsageError: not GGUF files, a GPU device without a GPU build, not enough memory, or a prefill
            that does not fit the budget.
    """
    L = require_llama_cpp()
    for p in (target_path, draft_path):
        if p is not None and not (Path(p).is_file() and str(p).endswith(".gguf")):
            raise UsageError(f"Cannot probe '{p}' with --backend llamacpp: it is not a local .gguf file (expected "
                             f"a GGUF model file). Use the torch probe for other checkpoints.")
    gpu, device = _device(L, st.device)
    _check_memory([s for s in (target, draft) if s is not None], st.context + st.max_k + 1, st, gpu)
    budget = budget_for(device if device == "cpu" else "cuda", st.budget_s)
    dl = Deadline(budget)

    def scaled(lo: float, width: float) -> Progress | None:
        return (lambda msg, f: progress(msg, lo + width * f)) if progress else None

    share = 0.6 if draft is not None else 0.9
    tt = time_model(target_path, points=st.max_k + 1, all_logits=True, st=st, gpu=gpu, deadline=dl.sub(share),
                    progress=scaled(0.0, share), label=f"target {target.id}")
    threads = f"{st.threads} thread(s)" if st.threads else "llama.cpp's default threads"
    where = "all layers on the GPU" if gpu else f"CPU, {threads}"
    tcurve = _curve(target, target_path, tt, context=st.context, label=where,
                    note="t_v(n): n tokens with logits for every row")
    dcurve, parts = None, {"sampling_comparison_s": tt.pick_s, "target_rollback_s": tt.rollback_s}
    if draft is not None and draft_path is not None:
        dt = time_model(draft_path, points=1, all_logits=False, st=st, gpu=gpu, deadline=dl.sub(0.9),
                        progress=scaled(share, 0.95 - share), label=f"draft {draft.id}")
        step = dt.times_s[0] + dt.pick_s
        dcurve = _curve(draft, draft_path, Timed((step,), dt.rollback_s, dt.pick_s), context=st.context,
                        label=where, note=f"step_s = one-token decode + greedy pick ({dt.pick_s:.3g} s)")
        parts["draft_rollback_s"] = dt.rollback_s
    overhead = sum(parts.values())
    if progress:
        progress("done", 1.0)
    versions = {**library_versions(), "llama-cpp-python": binding_version()}
    dname = device_name("cpu") if device == "cpu" else "GPU (llama.cpp offload)"
    return Profile(device=device, device_name=dname, backend=f"llama.cpp ({device})",
                   dtype=target.quantization or target.weights.dominant_dtype, context=st.context, target=tcurve,
                   draft=dcurve, overhead_s=overhead, overhead_parts=parts,
                   diagnosis=diagnose(tcurve, dcurve, overhead, None), versions=versions, timestamp=now(),
                   budget_s=budget, elapsed_s=dl.elapsed(),
                   notes=(f"K_max {st.max_k}, context {st.context}, median of {st.repeats} after {st.warmup} "
                          f"warm-up; {where}; flash attention auto",
                          "acceptance not measured by the llama.cpp backend (give --acceptance, or probe "
                          "safetensors checkpoints with --real)"))


def probe_gguf(target: str, draft: str | None, *, revision: str | None, st: ProbeSettings, dtype: str | None, real: bool,
               prompts: Any, progress: Progress | None) -> tuple[Profile, list[str]]:
    """`planner probe --backend llamacpp`: load the specs, note options this backend does not use, run.

    Returns:
        (profile, messages for stderr).

    Raises:
        LlamaCppUnavailable, UsageError (see run_llamacpp), SourceError (unreadable GGUF header).
    """
    require_llama_cpp()
    tspec = load_spec(target, revision=revision)
    dspec = load_spec(draft) if draft else None
    msgs = [f"{s.id}: {w}" for s in (tspec, dspec) if s for w in s.warnings]
    if dtype:
        msgs.append(f"--dtype {dtype} is ignored with --backend llamacpp: the GGUF's own tensor types run")
    if real or prompts is not None:
        msgs.append("--real/--prompts are ignored with --backend llamacpp: it always runs the real GGUF weights "
                    "and measures costs, not acceptance")
    return run_llamacpp(target, tspec, draft, dspec, st, progress=progress), msgs
