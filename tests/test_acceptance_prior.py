"""Acceptance priors that move with draft size, instruct/base match, draft format, workload, temperature.

Every expected value is worked by hand from the formula in planner/speed/acceptance_prior.py and a
test-local adjustments table (so the arithmetic does not follow the catalog's numbers), except the
calibration checks, which run the real catalog through the leave-one-out bench.
"""

from __future__ import annotations

import math

import pytest

from benchmarks import bench_acceptance
from planner import engines
from planner.drafting import DraftModel
from planner.fits.machine_lookup import get_machine
from planner.pairing import pair as pairing
from planner.plan import recommend as P
from planner.plan.request import Target, Where, Workload
from planner.sources import load_spec
from planner.speed import acceptance as acc
from planner.speed import acceptance_prior as ap

TABLE = {
    "draft_size": {"saturation_params": 1_500_000_000, "per_decade": 0.155},
    "style_mismatch": {"delta": -0.05, "widen_low": 0.05, "widen_high": 0.0},
    "draft_quant": {"delta": {"q4_0": -0.02, "q4_k": 0.0}, "widen_low": {"q4_0": 0.04, "q4_k": 0.025}},
    "workload": {"chat": {"delta": 0.0, "widen_low": 0.0, "widen_high": 0.0},
                 "code": {"delta": 0.0, "widen_low": 0.03, "widen_high": 0.10}},
    "temperature": {"greedy_max": 0.0, "sampling": {"delta": 0.0, "widen_low": 0.08, "widen_high": 0.0}},
    "interval": {"half_width": 0.14, "no_pair_widen": 0.05},
}


def _entry(i: str, draft: str, alpha: float, source: str, family: str = "fam") -> acc.PairEntry:
    return acc.PairEntry(id=i, target="Fam-14B-Instruct", draft=draft, target_family=family, draft_family=family,
                         engine="llama.cpp", hardware="h", k=None, temperature=0.0, acceptance_value=alpha,
                         acceptance_convention="alpha", baseline_tok_s=None, spec_tok_s=None, speedup=None,
                         outcome="faster", source=source)


# --- each term by hand ------------------------------------------------------------------------------

def test_draft_size_term_is_log_linear_below_saturation_and_flat_above():
    # 0.5B: -0.155 * log10(1.5e9 / 0.5e9) = -0.155 * 0.477121 = -0.073954
    assert ap.shift(ap.Conditions(draft_params=500_000_000), TABLE).delta == pytest.approx(-0.0739538, abs=1e-6)
    # 68M (vicuna-68m): -0.155 * log10(1.5e9 / 6.8e7) = -0.155 * 1.343584 = -0.208256
    assert ap.shift(ap.Conditions(draft_params=68_000_000), TABLE).delta == pytest.approx(-0.208256, abs=1e-6)
    assert ap.shift(ap.Conditions(draft_params=3_000_000_000), TABLE) == ap.Shift()
    assert ap.shift(ap.Conditions(), TABLE) == ap.Shift()  # size unknown: no adjustment


