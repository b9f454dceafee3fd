"""A live server's measurement as a machine profile (speed/profile.py), for `--save-profile`.

Why its own module: turning what a server counted into the costs and acceptance the speed model
takes is one idea with its own assumptions, stated here once. A server gives three figures per
deployment: the baseline decode speed (one target forward per token: t_v(1) = 1 / tokens/s), the
speculative decode speed and the draft counts (accepted / drafted at K). It does not time a verify
of n tokens or a draft step apart, so:

* t_v(n) = measured t_v(1) x the planner's predicted t_v(n) / t_v(1) (the shape of the curve is the
  roofline's; its level is measured). `measured_n = (1,)` marks t_v(1) as the only measured point;
  without a measured baseline the level is the prediction's too (`measured_n = ()`).
* one round = K drafts + a verify of K + 1 + the engine's per-round overhead t_o, and yields
  tau = 1 + accepted/rounds tokens; the measured round time tau / (speculative tokens/s) less the
  predicted t_v(K+1) and t_o leaves K x t_d, so t_d is what makes the speed model reproduce the
  measured speed at this K. A negative remainder (the prediction's verify too slow) keeps the
  predicted t_d scaled by the measured t_v(1) level, and says so in the notes.
* acceptance: alpha from accepted / drafted at K (speed/acceptance.py, the fixed-K convention),
  per workload kind likewise; per position where the engine counts it (vLLM).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..core import constants
from ..speed.acceptance import alpha_from_accepted_per_drafted
from ..speed.model import Costs
from ..speed.profile import MeasuredAcceptance, ModelCurve, Profile


def tokens_per_round(accepted: float, rounds: float) -> float:
    """tau = 1 + accepted drafts per round (the bonus token included), the speed model's E(K).

    Example:
        >>> tokens_per_round(30, 20)
        2.5
    """
    return 1.0 + accepted / rounds


def measured_costs(pred: Costs, *, k: int, baseline_tokens_per_s: float | None, spec_tokens_per_s: float,
                   tau: float) -> tuple[tuple[float, ...], float, list[str]]:
    """(t_v(1..N), t_d, notes) from the measured speeds, shaped by the predicted costs `pred`."""
    notes = []
    if baseline_tokens_per_s:
        t_v1 = 1.0 / baseline_tokens_per_s
    else:
        t_v1 = pred.verify_s[0]
        notes.append("no baseline measured: t_v(1) is the prediction's")
    scale = t_v1 / pred.verify_s[0]
    verify = tuple(max(constants.PROBE_MIN_STEP_S, t * scale) for t in pred.verify_s)
    round_s = tau / spec_tokens_per_s  # seconds per round, measured
    left = round_s - verify[k] - pred.overhead_s  # = K * t_d
    if left > 0:
        t_d = max(constants.PROBE_MIN_STEP_S, left / k)
        notes.append(f"t_d = (measured round {round_s * 1e3:.3g} ms - t_v({k + 1}) - t_o) / {k}")
    else:
        t_d = max(constants.PROBE_MIN_STEP_S, pred.draft_s * scale)
        notes.append(f"measured round {round_s * 1e3:.3g} ms is under the predicted t_v({k + 1}) + t_o: t_d is the "
                     f"prediction's x {scale:.2f} (the measured t_v(1) level)")
    return verify, t_d, notes


@dataclass(frozen=True)
class Served:
    """What the server ran: the target and draft, the engine and its build, on which device, the target's
    weight dtype, the context, K and the sampling temperature."""

    target_id: str
    draft_id: str
    engine: str
    build: str
    device: str
    device_name: str
    dtype: str
    context: int
    k: int
    temperature: float


@dataclass(frozen=True)
class Counted:
    """What the server counted: accepted and drafted tokens over `requests`, the rate per position and per
    workload kind (accepted / drafted), and where the counts came from."""

    accepted: float
    drafted: float
    requests: int
    per_position: Sequence[float]
    by_kind: Mapping[str, float]
    source: str


def build_profile(served: Served, costs: Costs, counted: Counted, *, baseline_measured: bool,
                  notes: Sequence[str]) -> Profile:
    """The Profile `--save-profile` writes (schema: docs/probe.md; backend names the engine measured)."""
    k, c, verify_s, draft_s = served.k, counted, costs.verify_s, costs.draft_s
    rate = c.accepted / c.drafted
    alpha = alpha_from_accepted_per_drafted(rate, k)
    kinds = {kind: alpha_from_accepted_per_drafted(r, k) for kind, r in c.by_kind.items()}
    acc = MeasuredAcceptance(alpha=alpha, greedy_match=alpha, per_position=tuple(c.per_position),
                             temperature=served.temperature, prompts=c.requests, positions=max(1, int(c.drafted)),
                             alpha_min=min(kinds.values(), default=alpha), alpha_max=max(kinds.values(), default=alpha),
                             by_kind=kinds, source=c.source)
    method = f"endpoint:{served.engine}"
    target = ModelCurve(id=served.target_id, verify_s=tuple(verify_s), step_s=verify_s[0], method=method,
                        measured_n=(1,) if baseline_measured else ())
    draft = ModelCurve(id=served.draft_id, verify_s=(draft_s,), step_s=draft_s, method=method,
                       notes=(f"t_d from the measured round time at K = {k}",))
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Profile(device=served.device, device_name=served.device_name, backend=served.engine, dtype=served.dtype,
                   context=served.context, target=target, draft=draft, overhead_s=costs.overhead_s, acceptance=acc,
                   versions={"engine": served.engine, "build": served.build[:200]}, timestamp=stamp,
                   notes=(f"measured by planner bench --endpoint at K = {k}", *notes))
