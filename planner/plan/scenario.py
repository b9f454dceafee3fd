"""Resolving a deployment on its machines: one `Scenario` per deployment x machine.

Why its own module: `planner check`, `planner report` and the command-line report all start
from the same resolved facts (specs loaded once per reference, the machine named in results,
the engine's settings and layout, the policy's acceptance and the machine's profile), and
resolving touches files (models, profiles) while assessing and judging do not. Errors here
name the deployment and the key that failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .. import engines
from ..core import paths
from ..core.errors import ConfigError, MachineError, PlannerError
from ..core.spec import ModelSpec
from ..drafting import DraftingMethod, DraftModel, make_method
from ..fits import fit
from ..fits.machine import Machine, custom_gpu, with_overrides
from ..fits.machine_lookup import get_machine
from ..fits.memory import Settings
from ..sources import load_spec
from ..speed import acceptance as acc
from ..speed.profile import Profile
from ..speed.profile_file import load_profile
from .acceptance_source import parse_acceptance
from .policy import AUTO_ENGINE, Deployment


@dataclass(frozen=True)
class Scenario:
    """One deployment resolved on one machine: specs loaded, settings and layout fixed."""

    deployment: Deployment
    machine: Machine
    label: str  # the machine's name in results (catalog slug, file name, or "1x-gpu-24gib")
    target: ModelSpec
    target_ref: str
    method: DraftingMethod | None  # how tokens are drafted (None: plain decoding)
    settings: Settings  # spec_tokens = K (or max_k) when drafting: the verify rows the ledger holds
    layout: fit.Layout
    given_acceptance: acc.Acceptance | None
    profile: Profile | None  # the machine's profile, when the deployment names one for this machine
    profile_path: str | None
    origin: str = "policy"  # the policy file (or "command line"), for messages

    @property
    def draft(self) -> ModelSpec | None:
        """The model the method keeps resident beside the target (what fit splits over devices)."""
        return self.method.resident_model() if self.method is not None else None

    @property
    def draft_ref(self) -> str | None:
        return self.method.ref if self.method is not None else None


def machine_label(m: Machine) -> str:
    """Name used in results: the catalog slug, or `<n>x-gpu-<GiB>gib` for a gpu_memory description."""
    if m.origin == "custom":
        return f"{m.n_devices}x-gpu-{m.memory_bytes / 2**30:g}gib"
    return m.name


def machines_for(d: Deployment, override: Sequence[str] = (), *, origin: str = "policy") -> list[Machine]:
    """The machines to judge `d` on: `override` (the CLI's --machine) replaces the deployment's
    machine description whole; else its machine(s), with gpu_memory / gpus applied to each, or a
    GPU box described by gpu_memory x gpus alone.

    Raises:
        ConfigError: an unknown machine name or a bad machine file (names the deployment).
    """
    names = tuple(override) or d.machines
    try:
        if not names:
            if d.gpu_memory_bytes is None:
                raise MachineError("no machine, machines or gpu_memory is given")
            return [custom_gpu(d.gpu_memory_bytes, d.gpus or 1)]
        out = []
        for n in names:
            m = get_machine(n)
            if not override and (d.gpu_memory_bytes is not None or d.gpus is not None):
                m = with_overrides(m, memory_bytes=d.gpu_memory_bytes, n_devices=d.gpus)
            out.append(m)
        return out
    except MachineError as e:
        key = "--machine" if override else "machine"
        raise ConfigError(f"Cannot check deployment '{d.name}' of '{origin}' ({key}): {e}", origin, key=key) from e


def _ref(ref: str, base: Path) -> str:
    """A relative model path is read next to the policy file when it exists there."""
    p = paths.expand(ref)
    if not p.is_absolute() and paths.exists(base / p):
        return str(base / p)
    return ref


def _load(ref: str, d: Deployment, key: str, cache: dict[str, ModelSpec], origin: str) -> ModelSpec:
    if ref not in cache:
        try:
            cache[ref] = load_spec(ref)
        except PlannerError as e:
            raise ConfigError(f"Cannot check deployment '{d.name}' of '{origin}' ({key} '{ref}'): {e}", origin,
                              key=key) from e
    return cache[ref]


def given_acceptance(d: Deployment, origin: str) -> acc.Acceptance | None:
    """The policy's `acceptance` (alpha, or the --acceptance text forms) as an Acceptance."""
    if d.acceptance is None:
        return None
    text = d.acceptance if isinstance(d.acceptance, str) else repr(float(d.acceptance))
    a = parse_acceptance(text)
    return replace(a, source=f"given ({origin} acceptance)")


def scenarios(d: Deployment, machines: Sequence[Machine], *, base: str | Path = ".",
              cache: dict[str, ModelSpec] | None = None, origin: str = "policy") -> list[Scenario]:
    """Resolve `d` on each machine: load target and draft (paths relative to `base`), the profile
    for that machine, and the settings/layout the engine would use.

    Raises:
        ConfigError: a model or profile that cannot be read (names the deployment and key).
    """
    cache = {} if cache is None else cache
    base = Path(base)
    t_ref = _ref(d.target, base)
    target = _load(t_ref, d, "target", cache, origin)
    d_ref = _ref(d.draft, base) if d.draft else None
    if d.method is not None:  # eagle3, mtp, ngram, early_exit (or draft_model named so)
        try:
            method: DraftingMethod | None = make_method(d.method, target, d_ref, workload=d.workload)
        except PlannerError as e:
            raise ConfigError(f"Cannot check deployment '{d.name}' of '{origin}' (method '{d.method}'): {e}", origin,
                              key="method") from e
    else:
        method = DraftModel(_load(d_ref, d, "draft", cache, origin), d_ref) if d_ref else None
    k_rows = (d.k or d.max_k) if method is not None else 0
    given = given_acceptance(d, Path(origin).name)
    out = []
    for m in machines:
        resident = method.resident_model() if method is not None else None  # None: n-gram lookup
        gguf = target.source == "gguf" or (resident is not None and resident.source == "gguf")
        # the deployment's engine, resolved once for this machine (auto: the registry's pick for its kind)
        engine = engines.resolve(None if d.engine == AUTO_ENGINE else d.engine, m.kind, gguf=gguf)
        s = Settings(context=d.context, batch=d.batch, resolved_engine=engine, kv_dtype=d.kv_dtype,
                     weights_dtype=d.weights_dtype, spec_tokens=k_rows)
        label = machine_label(m)
        path = d.profile_for(label)
        prof = None
        if path is not None:
            try:
                prof = load_profile(path)
            except PlannerError as e:
                raise ConfigError(f"Cannot check deployment '{d.name}' of '{origin}' (profile): {e}", path,
                                  key="profile") from e
        layout = fit.default_layout(m.n_devices, s.resolved_engine, d.tp, d.pp)
        out.append(Scenario(deployment=d, machine=m, label=label, target=target, target_ref=t_ref, method=method,
                            settings=s, layout=layout, given_acceptance=given, profile=prof,
                            profile_path=path, origin=origin))
    return out
