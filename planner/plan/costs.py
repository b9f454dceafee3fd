"""What each plan costs: the roofline's t_v(1..K+1), t_d and per-round overhead on the machine (spread over
its measured ends), what those costs leave out (notes), and costs from a probe profile instead.

Sources, always labelled: --profile > --probe > roofline (the CLI faces pick; `recommend` takes the result
as `Pricing.costs_for`, the roofline when none is given).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.errors import MachineError
from ..core.spec import ModelSpec
from ..drafting import DraftingMethod
from ..engines import versions
from ..engines.base import share_key
from ..fits import fit
from ..fits.machine import Machine
from ..fits.memory import Settings
from ..speed import roofline
from ..speed.model import Costs
from . import draft_catchup
from .machine_spread import spread_costs
from .request import CostsFor, Where
from .roof import measured_ends, roofline_machine


def roofline_costs(target: ModelSpec, method: DraftingMethod, machine: roofline.Roof, s: Settings,
                   k_max: int) -> Costs:
    """Roofline t_v(1..k_max+1) of the target, the method's t_d and the engine's per-round speculation
    overhead t_o on the deployment context, at the settings' batch (concurrent sequences)."""
    verify = roofline.verify_costs(target, machine, context=s.context, n_max=k_max + 1, settings=s)
    costs = roofline_verify(verify, method.step_s(machine, s), machine.name, s, getattr(machine, "share_kind", None))
    return draft_catchup.priced(costs, method, machine, s)


def roofline_verify(verify: Sequence[roofline.ForwardCost], draft_s: float, name: str, s: Settings,
                    share_kind: str | None = None) -> Costs:
    """Costs from roofline forwards: the central t_v curve and the kernel-curve interval around it, and the
    engine's per-round speculation overhead at the settings' batch; where the engine's fixed cost depends on
    its build on this machine class, which build range the costs assume (engines/versions.py)."""
    basis = {c.kernel_basis for c in verify[1:]} - {"none"}
    src = f"roofline ({name})" + (f"; verify kernels: {', '.join(sorted(basis))} curves" if basis else "")
    key = share_key(share_kind)
    choice = versions.fixed_cost(s.engine, key) if key is not None else None
    if choice is not None:
        src += f"; {s.engine} fixed cost per forward: {choice.note}"
    t_o, t_o_low, why = roofline.spec_round_overhead_s(s.resolved_engine, s.batch)
    if t_o:
        src += (f"; speculation overhead {t_o * 1e3:.3g} ms per round at {s.batch} sequence{'s' if s.batch != 1 else ''}, "
                f"{t_o_low * 1e3:.3g} ms at the optimistic end ({why})")
    return Costs(verify_s=tuple(c.seconds for c in verify), draft_s=draft_s, overhead_s=t_o, source=src,
                 overhead_low_s=t_o_low,
                 verify_low_s=tuple(c.seconds_low for c in verify), verify_high_s=tuple(c.seconds_high for c in verify))


def allreduce_note(target: ModelSpec, machine: Machine, tp: int) -> str:
    """What a tensor-parallel plan pays to synchronise its ranks, and over which link (speed/roofline.allreduce_s)."""
    if machine.interconnect is None:
        return (f"tensor parallel {tp}: the all-reduces (2 per layer) are not priced: '{machine.name}' catalogues no "
                f"link between its GPUs")
    link, latency = machine.interconnect
    return (f"tensor parallel {tp}: 2 all-reduces per layer x {target.n_layers} layers, each of tokens x "
            f"{target.hidden:,} x 2 B (ring: {latency * 1e6:.3g} us + 2 ({tp}-1)/{tp} x bytes / {link / 1e9:.3g} GB/s) "
            f"({machine.sources.get('interconnect', 'catalogued link')})")


def roofline_notes(spec: ModelSpec, where: Where) -> list[str]:
    """What the roofline's costs leave out here: the engine's MoE caveat, a missing verify-kernel curve, the
    tensor-parallel all-reduces."""
    machine, engine, layout, notes = where.machine, where.engine, where.layout, []
    if spec.moe is not None and engine.moe_baseline_caveat:
        notes.append(engine.moe_baseline_caveat)
    if machine.kind not in engine.verify_backend:
        # no published small-batch kernel curve: say so rather than price verification as silently flat
        notes.append(f"{engine.name} has no verify-kernel curve for {machine.kind} machines (Engine.verify_backend): "
                     f"verifying K+1 tokens is priced by the roofline alone, near flat at small K, so the "
                     f"speed-up is low confidence")
    if layout is not None and layout.tp > 1:
        notes.append(allreduce_note(spec, machine, layout.tp))
    return notes


def roofline_costs_for(spec: ModelSpec, where: Where, k_max: int) -> CostsFor:
    """Roofline costs of each (method, settings) on the machine, spread over its measured ends; the target's
    verify curve is computed once per roof, KV type, context and batch."""
    layout = where.layout or fit.default_layout(where.machine.n_devices, where.engine)
    roof = roofline_machine(where.machine, layout, where.engine)
    curves: dict[tuple, tuple[roofline.ForwardCost, ...]] = {}  # the target's depend on the KV type only
    ends = measured_ends(where.machine, layout, where.engine)

    def at(r: roofline.Roof, method: DraftingMethod, s: Settings) -> Costs:
        key = (id(r), s.kv_dtype, s.context, s.batch)
        if key not in curves:
            curves[key] = roofline.verify_costs(spec, r, context=s.context, n_max=k_max + 1, settings=s)
        costs = roofline_verify(curves[key], method.step_s(r, s), roof.name, s, getattr(r, "share_kind", None))
        return draft_catchup.priced(costs, method, r, s)

    def costs_for(method: DraftingMethod, s: Settings) -> Costs:
        return spread_costs(at(roof, method, s), ends, lambda r: at(r, method, s))
    return costs_for


def profile_costs(profile: Any, target: ModelSpec, roof: roofline.Roof | None, origin: str | None = None) -> Any:
    """Costs from a probe profile: measured t_v(n) and overhead; t_d measured for the profiled draft,
    else the roofline t_d calibrated by measured / roofline t_v(1) (labelled). `origin`: the profile's
    path, named in the source when given."""
    verify = tuple(profile.target.verify_s)
    named = f" from '{origin}'" if origin else ""

    def costs(method: DraftingMethod, s: Settings) -> Costs:
        if profile.draft is not None and profile.draft.id == method.label:
            return Costs(verify, profile.draft.step_s, profile.overhead_s, f"profile (measured){named}")
        if roof is None:
            raise MachineError(f"Cannot cost draft '{method.label}': the profile measured "
                               f"'{getattr(profile.draft, 'id', None)}' and the machine has no bandwidth figure to "
                               f"scale from. Probe this draft.")
        scale = verify[0] / roofline.forward_cost(target, roof, n=1, context=s.context, settings=s).seconds
        t_d = method.step_s(roof, s) * scale
        return Costs(verify, t_d, profile.overhead_s,
                     f"profile (measured target){named}; draft step roofline x {scale:.2f} calibration")
    return costs
