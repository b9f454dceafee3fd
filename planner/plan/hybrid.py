"""Hybrid recurrent targets in a plan: which engines refuse speculation on them, and what undoing a
rejected draft adds to each round (speed/recurrent_state.py prices it; catalogs/mechanisms has the
sources per engine).

Why in plan/: the refusal turns a method's Compatibility into a refusal and the price reshapes the
Costs a plan is ranked on; both need the engine, the method and the machine together, which only a
plan has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..core.spec import ModelSpec
from ..drafting import Compatibility, DraftingMethod
from ..engines import Engine
from ..fits.machine import Machine
from ..fits.memory import Settings
from ..speed import recurrent_state as rs
from ..speed.acceptance import Acceptance
from ..speed.model import Costs


def restrict(compat: Compatibility, target: ModelSpec, kind: str, engine: Engine) -> Compatibility:
    """The method's compatibility, refused where the engine does not speculate on a hybrid target."""
    why = rs.refusal(engine.name, kind) if rs.is_hybrid(target) else None
    if why is None or not compat.runs:
        return compat
    v = replace(compat.verdict, compatible=False, failed_rule="hybrid_target", detail=why)
    return replace(compat, verdict=v, fallback=None)


def priced(costs: Costs, target: ModelSpec, kind: str, s: Settings, alpha: float, machine_kind: str,
           bandwidth_bytes_per_s: float | None) -> Costs:
    """Costs with the engine's recurrent rollback folded into t_v(2..) (t_v(1), plain decoding, is untouched).

    Checkpoint path (llama-server's draft models and n-gram): save + restore over the copy rate and the
    retry forward, at the central copy rate for the curve and at the slow / fast rate for its ends.
    Rollback path (per-token state slots): K more states written at the memory bandwidth.
    """
    path = rs.path_for(s.engine, kind) if rs.is_hybrid(target) else None
    if path is None or not bandwidth_bytes_per_s:
        return costs
    state = rs.state_bytes(target, s)
    n = len(costs.verify_s)
    if path == rs.ROLLBACK:
        d = [0.0] + [rs.rollback_delta_s(k, state, bandwidth_bytes_per_s) for k in range(1, n)]
        why = (f"recurrent state rolled back in place: {state:,} B per drafted position written on the device "
               f"({s.engine}, catalogs/mechanisms/recurrent_rollback.json)")
        return _shifted(costs, d, d, d, why)
    rate = rs.copy_rate(machine_kind, bandwidth_bytes_per_s)

    def deltas(bps: float) -> list[float]:
        return [0.0] + [rs.verify_delta_s(k, alpha, costs.verify_s, costs.draft_s, costs.overhead_s, state / bps)
                        for k in range(1, n)]
    why = (f"recurrent-state checkpoint per round ({s.engine}): {state:,} B saved and, when a draft is partly "
           f"rejected, restored and the accepted tokens verified again; copied at {rate.central / 1e9:.3g} GB/s "
           f"({rate.low / 1e9:.3g}-{rate.high / 1e9:.3g} at the interval's ends; {rate.short}; the real copy rate "
           f"settles it), priced at alpha {alpha:.2f} (catalogs/mechanisms/recurrent_rollback.json)")
    return _shifted(costs, deltas(rate.central), deltas(rate.high), deltas(rate.low), why)


def costs_for(base: Callable[[DraftingMethod, Settings], Costs], target: ModelSpec, machine: Machine,
              alpha: Acceptance) -> Callable[[DraftingMethod, Settings], Costs]:
    """A (method, Settings) -> Costs callable with the rollback cost added, for pricing a plan at other
    concurrencies (plan/recommend.under_load) as at the first."""
    return lambda method, s: priced(base(method, s), target, method.kind, s, alpha.alpha, machine.kind,
                                    machine.bandwidth_bytes_per_s)


def _shifted(costs: Costs, central: list[float], fast: list[float], slow: list[float], why: str) -> Costs:
    """Costs with D(K) added to t_v(K+1): the central curve, and the kernel interval's fast and slow ends."""
    def add(curve: tuple[float, ...] | None, d: list[float]) -> tuple[float, ...]:
        return tuple(t + x for t, x in zip(curve or costs.verify_s, d, strict=True))  # no kernel interval: around the curve
    return replace(costs, verify_s=add(costs.verify_s, central), verify_low_s=add(costs.verify_low_s, fast),
                   verify_high_s=add(costs.verify_high_s, slow), source=f"{costs.source}; {why}")