def test_style_quant_workload_and_temperature_terms():
    mismatch = ap.shift(ap.Conditions(target_instruct=True, draft_instruct=False), TABLE)
    assert (mismatch.delta, mismatch.widen_low, mismatch.widen_high) == (-0.05, 0.05, 0.0)
    assert ap.shift(ap.Conditions(target_instruct=True, draft_instruct=None), TABLE) == ap.Shift()
    q40 = ap.shift(ap.Conditions(draft_quant="q4_0"), TABLE)
    assert (q40.delta, q40.widen_low) == (-0.02, 0.04)
    q4k = ap.shift(ap.Conditions(draft_quant="q4_k"), TABLE)
    assert (q4k.delta, q4k.widen_low) == (0.0, 0.025)  # Q4_K_M: no centre shift, only a wider low side
    assert ap.shift(ap.Conditions(draft_quant="q8_0"), TABLE) == ap.Shift()
    code = ap.shift(ap.Conditions(workload="code"), TABLE)
    assert (code.delta, code.widen_low, code.widen_high) == (0.0, 0.03, 0.10)
    assert ap.shift(ap.Conditions(workload="chat"), TABLE) == ap.Shift()
    assert ap.shift(ap.Conditions(temperature=0.0), TABLE) == ap.Shift()
    assert ap.shift(ap.Conditions(temperature=0.7), TABLE).widen_low == 0.08
    # terms add: 0.5B base draft at q4_0 for an instruct target, sampled
    s = ap.shift(ap.Conditions(draft_params=500_000_000, target_instruct=True, draft_instruct=False,
                               draft_quant="q4_0", temperature=0.7), TABLE)
    assert s.delta == pytest.approx(-0.0739538 - 0.05 - 0.02, abs=1e-6)
    assert s.widen_low == pytest.approx(0.05 + 0.04 + 0.08)


def test_prior_normalises_entries_then_adds_the_query_terms_back():
    pairs = [_entry("a", "Fam-0.5B-Instruct", 0.80, "https://github.com/o/r/issues/1"),
             _entry("b", "Fam-3B-Instruct", 0.90, "https://github.com/o/r/issues/2")]
    # normalised: a = 0.80 + 0.0739538 = 0.8739538, b = 0.90; median 0.8869769
    big = ap.prior("fam", "fam", ap.Conditions(draft_params=1_500_000_000), pairs=pairs, table=TABLE)
    assert big.alpha == pytest.approx(0.8869769, abs=1e-6)
    # two publications: half = 0.14 * sqrt(1 + 1/2) = 0.1714643
    assert big.low == pytest.approx(0.8869769 - 0.1714643, abs=1e-6) and big.high == 1.0
    small = ap.prior("fam", "fam", ap.Conditions(draft_params=500_000_000), pairs=pairs, table=TABLE)
    assert small.alpha == pytest.approx(0.8869769 - 0.0739538, abs=1e-6)
    assert "draft 0.5B under 1.5B" in small.given


def test_one_publication_is_wider_and_says_thin():
    pairs = [_entry("a", "Fam-3B-Instruct", 0.80, "https://github.com/o/r/issues/1"),
             _entry("b", "Fam-7B-Instruct", 0.84, "https://github.com/o/r/issues/1")]
    p = ap.prior("fam", "fam", ap.Conditions(draft_params=3_000_000_000), pairs=pairs, table=TABLE)
    # one publication however many rows: half = 0.14 * sqrt(2) = 0.1979899
    assert p.alpha == pytest.approx(0.82) and p.low == pytest.approx(0.82 - 0.1979899, abs=1e-6)
    assert "thin evidence: one publication" in p.given


def test_family_without_a_pair_borrows_same_family_values_wider():
    pairs = [_entry("a", "Fam-3B-Instruct", 0.80, "https://x.org/a")]
    p = ap.prior("other", "other", ap.Conditions(), pairs=pairs, table=TABLE)
    assert p.alpha == pytest.approx(0.80)
    assert p.low == pytest.approx(0.80 - (0.14 + 0.05) * math.sqrt(2), abs=1e-6)
    assert p.source.startswith("catalog: family default: no other pair measured")
    cross = ap.prior("fam", "other", ap.Conditions(), pairs=pairs, table=TABLE)
    assert cross.given.startswith("assumed default (cross-family")


# --- parsing published names and publications --------------------------------------------------------

