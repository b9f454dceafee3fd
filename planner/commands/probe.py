"""`planner probe`: measure the cost curves (and acceptance) that decide whether speculation pays here."""

from __future__ import annotations

import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Annotated

import typer

from .. import engines
from ..core.constants import DEFAULT_CONTEXT, DEFAULT_MAX_K
from ..core.errors import UsageError
from ..core.fmt import tabulate
from ..core.units import parse_tokens
from ..fits.machine_profile import probe_path
from ..probe import require_torch
from ..probe.acceptance import load_prompts
from ..probe.device import now
from ..probe.importers import import_file, profile_from_import
from ..probe.llamacpp import probe_gguf
from ..probe.runner import run_real, run_synthetic
from ..probe.settings import ProbeSettings, check_threads
from ..sources import load_spec
from ..speed.profile import Profile
from ..speed.profile_file import profile_json, save_profile
from ._common import app, emit, say, warn
from ._options import ContextOpt, DraftOpt, JsonOpt, RevisionOpt, TemperatureOpt

TargetArg = Annotated[str | None, typer.Argument(
    help="Target model: local dir, config.json, .gguf, HF id or catalog name (optional with --import).")]
DeviceOpt = Annotated[str, typer.Option("--device", help="cpu | cuda | cuda:N | mps | auto.")]
ProbeDtypeOpt = Annotated[str | None, typer.Option("--dtype", help="f32 | f16 | bf16 (default: the model's).")]
MaxKOpt = Annotated[int, typer.Option("--max-k", help="Largest K: t_v(n) is measured for n = 1..K+1.",
                                      min=1, max=64)]
BudgetOpt = Annotated[float | None, typer.Option("--budget-s", help="Cap on the whole probe, seconds "
                                                 "(default 60 on CPU, 120 on cuda/mps).", min=0.1, max=86_400)]
OutOpt = Annotated[Path | None, typer.Option("--out", "-o", help="Write the machine profile (JSON) here.")]
ProbeSaveOpt = Annotated[bool, typer.Option(
    "--save", help="Also write the profile to this host's profile directory (the user's cache directory, or "
                   "SPEC_PLANNER_PROFILE_DIR), as machines detect --save does; plan on it with --profile PATH.")]
ImportOpt = Annotated[list[Path] | None, typer.Option(
    "--import", help="llama-bench / llama-batched-bench output or an n,seconds CSV (no torch needed).")]
ImportDraftOpt = Annotated[Path | None, typer.Option("--import-draft", help="The draft's benchmark output.")]
RealOpt = Annotated[bool, typer.Option("--real", help="Use the real weights (local safetensors dirs, "
                                       "transformers) and measure acceptance with --draft.")]
PromptsOpt = Annotated[Path | None, typer.Option("--prompts", help="Calibration prompts (JSON or one per line).")]
NewTokensOpt = Annotated[int, typer.Option("--new-tokens", help="Continuation length per prompt (acceptance).",
                                           min=2, max=4096)]
ThreadsOpt = Annotated[int | None, typer.Option("--threads", help="CPU threads for torch or llama.cpp, 1..the CPU "
                                                                  "count (default: the library's).")]
RepeatsOpt = Annotated[int, typer.Option("--repeats", help="Timed repeats per point (median).", min=1, max=1000)]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed for weights, caches and sampling.", min=0, max=2**32 - 1)]
ClockOpt = Annotated[str, typer.Option("--clock", help="wall (default) | thread: this thread's CPU time, for "
                                       "--device cpu --threads 1 on a busy machine.")]
BackendOpt = Annotated[str, typer.Option("--backend", help="torch (default) | llamacpp: time .gguf files through "
                                         "llama.cpp's real quantised kernels (needs llama-cpp-python).")]


TORCH_BACKEND = "torch"


