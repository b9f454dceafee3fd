"""Fit: place a Problem's models on a machine's devices and evaluate the per-device ledger.

Its own module because everything else (the suggestions, the verdict) asks one question of
it: at (context, batch), how many bytes does each device hold, and is there headroom.

  per device:         used = sum(models' weights + KV + activations) + runtime overhead (+ NCCL);
                      budget = floor(memory x utilisation), capped by what is free, minus the
                      engine's margin (budget.py); headroom = budget - used

The largest context (and batch) is an exact integer search: KV and activations are monotone
in both, and the engine's rounding (llama.cpp pads to 256, vLLM to 16-token blocks) happens
inside memory.py, so `fits(n)` is a step function and binary search finds its last step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..core.constants import FIT_MAX_BATCH, MAX_CONTEXT
from ..core.errors import UsageError
from ..core.spec import MLA, ModelSpec
from ..engines import Engine
from .budget import Budget, device_budget, overhead_for
from .machine import Machine
from .memory import Settings
from .split import dynamic_split, host_kv, weight_split


@dataclass(frozen=True)
class Layout:
    """How models are spread: tensor parallel `tp` x pipeline parallel `pp` devices (stage-major:
    device = stage * tp + rank). The draft follows the target's layout unless `draft_device` pins
    it, whole, to one device. Partial offload of the target (engines with `partial_offload`,
    llama.cpp): `gpu_layers` is -ngl N (the output layer and the last N - 1 decoder layers on the
    GPUs; None: all), `cpu_moe_layers` is --n-cpu-moe N (experts of the first N layers in RAM)."""

    tp: int = 1
    pp: int = 1
    draft_device: int | None = None
    gpu_layers: int | None = None
    cpu_moe_layers: int = 0

    @property
    def n_devices(self) -> int:
        return self.tp * self.pp

    def first_gpu_layer(self, n_layers: int) -> int:
        """The first decoder layer on a GPU: max(n_layers + 1 - N, 0) for -ngl N
        (llama.cpp src/llama-model.cpp:1589, the output layer counts as layer n_layers)."""
        return 0 if self.gpu_layers is None else max(n_layers + 1 - self.gpu_layers, 0)


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
    host_bytes: int  # weights (and offloaded layers' KV) the engine keeps in host RAM for this device's models

    @property
    def used_bytes(self) -> int:
        return sum(s.total_bytes for s in self.shares) + self.overhead_bytes + self.comm_bytes

    @property
    def headroom_bytes(self) -> int:
        return self.budget.budget_bytes - self.used_bytes


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
    margin_bytes: int = 0  # a safety margin left free on each device past the engine's own (planner fit: --margin)


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
    if lay.tp > 1 and p.settings.resolved_engine.tp_splits_heads:
        for role, spec in (("target", p.target), ("draft", p.draft if lay.draft_device is None else None)):
            why = heads_refuse_tp(spec, lay.tp, p.settings.resolved_engine) if spec is not None else None
            if why:
                raise UsageError(f"Cannot run the {role} with --tp {lay.tp} on {p.settings.engine}: {why}. Choose a "
                                 f"--tp that divides them.")
    if lay.gpu_layers is not None or lay.cpu_moe_layers:
        if not p.settings.resolved_engine.partial_offload or p.machine.kind == "cpu":
            raise UsageError(f"Cannot offload layers to host RAM with {p.settings.engine} on "
                             f"'{p.machine.display_name}': only llama.cpp on a GPU machine does (-ngl, --n-cpu-moe).")
        gpu_decoder = p.target.n_layers - lay.first_gpu_layer(p.target.n_layers)
        if lay.gpu_layers is not None and gpu_decoder < lay.pp:
            raise UsageError(f"Cannot split {gpu_decoder} GPU layers (-ngl {lay.gpu_layers}) over {lay.pp} devices.")


def heads_refuse_tp(spec: ModelSpec, tp: int, engine: Engine) -> str | None:
    """Why tensor parallelism `tp` cannot shard this model's attention, else None.

    The engine divides query heads among ranks (q_heads % tp == 0) and the KV heads too, replicating
    them when there are fewer than ranks (kv_heads % tp == 0, or tp % kv_heads == 0); a latent MLA
    cache is not split by head (engines/base.py `tp_splits_heads`, with vLLM's source).
    """
    latent = engine.latent_mla
    key = ("heads_refuse_tp", tp, latent)  # evaluate() runs many times per search: once per model and tp
    if key not in spec.weights.memo:
        spec.weights.memo[key] = _heads_refuse_tp(spec, tp, latent)
    return spec.weights.memo[key]


def _heads_refuse_tp(spec: ModelSpec, tp: int, latent: bool) -> str | None:
    for layer in {(lay.q_heads, lay.kv_heads, lay.attention) for lay in spec.layers}:
        q, kv, attention = layer
        if q and q % tp:
            return f"its {q} attention heads do not divide by {tp}"
        if kv and not (attention == MLA and latent) and (kv % tp if kv >= tp else tp % kv):
            return f"its {kv} KV heads neither divide by {tp} nor divide it"
    return None


def _place(p: Problem) -> tuple[_Placed, ...]:
    _check_layout(p)
    lay, kind = p.layout, p.machine.kind
    host_ok = kind != "cpu"
    t_devs = tuple(range(lay.n_devices))
    w, host = weight_split(p.target, p.settings, lay.tp, lay.pp, on_host_ok=host_ok,
                           first_gpu_layer=lay.first_gpu_layer(p.target.n_layers), cpu_moe_layers=lay.cpu_moe_layers)
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
        first = p.layout.first_gpu_layer(m.spec.n_layers) if m.role == "target" else 0
        dyn = dynamic_split(m.spec, s, m.tp, m.pp, ctx, first)
        for i, dev in enumerate(m.devices):
            kv, act = dyn[i]
            shares[dev].append(Share(m.role, m.spec.id, m.weights[i], kv, act))
        hosts[m.devices[0]] += m.host_bytes + host_kv(m.spec, s, ctx, first)
        if m.tp > 1:
            tp_devices.update(m.devices)
    comm = p.settings.resolved_engine.tp_comm_bytes if p.machine.kind == "gpu" else 0
    return tuple(DeviceFit(budgets[d], tuple(shares[d]), overhead, comm if d in tp_devices else 0, hosts[d])
                 for d in used)


def _budgets(p: Problem) -> tuple[Budget, ...]:
    return tuple(device_budget(d, p.settings.resolved_engine, p.utilization, margin=p.margin_bytes)
                 for d in p.machine.devices)


def fits(devs: Sequence[DeviceFit]) -> bool:
    """True when every device has room (headroom >= 0)."""
    return all(d.headroom_bytes >= 0 for d in devs)


def last_true(pred, lo: int, hi: int) -> int:
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
    ok = lambda n: fits(evaluate(p, n, b, placed, budgets))  # noqa: E731
    cap = p.target.max_context if p.target.max_context and p.target.max_context > 0 else MAX_CONTEXT
    if not ok(1):
        return 0, "memory"
    if ok(cap):
        return cap, "model"
    return last_true(ok, 1, cap), "memory"


def max_batch(p: Problem, *, context: int | None = None) -> int:
    """Largest batch (concurrent sequences) that fits at `context` (0 when one does not), up to FIT_MAX_BATCH."""
    c = p.settings.context if context is None else context
    placed, budgets = _place(p), _budgets(p)
    ok = lambda n: fits(evaluate(p, c, n, placed, budgets))  # noqa: E731
    if not ok(1):
        return 0
    hi = 1
    while hi < FIT_MAX_BATCH and ok(min(hi * 2, FIT_MAX_BATCH)):
        hi = min(hi * 2, FIT_MAX_BATCH)
    return last_true(ok, hi, min(hi * 2, FIT_MAX_BATCH)) if hi < FIT_MAX_BATCH else hi


def headroom(p: Problem) -> int:
    """Headroom on the tightest device at the settings' context and batch."""
    return min(d.headroom_bytes for d in evaluate(p, p.settings.context, p.settings.batch))


def default_layout(n_devices: int, engine: Engine, tp: int | None = None, pp: int | None = None,
                   draft_device: int | None = None) -> Layout:
    """Default: every device, split by layers in llama.cpp (its default --split-mode layer) and
    tensor-parallel elsewhere; MLX runs on one device."""
    if tp is None and pp is None:
        split = engine.default_split
        if split == "single" or n_devices == 1:
            tp, pp = 1, 1
        elif split == "pp":
            tp, pp = 1, n_devices
        else:
            tp, pp = n_devices, 1
    return Layout(tp=tp or 1, pp=pp or 1, draft_device=draft_device)