@pytest.mark.parametrize("name, params, instruct, quant", [
    ("Qwen2.5-0.5B-Instruct Q8_0 (GGUF)", 500_000_000, True, "q8_0"),
    ("Qwen2.5-Coder-3B (base) Q4_0 (GGUF)", 3_000_000_000, False, "q4_0"),
    ("double7/vicuna-68m (FP16)", 68_000_000, True, "fp16"),
    ("Llama-3.2-1B-Instruct 4-bit (MLX)", 1_000_000_000, True, "int4"),
    ("Qwen2.5-Coder-32B-Instruct Q4_K_L (GGUF)", 32_000_000_000, True, "q4_k"),
    ("Qwen2.5-1.5B-Instruct 4-bit (MLX; reported as '1B')", 1_500_000_000, True, "int4"),
])
def test_names_parse(name, params, instruct, quant):
    assert ap.params_from_name(name) == params
    assert ap.instruct_style(name) is instruct
    assert ap.quant_from_name(name) == quant


def test_publications_group_one_sweep_and_split_threads():
    cat = {e.id: e for e in acc.load_pairs()}
    a = cat["draftbench-m4max-qwen2.5-14b-fp16-0.5b-fp16"]
    b = cat["draftbench-m4max-qwen2.5-72b-q80-7b-fp16"]
    assert ap.source_key(a) == ap.source_key(b) == "https://github.com/alexziskind1/draftbench"
    k1 = ap.source_key(cat["llamacpp-5877-llama3.1-8b-q8-llama3.2-1b-q8"])
    k2 = ap.source_key(cat["llamacpp-10455-qwen2.5-coder-32b-q4kl-coder-3b-q4_0"])
    assert (k1, k2) == ("https://github.com/ggml-org/llama.cpp/issues/5877",
                        "https://github.com/ggml-org/llama.cpp/pull/10455")
    assert ap.source_key(cat["arxiv-2607.17283-qwen2.5-mps-k1"]) == "arXiv 2607.17283"


def test_distilled_and_coder_checkpoints_share_the_base_lineage():
    assert acc.lineage("deepseek-r1-distill-qwen") == "qwen2.5"
    assert acc.lineage("qwen2.5-coder") == "qwen2.5"
    assert acc.lineage("deepseek-r1-distill-llama") == "llama3"


# --- through the draft model and recommend -----------------------------------------------------------

def test_draft_model_prior_moves_with_its_size_and_format():
    t = load_spec("qwen2.5-14b-instruct")
    small, big = load_spec("qwen2.5-0.5b-instruct"), load_spec("qwen2.5-1.5b-instruct")
    a_small = DraftModel(small, small.id).acceptance_prior(t)
    a_big = DraftModel(big, big.id).acceptance_prior(t)
    table = ap.adjustments()
    sat, slope = table["draft_size"]["saturation_params"], table["draft_size"]["per_decade"]
    # 1.54B is above saturation: no size term; 0.494B: -slope * log10(sat / 494_032_768)
    assert small.params_total == 494_032_768 and big.params_total >= sat
    assert a_small.alpha == pytest.approx(a_big.alpha - slope * math.log10(sat / 494_032_768), abs=1e-9)
    a_q40 = DraftModel(big, big.id, weights_dtype="q4_0").acceptance_prior(t)
    assert a_q40.alpha == pytest.approx(a_big.alpha + table["draft_quant"]["delta"]["q4_0"], abs=1e-9)
    assert a_q40.low < a_big.low
    base = load_spec("qwen2.5-0.5b")
    assert base.instruct is False
    a_base = DraftModel(base, base.id).acceptance_prior(t)
    assert a_base.alpha == pytest.approx(a_small.alpha + table["style_mismatch"]["delta"], abs=1e-9)


