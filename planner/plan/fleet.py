"""The fit report per machine, machine first: every target on every machine, ranked as a user picks.

Why its own module: `planner report --machine M` (no target) asks "what can I run here, and what
should I speculate with?". Each row is `plan/recommend.recommend` for one target on one machine:
the same call `planner recommend` makes, with `candidates=None`, so every drafting method that
recommend ranks (draft models today; EAGLE-3 heads, MTP layers, n-gram lookup as they land in
`drafting/`) reaches the report unchanged. Around that call this module adds only what a
machine-first table needs: the weights quantisation a target needs to fit at all (the engine's
own ladder, least lossy first), the largest context the chosen plan leaves room for, a probe
profile's measured costs on the detected machine, filters, and the order rows are shown in.

Row order (what a user picks first): fits as stored, then fits after a weights change, then does
not fit; within each, larger models first (total parameters, the only quality proxy the catalog
holds: no benchmark scores are bundled), then faster (predicted tokens/s of the best plan).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import engines
from ..core import paths
from ..core.atomic import note_input
from ..core.constants import DEFAULT_MAX_K, LIST_FILE_MAX_BYTES
from ..core.errors import MachineError, UsageError
from ..core.spec import ModelSpec
from ..engines import Engine
from ..fits import fit
from ..fits.machine import Machine
from ..fits.memory import Settings
from ..sources import catalog, load_spec
from ..speed import acceptance as acc
from ..speed import roofline
from ..speed.profile import Profile
from . import recommend as P
from . import request
from .acceptance_source import profile_acceptance_source
from .costs import profile_costs


@dataclass(frozen=True)
class Target:
    """A model to place: what the user gave, its spec, its lineage, and what launch commands name."""

    ref: str
    spec: ModelSpec
    family: str | None  # catalog lineage (qwen2.5, llama3, ...); for other models the spec's family guess
    launch_ref: str  # the path the user gave, else the model id (launch commands name the model, not an alias)

    @property
    def params(self) -> int:
        return self.spec.params_total


@dataclass(frozen=True)
class Options:
    """The deployment every row is judged at (the report's flags)."""

    context: int
    batch: int = 1
    engine: Engine | None = None  # resolved at the edge; None: each machine's default (engines.resolve by kind)
    kv_dtype: str | None = None
    utilization: float | None = None
    temperature: float = 0.0
    max_k: int = DEFAULT_MAX_K
    acceptance: acc.Acceptance | None = None  # --acceptance for every pair
    profile: Profile | None = None  # measured on the detected machine ('auto' only)


@dataclass(frozen=True)
class Row:
    """One target on one machine: fit, the recommended plan, speed, verdict, launch."""

    machine: Machine = field(compare=False, repr=False)
    target: Target
    engine: str
    context: int
    batch: int
    fits_as_stored: bool  # plain decoding fits with the weights as stored
    weights_dtype: str | None  # the quantisation needed to fit (None: as stored)
    recommendation: P.Recommendation | None  # None: no speed could be predicted (error says why)
    headroom_bytes: int  # of the chosen plan (draft included), on the tightest device
    max_context: int  # largest context the chosen plan fits at this batch (0: not even one token)
    max_context_limit: str  # memory | model (the target's own maximum fits)
    costs: str  # where the verify/draft times came from: roofline (catalog or measured bandwidth) or profile
    baseline_tokens_per_s: float | None = None  # plain decoding, per sequence: 1 / t_v(1) (None: no fit or no figure)
    error: str | None = None

    @property
    def fits(self) -> bool:
        if self.recommendation is not None:
            return self.recommendation.baseline_fits
        return self.headroom_bytes >= 0

    @property
    def choice(self) -> P.Option | None:
        return self.recommendation.choice if self.recommendation is not None else None

    @property
    def speculates(self) -> bool:
        c = self.choice
        return c is not None and c.draft is not None

    @property
    def method(self) -> str:
        """The chosen drafting method's kind (draft_model, eagle3, ...), or none (plain decoding)."""
        c = self.choice
        if c is None or c.draft is None:
            return "none"
        return getattr(c.method, "kind", "draft_model")

    @property
    def tokens_per_s(self) -> float | None:
        """Predicted tokens/s per sequence of the chosen plan: plain rate x speed-up."""
        b = self.baseline_tokens_per_s
        return b * self.choice.speedup if b is not None and self.choice is not None else None

    @property
    def tokens_per_s_interval(self) -> tuple[float, float] | None:
        b = self.baseline_tokens_per_s
        if b is None or self.choice is None:
            return None
        lo, hi = self.choice.speedup_interval
        return b * lo, b * hi


# --- targets ---------------------------------------------------------------------------------

def target(ref: str) -> Target:
    """Load one target (catalog id or alias, HF id, local folder, config.json or .gguf).

    Raises:
        PlannerError: the model cannot be found or read.
    """
    spec = load_spec(ref)
    entry = catalog.find(ref) if spec.source == "catalog" else None
    family = str(entry["family"]) if entry and entry.get("family") else spec.family
    launch_ref = ref if Path(ref).expanduser().exists() else spec.id
    return Target(ref=ref, spec=spec, family=family, launch_ref=launch_ref)


def catalog_targets() -> list[Target]:
    """Every bundled catalog model, in catalog order (all are text decoders; multimodal wrappers are
    sized with their vision tower, as `planner memory` sizes them)."""
    return [target(e["id"]) for e in catalog.entries()]


def matches(t: Target, *, families: Sequence[str] = (), max_params: int | None = None) -> bool:
    """--family (a lineage or its prefix: 'qwen' keeps qwen2.5 and qwen3) and --max-params (total)."""
    if families:
        fam = (t.family or "").lower()
        if not any(fam == f.lower() or fam.startswith(f.lower()) for f in families):
            return False
    return max_params is None or t.params <= max_params


# --- one row ---------------------------------------------------------------------------------

def _engine(o: Options, m: Machine, spec: ModelSpec) -> Engine:
    """The engine the flags named, else `--engine auto`'s pick for this machine and target (the registry's)."""
    return o.engine if o.engine is not None else engines.resolve(None, m.kind, gguf=spec.source == "gguf")


def _plain(t: Target, m: Machine, o: Options, engine: Engine, layout: fit.Layout, wd: str | None) -> fit.Problem:
    # the same baseline problem recommend builds (plan/recommend.py: base_s)
    s = Settings(context=o.context, batch=o.batch, resolved_engine=engine, spec_tokens=0, weights_dtype=wd)
    return fit.Problem(t.spec, m, s, layout, utilization=o.utilization)


def weights_to_fit(t: Target, m: Machine, o: Options, engine: Engine, layout: fit.Layout) -> str | None:
    """The first scheme of the engine's weights ladder (least lossy first) with which plain decoding
    fits, or None when none does."""
    for scheme in engine.weights_ladder:
        if fit.headroom(_plain(t, m, o, engine, layout, scheme)) >= 0:
            return scheme
    return None


def _layout(t: Target, m: Machine, engine: Engine) -> fit.Layout:
    """The engine's default layout on every device, else the widest tensor-parallel split the target's
    heads allow (fits/fit.py heads_refuse_tp: q and KV heads must divide among the ranks; tp 1 always does).

    Why: a machine-first report asks what runs on the box; a 9-head model on 2 GPUs runs on one of them
    (vLLM's own default, --tensor-parallel-size 1), it is not a failed report.
    """
    layout = fit.default_layout(m.n_devices, engine)
    tp = layout.tp
    while tp > 1 and fit.heads_refuse_tp(t.spec, tp, engine):
        tp -= 1
    return layout if tp == layout.tp else fit.default_layout(m.n_devices, engine, tp=tp, pp=1)


def _profile_inputs(t: Target, m: Machine, o: Options, layout: fit.Layout, engine: Engine
                    ) -> tuple[Callable | None, dict[str, acc.Acceptance] | None, int, str]:
    """A probe profile's costs (and measured acceptance) when it measured this target on this machine."""
    prof = o.profile
    if prof is None or m.origin != "detected" or prof.target.id != t.spec.id:
        return None, None, o.max_k, "roofline"
    roof = P.roofline_machine(m, layout, engine) if m.bandwidth_bytes_per_s else None
    measured = None
    if prof.acceptance is not None and prof.draft is not None:
        a = prof.acceptance
        lo, hi = max(0.0, a.alpha - 2 * a.alpha_std), min(1.0, a.alpha + 2 * a.alpha_std)
        measured = {prof.draft.id: acc.Acceptance(a.alpha, lo, hi, given=f"alpha = {a.alpha:.3f} (measured)",
                                                  source=profile_acceptance_source(a, None))}
    return profile_costs(prof, t.spec, roof), measured, min(o.max_k, prof.max_k), "profile (measured)"


def row(t: Target, m: Machine, o: Options) -> Row:
    """`recommend` for `t` on `m` (weights re-quantised down the engine's ladder when it does not fit
    as stored), with the chosen plan's headroom and largest context.

    Raises:
        PlannerError: a model that cannot be read (a machine without a bandwidth figure is a row
            with `error` set: its fit is still judged).
    """
    engine = _engine(o, m, t.spec)
    layout = _layout(t, m, engine)
    plain = _plain(t, m, o, engine, layout, None)
    as_stored = fit.headroom(plain) >= 0
    wd = None if as_stored else weights_to_fit(t, m, o, engine, layout)
    if wd is not None:
        plain = _plain(t, m, o, engine, layout, wd)
    costs_for, measured, k_max, costs = _profile_inputs(t, m, o, layout, engine)
    try:
        rec = P.recommend(request.Target(t.spec, t.launch_ref, weights_dtype=wd),
                          request.Where(m, engine, layout=layout, utilization=o.utilization,
                                        kv_dtypes=[o.kv_dtype] if o.kv_dtype else None),
                          request.Workload(context=o.context, batch=o.batch, temperature=o.temperature),
                          request.Pricing(costs_for=costs_for, given_acceptance=o.acceptance,
                                          measured_acceptance=measured, k_max=k_max))
    except (MachineError, UsageError) as e:
        h = fit.headroom(plain)
        mc, limit = fit.max_context(plain) if h >= 0 else (0, "memory")
        return Row(m, t, engine.name, o.context, o.batch, as_stored, wd, None, h, mc, limit, "none", error=str(e))
    c = rec.choice
    problem = c.problem if c.draft is not None and c.problem is not None else plain
    headroom = c.headroom_bytes if c.draft is not None else rec.baseline_headroom_bytes
    mc, limit = fit.max_context(problem) if rec.baseline_fits else (0, "memory")
    costs = rec.plans[0].costs_source if rec.plans else costs
    # a plan's own plain rate (its speed-up is relative to it); plain decoding runs at the KV type it
    # launches with, so its rate is recommend's figure at that type (the top option may be 8-bit KV)
    rate = c.baseline_tokens_per_s if c.draft is not None else next(
        (x.baseline_tokens_per_s for x in rec.plans if x.kv_dtype == c.kv_dtype and x.baseline_tokens_per_s), None)
    if rate is None and rec.baseline_fits:  # no candidate was priced: the plain rate recommend would have used
        rate, costs = _plain_rate(t, m, o, engine, layout, wd, costs_for is not None)
    return Row(m, t, engine.name, o.context, o.batch, as_stored, wd, rec, headroom, mc, limit, costs,
               rate if rec.baseline_fits else None)


def _plain_rate(t: Target, m: Machine, o: Options, engine: Engine, layout: fit.Layout, wd: str | None,
                profiled: bool) -> tuple[float, str]:
    """1 / t_v(1) of plain decoding, from the profile or the roofline, at the engine's first KV type
    (the figure recommend's options carry as baseline_tokens_per_s)."""
    if profiled:
        if o.profile is None:  # costs come from a profile only when one was given
            raise UsageError("Cannot price plain decoding from a profile: no profile was given.")
        return 1.0 / o.profile.target.verify_s[0], "profile (measured)"
    kv = o.kv_dtype or engine.kv_options[0]
    s = Settings(context=o.context, batch=o.batch, resolved_engine=engine, kv_dtype=None if kv == "auto" else kv,
                 weights_dtype=wd, spec_tokens=o.max_k)
    roof = P.roofline_machine(m, layout, engine)
    (c,) = roofline.verify_costs(t.spec, roof, context=o.context, n_max=1, settings=s)
    return 1.0 / c.seconds, f"roofline ({roof.name})"


# --- the whole report ------------------------------------------------------------------------

def sort_key(r: Row) -> tuple:
    """Fits as stored, then after a weights change, then not; larger models first; then faster."""
    tier = 0 if r.fits and r.fits_as_stored else (1 if r.fits else 2)
    return (tier, -r.target.params, -(r.tokens_per_s or 0.0), r.target.spec.id)


def machine_rows(targets: Sequence[Target], m: Machine, o: Options, *, min_speedup: float | None = None) -> list[Row]:
    """The rows of one machine, filtered by the best plan's speed-up (`--min-speedup`) and sorted.

    Raises:
        PlannerError: a model that cannot be read.
    """
    rows = [row(t, m, o) for t in targets]
    if min_speedup is not None:
        rows = [r for r in rows if r.choice is not None and r.fits and r.choice.speedup >= min_speedup]
    return sorted(rows, key=sort_key)


# How a fleet's best machine for a target is chosen (`planner report --best-by`); the first is the default
BEST_BY = {
    "smallest": "the smallest machine that meets the requirement (fits as stored, else quantised; and "
                "--min-speedup when given): least total memory, then fewest devices, then fastest",
    "speed": "the fastest predicted tokens/s per sequence (fits as stored before quantised)",
    "speed-per-gpu": "the most predicted tokens/s per sequence per device (fits as stored before quantised)",
}


def best_machine(rows: Sequence[Row], by: str = "smallest") -> Row | None:
    """Where a target should live in a fleet: the machine whose row sorts first for it under `by`
    (BEST_BY). Why smallest by default: every row here already meets the requirement (it fits, and
    passed --min-speedup), so the biggest GPU winning every row answers nothing; the smallest box that
    does the job is the one to buy or schedule on."""
    fitting = [r for r in rows if r.fits]
    if not fitting:
        return None
    if by == "speed":
        return min(fitting, key=lambda r: (not r.fits_as_stored, -(r.tokens_per_s or 0.0), r.machine.name))
    if by == "speed-per-gpu":
        return min(fitting, key=lambda r: (not r.fits_as_stored, -(r.tokens_per_s or 0.0) / r.machine.n_devices,
                                           r.machine.name))
    return min(fitting, key=lambda r: (not r.fits_as_stored, r.machine.n_devices * r.machine.memory_bytes,
                                       r.machine.n_devices, -(r.tokens_per_s or 0.0), r.machine.name))


def figure_origins(m: Machine) -> dict[str, tuple[str, str]]:
    """For each machine figure (memory, bandwidth, FLOP/s): (measured | catalogued | from file |
    estimated | none, its source), so the report says which figures it measured.

    A detected machine's memory is what the driver or OS reported (measured); its bandwidth and
    FLOP/s are the matched catalog entry's, a timed copy on this host, or an estimate.
    """
    out: dict[str, tuple[str, str]] = {}
    for key in ("memory", "bandwidth", "flops"):
        src = m.sources.get(key, "")
        if key == "bandwidth" and not m.bandwidth_bytes_per_s:
            out[key] = ("none", src or "no figure: speed cannot be predicted without a profile")
        elif m.origin == "detected":
            low = src.lower()
            kind = ("catalogued" if low.startswith("catalog") else "estimated" if low.startswith("estimate")
                    else "measured" if key == "memory" or "measured" in low else "none" if not src else "estimated")
            out[key] = (kind, src)
        else:
            out[key] = ({"catalog": "catalogued", "file": "from file"}.get(m.origin, m.origin), src)
    return out


def read_list(path: str | Path, *, what: str) -> list[str]:
    """References from a list file: one per line, blank lines and `#` comments ignored; a relative
    path that exists beside the file is taken from there.

    Raises:
        UsageError: the file is missing, unreadable, not UTF-8, larger than LIST_FILE_MAX_BYTES or empty.
    """
    p = paths.expand(path)  # `~nosuchuser/x` stays literal: "not found", never a traceback
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO opens at once, and is refused below
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise UsageError(f"Cannot read {what} file '{path}': it is not a regular file (a FIFO or device "
                                 f"could block or never end; expected one reference a line).")
            data = fh.read(LIST_FILE_MAX_BYTES + 1)
    except OSError as e:
        raise UsageError(f"Cannot read {what} file '{path}': {e.strerror or e} (expected one reference a line).") from e
    note_input(p)  # no output of this run may replace it (core/atomic.py)
    if len(data) > LIST_FILE_MAX_BYTES:
        raise UsageError(f"Cannot read {what} file '{path}': larger than {LIST_FILE_MAX_BYTES:,} B (expected one "
                         f"reference a line).")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"Cannot read {what} file '{path}': not UTF-8 text (byte {e.start}).") from e
    out: dict[str, None] = {}  # a repeated line is planned once (20,000 copies of one took past 90 s)
    for line in text.splitlines():
        ref = line.split("#", 1)[0].strip()
        if ref:
            beside = p.parent / ref
            out[str(beside) if not Path(ref).is_absolute() and paths.exists(beside) else ref] = None
    if not out:
        raise UsageError(f"Cannot read {what} file '{path}': it lists nothing (expected one reference a line).")
    return list(out)


def is_list_file(ref: str) -> bool:
    """A --targets value that names a list file rather than a model: an existing file that is not a
    .gguf, a config.json or a .json (a model file or a machine description)."""
    return paths.is_file(ref) and paths.expand(ref).suffix.lower() not in (".gguf", ".json")
