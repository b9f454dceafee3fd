"""A separate draft model's first pass of each round: it catches up on the round's verified tokens.

Why a module: vLLM's DraftModelProposer does not draft its first token from one input token; its first
forward of a round carries the K+1 tokens the target just verified and the bonus token, K+2 per
sequence (catalogs/mechanisms/draft_catchup.json quotes vllm/v1/spec_decode/draft_model.py), so the
draft model's KV cache holds what the target accepted. At one sequence that pass is memory-bound and
costs about one draft step; at high concurrency it is B x (K+2) rows through the draft model and turns
compute-bound, which one-token draft steps miss (an EAGLE head runs the same pass on one layer).

    t_round(K) = K t_d + [t_d(K+2) - t_d(1)] + t_v(K+1) + t_o     (t_d(n): a draft forward of n tokens)

The bracket is folded into t_v(K+1) (as plan/hybrid.py folds the recurrent rollback), so the speed
model's formula stands; t_v(1), plain decoding, is untouched.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

from ..core.constants import catalog_dir
from ..core.jsonio import read_json_object
from ..drafting import DraftingMethod
from ..fits.memory import Settings
from ..speed import roofline
from ..speed.model import Costs
from ..speed.roofline import MachineLike


@cache
def rules() -> dict[str, Any]:
    """catalogs/mechanisms/draft_catchup.json, read once."""
    return read_json_object(catalog_dir() / "mechanisms" / "draft_catchup.json", what="draft catch-up catalog")


def applies(engine: str, kind: str) -> str | None:
    """The source of the engine's catch-up pass for drafting method `kind`; None where it has none."""
    e = rules()["engines"].get(engine)
    return str(e["source"]) if e is not None and kind in e["kinds"] else None


def extra_s(method: DraftingMethod, machine: MachineLike, s: Settings, n: int) -> list[float]:
    """[t_d(K+2) - t_d(1) for K = 0..n-1] (0 at K = 0): the catch-up pass over a one-token draft step.

    # t_d(m) = roofline forward of m new tokens for each of the batch's sequences through the draft model;
    # the engine's fixed cost per step is the same for both, so it cancels
    """
    spec = method.resident_model()
    if spec is None:
        return [0.0] * n
    ds = method.settings_for(s)

    def t(m: int) -> float:
        return roofline.forward_cost(spec, machine, n=m, context=s.context, settings=ds, overhead_s=0.0).seconds
    one = t(1)
    return [0.0] + [t(k + 2) - one for k in range(1, n)]


def priced(costs: Costs, method: DraftingMethod, machine: MachineLike, s: Settings) -> Costs:
    """Roofline costs with the catch-up pass folded into t_v(2..), where the engine runs one."""
    why = applies(s.engine, method.kind)
    if why is None:
        return costs
    d = extra_s(method, machine, s, len(costs.verify_s))

    def add(curve: tuple[float, ...] | None) -> tuple[float, ...] | None:
        return None if curve is None else tuple(t + x for t, x in zip(curve, d, strict=True))
    top = len(d) - 1
    note = (f"draft catch-up pass of K+2 tokens per sequence each round ({s.engine}: "
            f"{d[1] * 1e3:.3g}-{d[top] * 1e3:.3g} ms over a one-token draft step at K=1-{top}, {s.batch} "
            f"sequence(s); catalogs/mechanisms/draft_catchup.json)")
    return replace(costs, verify_s=tuple(t + x for t, x in zip(costs.verify_s, d, strict=True)),
                   verify_low_s=add(costs.verify_low_s), verify_high_s=add(costs.verify_high_s),
                   source=f"{costs.source}; {note}")