def test_recommend_passes_temperature_to_the_prior():
    t, d = load_spec("qwen2.5-14b-instruct"), load_spec("qwen2.5-1.5b-instruct")
    m = get_machine("m4-max-128gb")
    greedy = P.recommend(Target(t, t.id, candidates=[DraftModel(d, d.id)]),
                         Where(m, engines.get("llama.cpp")),
                         Workload(context=4096))
    sampled = P.recommend(Target(t, t.id, candidates=[DraftModel(d, d.id)]),
                          Where(m, engines.get("llama.cpp")),
                          Workload(context=4096, temperature=0.8))
    g, s = greedy.plans[0].acceptance, sampled.plans[0].acceptance
    table = ap.adjustments()
    kappa, full_at = table["confidence"]["kappa"], table["temperature"]["sampled_rule"]["full_at"]
    # llama.cpp keeps a drafted token when the target's sample equals it (moment 2), after the sampling widening
    assert s.alpha == pytest.approx(ap.sampled_alpha(g.alpha, 0.8, kappa, full_at, 2))
    widened = max(0.0, g.low - table["temperature"]["sampling"]["widen_low"])
    assert s.low == pytest.approx(ap.sampled_alpha(widened, 0.8, kappa, full_at, 2))


def test_sampled_acceptance_takes_a_moment_of_the_drafts_confidence():
    """mlx-lm keeps a drafted token only when both models' samples are equal: P ~ E[c^3] for the draft's top-1
    probability c ~ Beta(k a, k (1 - a)); E[c^3] = a (k a + 1)(k a + 2) / ((k + 1)(k + 2)), linear in T to full_at.
    llama.cpp drafts its top token and the target samples: E[c^2] = a (k a + 1) / (k + 1)."""
    assert ap.sampled_alpha(0.9, 1.0, 1.5, 1.0, 2) == pytest.approx(0.9 * 2.35 / 2.5)
    # a = 0.9, k = 1.5: 0.9 x 2.35 x 3.35 / (2.5 x 3.5) = 0.809743; at T = 0.5 of full_at 1: 0.9 - 0.5 x 0.090257
    assert ap.sampled_alpha(0.9, 1.0, 1.5, 1.0, 3) == pytest.approx(0.9 * 2.35 * 3.35 / 8.75)
    assert ap.sampled_alpha(0.9, 0.5, 1.5, 1.0, 3) == pytest.approx(0.9 - 0.5 * (0.9 - 0.9 * 2.35 * 3.35 / 8.75))
    assert ap.sampled_alpha(0.9, 3.0, 1.5, 1.0, 3) == ap.sampled_alpha(0.9, 1.0, 1.5, 1.0, 3)  # full drop at full_at
    assert ap.sampled_alpha(1.0, 1.0, 1.5, 1.0, 3) == pytest.approx(1.0)  # a certain draft is always matched
    table = {**TABLE, "temperature": {**TABLE["temperature"], "sampled_rule": {"full_at": 1.0}},
             "confidence": {"kappa": 1.5}}
    pairs = [_entry("a", "Fam-3B-Instruct", 0.90, "https://github.com/o/r/issues/1"),
             _entry("b", "Fam-7B-Instruct", 0.90, "https://github.com/o/r/issues/2")]
    cond = ap.Conditions(draft_params=3_000_000_000, temperature=1.0)
    lossless = ap.prior("fam", "fam", cond, pairs=pairs, table=table)
    matched = ap.prior("fam", "fam", ap.Conditions(draft_params=3_000_000_000, temperature=1.0, rule="match"),
                       pairs=pairs, table=table)
    greedy = ap.prior("fam", "fam", ap.Conditions(draft_params=3_000_000_000, temperature=0.0, rule="match"),
                      pairs=pairs, table=table)
    assert lossless.alpha == pytest.approx(0.9) and greedy.alpha == pytest.approx(0.9)
    assert matched.alpha == pytest.approx(0.9 * 2.35 * 3.35 / 8.75)
    assert matched.low == pytest.approx(ap.sampled_alpha(lossless.low, 1.0, 1.5, 1.0, 3))
    assert "both models sample at temperature 1" in matched.given


