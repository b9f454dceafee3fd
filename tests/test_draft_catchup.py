"""vLLM's separate draft model catches up on the round's verified tokens in its first pass (plan/draft_catchup.py):
K+2 tokens per sequence, folded into t_v(K+1) as t_d(K+2) - t_d(1); other engines and methods untouched."""

from __future__ import annotations

import pytest

from planner import engines
from planner.drafting import DraftModel
from planner.fits import fit as F
from planner.fits.machine_lookup import get_machine
from planner.fits.memory import Settings
from planner.plan import draft_catchup
from planner.plan.costs import roofline_costs
from planner.plan.roof import roofline_machine
from planner.sources import load_spec
from planner.speed import roofline

TARGET, DRAFT = "llama-3.1-8b-instruct", "llama-3.2-1b-instruct"


def _setup(engine: str, batch: int):
    target, draft = load_spec(TARGET), load_spec(DRAFT)
    roof = roofline_machine(get_machine("h100-sxm"), F.Layout(), engines.get(engine))
    s = Settings(context=4096, batch=batch, resolved_engine=engines.get(engine))
    return target, DraftModel(spec=draft, ref=DRAFT), roof, s


def test_only_vllm_draft_models_run_the_catch_up_pass():
    assert draft_catchup.applies("vllm", "draft_model").startswith("vllm/v1/spec_decode/draft_model.py")
    for engine, kind in (("vllm", "eagle3"), ("llama.cpp", "draft_model"), ("sglang", "draft_model")):
        assert draft_catchup.applies(engine, kind) is None


@pytest.mark.parametrize("batch", [1, 64])
def test_the_pass_adds_a_forward_of_k_plus_2_tokens_over_a_one_token_step(batch):
    target, method, roof, s = _setup("vllm", batch)
    priced = roofline_costs(target, method, roof, s, k_max=6)
    plain = roofline.verify_costs(target, roof, context=4096, n_max=7, settings=s)
    draft = load_spec(DRAFT)

    def t_d(m: int) -> float:  # the draft forward of m tokens per sequence, no fixed cost (it cancels)
        return roofline.forward_cost(draft, roof, n=m, context=4096, settings=s, overhead_s=0.0).seconds
    assert priced.verify_s[0] == pytest.approx(plain[0].seconds)  # plain decoding untouched
    for k in range(1, 7):
        assert priced.verify_s[k] == pytest.approx(plain[k].seconds + t_d(k + 2) - t_d(1)), k
    assert "draft catch-up pass of K+2 tokens per sequence" in priced.source


def test_the_pass_costs_more_at_high_concurrency_and_nothing_on_llama_cpp():
    target, method, roof, s1 = _setup("vllm", 1)
    one = draft_catchup.extra_s(method, roof, s1, 7)
    _, _, roof64, s64 = _setup("vllm", 64)
    many = draft_catchup.extra_s(method, roof64, s64, 7)
    assert one[0] == many[0] == 0.0 and all(m > o > 0 for o, m in zip(one[1:], many[1:], strict=True))
    target, method, roof, s = _setup("llama.cpp", 1)
    costs = roofline_costs(target, method, roof, s, k_max=4)
    assert costs.verify_s == tuple(c.seconds for c in roofline.verify_costs(target, roof, context=4096, n_max=5,
                                                                            settings=s))