class ProgressLine:
    """Progress on stderr: one rewritten line on a terminal, a line per 10% otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last = -1.0
        self.t0 = time.perf_counter()

    def __call__(self, msg: str, frac: float) -> None:
        frac = max(0.0, min(frac, 1.0))
        line = f"[{frac:4.0%} {time.perf_counter() - self.t0:6.1f} s] {msg}"
        if self.tty:
            sys.stderr.write("\r" + line[:120].ljust(120) + ("\n" if frac >= 1.0 else ""))
            sys.stderr.flush()
        elif frac - self.last >= 0.1 or frac >= 1.0 > self.last:
            typer.echo(line, err=True)
            self.last = frac


def _ms(s: float) -> str:
    return f"{s * 1e3:.3f}"


def profile_table(p: Profile) -> str:
    """Human view of a profile: the verify curve as t_v(n)/t_v(1), t_d/t_v(1), overhead, acceptance, diagnosis."""
    t = p.target
    layers = f", {t.layers_timed}/{t.layers_total} layers timed" if t.layers_timed and t.layers_total and \
        t.layers_timed != t.layers_total else ""
    lines = [f"device: {p.device} ({p.device_name}); backend: {p.backend}; dtype: {p.dtype}; context: {p.context}",
             *([f"{p.unreliable}: the costs below are not a measurement to plan on"] if p.unreliable else []),
             f"target {t.id} ({t.method}{layers})"]
    measured = set(t.measured_n) or set(range(1, len(t.verify_s) + 1))
    rows = [[n, _ms(v), f"{r:.3f}", "" if n in measured else "interpolated"]
            for n, (v, r) in enumerate(zip(t.verify_s, t.ratios, strict=True), start=1)]
    lines.append(tabulate(rows, headers=["n", "t_v(n) ms", "t_v(n)/t_v(1)", ""], tablefmt="simple",
                          disable_numparse=True))
    if p.draft is not None:
        d = p.draft
        lines.append(f"draft {d.id} ({d.method}): t_d = {_ms(d.step_s)} ms, t_d/t_v(1) = "
                     f"{d.step_s / t.step_s:.3f}")
    parts = ", ".join(f"{k.removesuffix('_s').replace('_', ' ')} {_ms(v)}" for k, v in p.overhead_parts.items())
    lines.append(f"per-round overhead t_o = {_ms(p.overhead_s)} ms" + (f" ({parts})" if parts else ""))
    a = p.acceptance
    if a is not None:
        pp = " ".join(f"{x:.2f}" for x in a.per_position)
        kinds = ", ".join(f"{k} {v:.3f}" for k, v in a.by_kind.items())
        lines.append(f"acceptance (T={a.temperature:g}, {a.prompts} prompts, {a.positions} positions): alpha "
                     f"{a.alpha:.3f}, greedy match {a.greedy_match:.3f}; a_1..a_{len(a.per_position)}: {pp}")
        lines.append(f"  spread over prompts: std {a.alpha_std:.3f}, min {a.alpha_min:.3f}, max "
                     f"{a.alpha_max:.3f}; by kind: {kinds}")
    lines.append("diagnosis:")
    lines += [f"  [{f.severity}] {f.message}" for f in p.diagnosis]
    notes = [*p.notes, *(f"target: {n}" for n in t.notes), *(f"draft: {n}" for n in (p.draft.notes if p.draft else ()))]
    if notes:
        lines.append("notes:")
        lines += [f"  - {n}" for n in dict.fromkeys(notes)]
    return "\n".join(lines)


def _backend(name: str) -> str:
    """--backend as TORCH_BACKEND or the llama.cpp engine's name (any spelling the engine registry knows).

    Raises:
        UsageError: any other backend.
    """
    key = name.strip().lower()
    if key == TORCH_BACKEND:
        return key
    try:
        engine = engines.canonical(key)
    except UsageError:
        engine = None
    if engine != engines.llamacpp.NAME:
        raise UsageError(f"Cannot probe with --backend {name} (expected torch or llamacpp).")
    return engine


def _imported(files: list[Path], draft_file: Path | None, target: str | None, draft: str | None,
              context: int) -> tuple[Profile, list[str]]:
    runs = [r for f in files for r in import_file(f, context=context)]
    msgs = []
    druns = import_file(draft_file, context=context) if draft_file else []
    if not druns and len(runs) > 1:
        msgs.append(f"{len(runs)} models in the import: '{runs[0].model}' taken as the target, "
                    f"'{runs[-1].model}' as the draft")
        druns = [runs[-1]]
    if len(runs) > 1 and druns and druns[0] is not runs[-1]:
        msgs.append(f"{len(runs)} models in the import: '{runs[0].model}' taken as the target")
    prof = profile_from_import(runs[0], druns[0] if druns else None, target_id=target, draft_id=draft,
                               versions={"spec-planner": version("spec-planner")}, timestamp=now())
    return prof, msgs


@app.command("probe")
def probe_cmd(
    target: TargetArg = None,
    draft: DraftOpt = None,
    device: DeviceOpt = "auto",
    dtype: ProbeDtypeOpt = None,
    max_k: MaxKOpt = DEFAULT_MAX_K,
    context: ContextOpt = str(DEFAULT_CONTEXT),
    budget_s: BudgetOpt = None,
    out: OutOpt = None,
    as_json: JsonOpt = False,
    import_files: ImportOpt = None,
    import_draft: ImportDraftOpt = None,
    real: RealOpt = False,
    prompts: PromptsOpt = None,
    temperature: TemperatureOpt = 1.0,
    new_tokens: NewTokensOpt = 32,
    threads: ThreadsOpt = None,
    repeats: RepeatsOpt = 7,
    seed: SeedOpt = 0,
    clock: ClockOpt = "wall",
    backend: BackendOpt = "torch",
    revision: RevisionOpt = None,
    save: ProbeSaveOpt = False,
) -> None:
    """Measure t_v(n) (target, n = 1..K+1), t_d (draft) and the per-round overhead on this machine.

    Synthetic by default (the models' real shapes and dtype, random weights: no download);
    --real uses local safetensors weights and measures acceptance; --import reads llama-bench or
    llama-batched-bench output instead (no torch). Writes a machine profile with --out.

    \b
    Examples:
      planner probe llama-3.1-8b --draft llama-3.2-1b --context 8k --out profile.json
      planner probe ./Qwen2.5-7B-Instruct --draft ./Qwen2.5-0.5B-Instruct --real --temperature 0
      planner probe --import bench-8b.md --import-draft bench-1b.md --out profile.json --json
    """
    ctx = parse_tokens(context)
    check_threads(threads)  # here, not as a typer range: one error line, and the ceiling is this machine's
    inputs: list[Path] = [*(import_files or []), *([import_draft] if import_draft else []),
                          *([prompts] if prompts else []), *(Path(r) for r in (target, draft) if r)]
    if import_files:
        prof, msgs = _imported(list(import_files), import_draft, target, draft, ctx)
    else:
        if target is None:
            raise UsageError("Cannot probe: no TARGET given (expected a model, or --import FILE). "
                             "See 'planner probe --help'.")
        if _backend(backend) == engines.llamacpp.NAME:
            st = ProbeSettings(device=device, max_k=max_k, context=ctx, budget_s=budget_s, repeats=repeats, seed=seed,
                               threads=threads, clock=clock)
            prof, msgs = probe_gguf(target, draft, revision=revision, st=st, dtype=dtype, real=real, prompts=prompts,
                                    progress=None if as_json and not sys.stderr.isatty() else ProgressLine())
        else:
            prof, msgs = _measured(target, draft, revision=revision, device=device, dtype=dtype, max_k=max_k,
                                   context=ctx, budget_s=budget_s, real=real, prompts=prompts,
                                   temperature=temperature, new_tokens=new_tokens, threads=threads, repeats=repeats,
                                   seed=seed, clock=clock, progress=None if as_json and not sys.stderr.isatty() else ProgressLine())
    for m in msgs:
        warn(m)
    if out is not None:
        save_profile(prof, out, inputs=inputs)
    saved = save_profile(prof, probe_path(), inputs=inputs) if save else None
    if as_json:
        emit({**profile_json(prof), **({"saved_profile": str(saved)} if saved else {})})
        return
    say(profile_table(prof))
    if out is not None:
        say(f"profile written to {out}")
    if saved is not None:
        say(f"saved the probe profile to {saved} (plan on it: planner recommend {prof.target.id} --profile {saved})")


def _measured(target: str, draft: str | None, *, revision: str | None, device: str, dtype: str | None, max_k: int,
              context: int, budget_s: float | None, real: bool, prompts: Path | None, temperature: float,
              new_tokens: int, threads: int | None, repeats: int, seed: int, clock: str,
              progress: ProgressLine | None) -> tuple[Profile, list[str]]:
    require_torch("probe")
    tspec = load_spec(target, revision=revision)
    dspec = load_spec(draft) if draft else None
    st = ProbeSettings(device=device, dtype=dtype, max_k=max_k, context=context, budget_s=budget_s,
                       repeats=repeats, seed=seed, temperature=temperature, threads=threads, clock=clock)
    msgs = [f"{s.id}: {w}" for s in (tspec, dspec) if s for w in s.warnings]
    if not real:
        if prompts is not None:
            msgs.append("--prompts is used only with --real (acceptance needs real weights)")
        return run_synthetic(tspec, dspec, st, progress=progress), msgs
    for ref in (target, draft):
        if ref is not None and not Path(ref).is_dir():
            raise UsageError(f"Cannot use --real with '{ref}': it is not a local directory (expected a folder "
                             f"with config.json and *.safetensors). Drop --real for the synthetic probe.")
    plist = load_prompts(prompts) if dspec is not None else ()
    return run_real(target, tspec, draft, dspec, st, prompts=plist, max_new_tokens=new_tokens,
                    progress=progress), msgs
