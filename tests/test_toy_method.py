"""A drafting method and an engine added from this file alone, plus one registry line each.

Why: adding a way of drafting used to touch twenty files (if-chains in drafting/__init__.py, a kind list
in engines/base.py, a launch branch per engine). Now a method is a class implementing DraftingMethod and
a `MethodEntry` (how the CLI builds it, how self_drafting offers it); the registry line is
`drafting.METHODS[kind] = ENTRY`. The toy engine that runs it is one `Engine` value and `engines.register`.
Recommend, self_drafting, make_method and the CLI's --method all pick both up with no other edit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from planner import drafting, engines
from planner.cli import main
from planner.core.spec import ModelSpec
from planner.drafting import MethodEntry, make_method, self_drafting
from planner.drafting.base import Compatibility, engine_support
from planner.engines import Engine, LaunchInput, Verdict
from planner.engines.base import Side
from planner.fits.machine_lookup import get_machine
from planner.fits.memory import Settings
from planner.plan.recommend import recommend
from planner.plan.request import Target, Where, Workload
from planner.sources import load_spec
from planner.speed import acceptance as acc
from planner.speed.roofline import MachineLike

KIND = "toy_lookahead"
TOKEN_S = 5e-6  # the toy's cost per drafted token: a table look-up


@dataclass(frozen=True)
class ToyLookahead:
    """Drafts from a fixed table: nothing resident, a fixed acceptance."""

    kind: str = KIND

    @property
    def label(self) -> str:
        return "toy lookahead"

    @property
    def ref(self) -> str | None:
        return None

    def resident_model(self) -> ModelSpec | None:
        return None

    def compatibility(self, target: ModelSpec, engine: Engine, *, context: int | None = None) -> Compatibility:
        return engine_support(engine, KIND)

    def settings_for(self, s: Settings) -> Settings:
        return s

    def step_s(self, machine: MachineLike, s: Settings) -> float:
        return TOKEN_S

    def acceptance_prior(self, target: ModelSpec) -> acc.Acceptance:
        return acc.Acceptance(0.5, 0.4, 0.6, given="toy", source="toy table")

    def launch_fields(self) -> dict[str, Any]:
        return {"draft": None, "method": KIND}


ENTRY = MethodEntry(KIND, lambda target, draft, workload: ToyLookahead(),
                    lambda target, workload: ([ToyLookahead()], []))


def _rule(t: Side, d: Side, same: bool | None) -> Verdict:
    return Verdict("toyeng", True, None, None, "toy pairs anything")


def _launch(x: LaunchInput) -> dict[str, str]:
    return {"command": f"toy-serve {x.target} --method {x.method} --k {x.k}"}


TOY_ENGINE = Engine(name="toyeng", aliases=(), summary="a test engine that runs the toy method", overhead_bytes=0,
                    overhead_source="none", forward_overhead_s=(0.0, 0.0), forward_overhead_source="none",
                    tokens_held=lambda layer, context, batch, chunk, windowed: batch * context,
                    prefill_chunk=lambda context, batch: 256, pair_rule=_rule, launch=_launch,
                    methods={KIND: "the toy table"})


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(drafting.METHODS, KIND, ENTRY)  # the method's one registry line
    engines.register(TOY_ENGINE)  # the engine's
    yield
    engines.unregister("toyeng")


def test_the_toy_method_is_built_and_offered_where_its_engine_runs_it(toy):
    target = load_spec("llama-3.1-8b-instruct")
    assert isinstance(make_method(KIND, target, None), ToyLookahead)
    runs, left = self_drafting(target, engines.get("toyeng"))
    assert [m.kind for m in runs] == [KIND]  # the built-in kinds: the toy engine runs none of them
    assert "ngram: toyeng does not run it" in left
    assert f"{KIND}: vllm does not run it" in self_drafting(target, engines.get("vllm"))[1]


def test_the_toy_method_and_engine_through_recommend(toy):
    # an engine with no verify-kernel curve says so: verification is priced by the roofline alone
    target = load_spec("llama-3.1-8b-instruct")
    rec = recommend(Target(target, "llama-3.1-8b-instruct", candidates=[ToyLookahead()]),
                    Where(get_machine("h100-sxm"), engines.get("toyeng")),
                    Workload(context=4096))
    best = rec.plans[0]
    assert best.method.kind == KIND and best.launch["command"].startswith("toy-serve llama-3.1-8b-instruct --method "
                                                                          f"{KIND} --k {best.k}")
    assert any("toyeng has no verify-kernel curve for gpu machines" in n for n in rec.notes)
    # nothing resident, a 5 us step, alpha 0.5: E(K) = (1 - 0.5**(K+1)) / 0.5 tokens per near-flat round
    assert best.speedup > 1.5 and best.acceptance.alpha == 0.5


def test_the_toy_method_through_the_cli(toy, capsys):
    with pytest.raises(SystemExit) as e:
        main(["recommend", "llama-3.1-8b-instruct", "--method", KIND, "--engine", "toyeng", "--machine", "h100-sxm",
              "--json"])
    assert e.value.code in (0, None)
    data = json.loads(capsys.readouterr().out)
    assert data["engine"] == "toyeng" and data["plans"][0]["method"] == KIND


def test_without_the_registry_line_the_method_is_unknown():
    from planner.core.errors import UsageError

    with pytest.raises(UsageError, match="expected one of"):
        make_method(KIND, load_spec("llama-3.1-8b-instruct"), None)