def test_recommend_applies_the_engines_sampled_acceptance_rule():
    """mlx-lm's rule is 'match' (mlx_lm/generate.py:616), llama.cpp's 'target' (common/sampling.cpp:696),
    vLLM's rejection sampling keeps the greedy prior."""
    t, d = load_spec("qwen2.5-14b-instruct"), load_spec("qwen2.5-1.5b-instruct")
    m = get_machine("m4-max-128gb")
    kappa = ap.adjustments()["confidence"]["kappa"]
    plans = {e: {temp: P.recommend(Target(t, t.id, candidates=[DraftModel(d, d.id)]),
                                   Where(m, engines.get(e)),
                                   Workload(context=4096, temperature=temp)).plans[0].acceptance for temp in (0.0, 0.8)}
             for e in ("mlx", "llama.cpp")}
    greedy = plans["llama.cpp"][0.0].alpha
    assert plans["mlx"][0.0].alpha == pytest.approx(greedy)
    assert [engines.get(e).sampled_acceptance for e in ("vllm", "sglang", "transformers")] == ["rejection"] * 3
    assert plans["llama.cpp"][0.8].alpha == pytest.approx(ap.sampled_alpha(greedy, 0.8, kappa, 1.0, 2))
    assert plans["mlx"][0.8].alpha == pytest.approx(ap.sampled_alpha(greedy, 0.8, kappa, 1.0, 3))


def test_heterogeneous_fallback_uses_the_number_pair_prints():
    # vLLM refuses Qwen2.5-7B + 0.5B over embedding padding and runs it through TLI; `pair` prices that
    # path at the published 0.61 for this very pair (vLLM PR #38174), and recommend must use the same.
    t, d = load_spec("qwen2.5-7b-instruct"), load_spec("qwen2.5-0.5b-instruct")
    report = pairing.pair(t, d)
    assert report.heterogeneous.tli_acceptance.value == 0.61
    compat = DraftModel(d, d.id).compatibility(t, engines.get("vllm"))
    assert compat.fallback and compat.tli_alpha == 0.61
    rec = P.recommend(Target(t, t.id, candidates=[DraftModel(d, d.id)]),
                      Where(get_machine("rtx-4090"), engines.get("vllm")),
                      Workload(context=4096))
    a = rec.plans[0].acceptance
    assert a.alpha == 0.61 and a.low == pytest.approx(0.51)  # one published pair per overlap: +/- 0.1
    llama = P.recommend(Target(t, t.id, candidates=[DraftModel(d, d.id)]),
                        Where(get_machine("rtx-4090"), engines.get("llama.cpp")),
                        Workload(context=4096))
    assert llama.plans[0].acceptance.alpha > 0.61  # llama.cpp runs the pair plainly: no cap


# --- calibration (the real catalog) ------------------------------------------------------------------

def test_leave_one_out_coverage_is_near_eighty_percent():
    rows = bench_acceptance.rows()
    s = bench_acceptance.summary(rows, "adjusted")
    assert s["n"] >= 20 and s["coverage"] >= 0.75
    flat = bench_acceptance.summary(rows, "flat")
    assert s["median_abs_error"] < flat["median_abs_error"]  # the terms explain part of the spread
    by_source = bench_acceptance.summary(bench_acceptance.rows(by_source=True), "adjusted")
    assert by_source["coverage"] >= 0.75  # a new publication's alphas, the half-width's calibration


def test_the_centre_is_the_median_of_each_publications_median():
    # one sweep of five rows (0.90 each) is one draw next to two single-row publications (0.70, 0.80):
    # median of (0.90, 0.70, 0.80) = 0.80, where the row median would be 0.90
    rows = [_entry(f"s{i}", "Fam-3B-Instruct", 0.90, "https://github.com/a/sweep results") for i in range(5)]
    rows += [_entry("p1", "Fam-3B-Instruct", 0.70, "arXiv 1111.22222"),
             _entry("p2", "Fam-3B-Instruct", 0.80, "https://github.com/b/c/issues/1")]
    p = ap.prior("fam", "fam", ap.Conditions(draft_params=3_000_000_000), pairs=rows, table=TABLE)
    assert p.alpha == pytest.approx(0.80) and "3 publication(s)" in p.given
