"""`planner recommend`: same-family drafts, memory honoured, launch commands valid, no-speculation answers."""

from __future__ import annotations

import itertools
import json
import shlex

import pytest

from planner import engines
from planner.core.constants import DEFAULT_MAX_K
from planner.drafting import DraftModel
from planner.fits.fit import Layout
from planner.fits.machine import with_overrides
from planner.fits.machine_lookup import get_machine
from planner.plan import recommend as P
from planner.plan.acceptance_source import parse_acceptance
from planner.plan.candidates import tokenizer_family
from planner.plan.costs import profile_costs
from planner.plan.request import Pricing, Target, Where, Workload
from planner.sources import load_spec
from planner.speed.adaptive import Adaptive

from .cli_run import run_cli as run
from .conftest import model_dir


def test_recommend_catalog_target_offline_json(capsys):
    code, out, _ = run(["recommend", "llama-3.1-8b-instruct", "--machine", "rtx-4090", "--engine", "vllm",
                        "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["target"] == "meta-llama/Llama-3.1-8B-Instruct" and data["machine"] == "rtx-4090"
    rec = data["recommendation"]
    assert rec["draft"].startswith("meta-llama/Llama-3.2-") and rec["verdict"] in ("faster", "uncertain")
    assert rec["speedup"] > 1.0 and 1 <= rec["k"] <= 8
    # every draft-model candidate is a same-tokenizer-family model, smaller than the target
    drafts = [p for p in data["plans"] if p["method"] == "draft_model"]
    assert drafts and all(p["draft"].startswith("meta-llama/Llama-3.") for p in drafts)
    assert {p["method"] for p in data["plans"]} == {"draft_model", "eagle3", "ngram"}
    # the vLLM launch command is valid: its --speculative-config parses as JSON with the chosen K
    argv = shlex.split(rec["launch"]["command"])
    spec_cfg = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec_cfg == {"method": "draft_model", "model": rec["draft"], "num_speculative_tokens": rec["k"],
                        "draft_tensor_parallel_size": 1}
    assert argv[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]


def test_instruct_target_prefers_instruct_draft():
    t = load_spec("qwen2.5-7b-instruct")
    rec = P.recommend(Target(t, t.id),
                      Where(get_machine("rtx-4090"), engines.get("llama.cpp")),
                      Workload(context=4096))
    assert rec.choice.draft == "Qwen/Qwen2.5-0.5B-Instruct"
    assert rec.tokenizer_family == "qwen2.5"


def _used(target, draft, machine, context):
    from planner.fits import fit
    from planner.fits.memory import Settings

    s = Settings(context=context, resolved_engine=engines.get("transformers"), spec_tokens=DEFAULT_MAX_K)
    devs = fit.evaluate(fit.Problem(target, machine, s, draft=draft), context, 1)
    return devs[0].used_bytes


def test_draft_that_does_not_fit_is_never_recommended():
    t = load_spec("llama-3.1-8b-instruct")
    small, big = load_spec("llama-3.2-1b-instruct"), load_spec("llama-3.2-3b-instruct")
    big_m = get_machine("h100-sxm")
    # a device between what the target + 1B and the target + 3B need: only the 1B draft fits
    mem = (_used(t, small, big_m, 4096) + _used(t, big, big_m, 4096)) // 2
    m = with_overrides(get_machine("rtx-4090"), memory_bytes=mem)
    rec = P.recommend(Target(t, t.id), Where(m, engines.get("transformers")), Workload(context=4096))
    by_draft = {o.draft: o for o in rec.plans}
    assert not by_draft["meta-llama/Llama-3.2-3B-Instruct"].fits
    assert by_draft["meta-llama/Llama-3.2-1B-Instruct"].fits
    assert rec.choice.draft == "meta-llama/Llama-3.2-1B-Instruct"
    # below target + 1B (but above the target alone): nothing fits beside it, so plain decoding
    alone = _used(t, None, big_m, 4096)
    tiny = with_overrides(get_machine("rtx-4090"), memory_bytes=(alone + _used(t, small, big_m, 4096)) // 2)
    rec2 = P.recommend(Target(t, t.id, methods=("draft_model",)),
                       Where(tiny, engines.get("transformers")),
                       Workload(context=4096))
    assert rec2.baseline_fits and rec2.choice.draft is None
    # n-gram lookup keeps nothing resident: it still fits there
    rec3 = P.recommend(Target(t, t.id, methods=("ngram",)),
                       Where(tiny, engines.get("transformers")),
                       Workload(context=4096))
    assert rec3.plans and all(o.fits and o.method.kind == "ngram" for o in rec3.plans)
    assert any("fits" in r for r in rec2.choice.reasons)


def test_serial_backend_profile_says_no_speculation(tmp_path, capsys):
    t = load_spec("llama-3.1-8b-instruct")
    verify = [0.02 * n for n in range(1, 10)]  # t_v(n) = n t_v(1): not batch-parallel

    class Curve:
        def __init__(self, id_, v, step):
            self.id, self.verify_s, self.step_s = id_, v, step

    class Prof:
        target = Curve(t.id, verify, 0.02)
        draft = Curve("meta-llama/Llama-3.2-1B-Instruct", [0.004], 0.004)
        overhead_s = 0.0

    costs = profile_costs(Prof(), t, None)
    d = DraftModel(load_spec("llama-3.2-1b-instruct"), "meta-llama/Llama-3.2-1B-Instruct")
    rec = P.recommend(Target(t, t.id, candidates=[d]),
                      Where(get_machine("rtx-4090"), engines.get("llama.cpp")),
                      Workload(context=4096),
                      Pricing(costs_for=costs, k_max=8))
    assert rec.choice.draft is None and rec.choice.verdict == "no speculation"
    assert any("batch-parallel" in r for r in rec.choice.reasons)


def test_target_that_does_not_fit_exits_1(capsys):
    code, out, _ = run(["recommend", "llama-3.1-70b-instruct", "--machine", "rtx-4090", "--json"], capsys)
    assert code == 1
    data = json.loads(out)
    assert data["baseline_fits"] is False and data["recommendation"]["draft"] is None


def test_config_only_dir_matched_by_evidence(tmp_path):
    d = model_dir(tmp_path, "Qwen2.5-7B")
    spec = load_spec(str(d))
    fam, how = tokenizer_family(spec)
    assert fam == "qwen2.5" and "vocab_size 152064" in how


def test_llamacpp_launch_uses_current_flags(capsys):
    """Current llama-server: --spec-type draft-simple and --spec-draft-n-max (common/arg.cpp:4249, :4140);
    --draft-max and -cd are removed (:4387; -cd is a parser error)."""
    _, out, _ = run(["recommend", "llama-3.1-8b-instruct", "--machine", "m3-max-36gb", "--engine",
                        "llama.cpp", "--json"], capsys)
    rec = json.loads(out)["recommendation"]
    argv = shlex.split(rec["launch"]["command"])
    assert argv[argv.index("--spec-type") + 1] == "draft-simple"
    assert argv[argv.index("--spec-draft-n-max") + 1] == str(rec["k"]) and "-ngld" in argv
    assert "--draft-max" not in argv and "-cd" not in argv


@pytest.mark.parametrize("text,alpha", [("0.7", 0.7), ("greedy_match=0.8", 0.8)])
def test_parse_acceptance(text, alpha):
    assert parse_acceptance(text).alpha == pytest.approx(alpha)


def test_parse_acceptance_conventions():
    a = parse_acceptance("accepted_per_drafted=0.378@6")
    assert a.alpha == pytest.approx(0.727, abs=0.002)
    iv = parse_acceptance("0.6-0.8")
    assert (iv.low, iv.alpha, iv.high) == pytest.approx((0.6, 0.7, 0.8))


def test_tp_roofline_aggregates_bandwidth():
    m = get_machine("2x-rtx-4090")
    r1 = P.roofline_machine(m, Layout(tp=1, pp=2))
    r2 = P.roofline_machine(m, Layout(tp=2, pp=1))
    assert r2.bandwidth_bytes_per_s == 2 * r1.bandwidth_bytes_per_s


def test_cpu_roofline_derated_to_measured_matmul_efficiency():
    from planner.core.constants import CPU_MATMUL_EFFICIENCY

    m = get_machine("cpu-ryzen-7-5800x-32gb")
    roof = P.roofline_machine(m, Layout())
    assert roof.peak_flops["bf16"] == m.peak_flops["bf16"] * CPU_MATMUL_EFFICIENCY
    assert roof.bandwidth_bytes_per_s == m.bandwidth_bytes_per_s
    gpu = get_machine("rtx-4090")
    assert P.roofline_machine(gpu, Layout()).peak_flops["bf16"] == gpu.peak_flops["bf16"]


def test_quantised_target_on_cpu_verification_is_compute_bound():
    # Q4_K weights on an 8-core CPU: verifying a few tokens is compute-bound (t_v(n) grows with n), so
    # only K=1 can pay and longer drafts lose; on the catalog GPU mul_mat_vec_q grows far less and K grows.
    # Every round drafting K (--draft-p-min 0): the verify-cost mechanism alone.
    t = load_spec("qwen2.5-7b-instruct")
    cpu = P.recommend(Target(t, t.id, weights_dtype="q4_k"),
                      Where(get_machine("cpu-ryzen-7-5800x-32gb"), engines.get("llama.cpp")),
                      Workload(context=4096),
                      Pricing(adaptive=Adaptive(0.0)))
    curve = cpu.plans[0].prediction.speedup_by_k
    assert cpu.plans[0].k == 1 and all(a > b for a, b in itertools.pairwise(curve))
    assert curve[3] < 1.0  # K=4 is slower than plain decoding there
    # llama-server's default stop (p-min 0.75) drafts past K=1 only where the draft is sure: a K=4 cap loses less
    stopped = P.recommend(Target(t, t.id, weights_dtype="q4_k"),
                          Where(get_machine("cpu-ryzen-7-5800x-32gb"), engines.get("llama.cpp")),
                          Workload(context=4096)).plans[0].prediction.speedup_by_k
    assert stopped[3] > curve[3]
    gpu = P.recommend(Target(t, t.id, weights_dtype="q4_k"),
                      Where(get_machine("rtx-4090"), engines.get("llama.cpp")),
                      Workload(context=4096))
    assert gpu.plans[0].k > 1
    at2 = P.recommend(Target(t, t.id, weights_dtype="q4_k"),
                      Where(get_machine("rtx-4090"), engines.get("llama.cpp")),
                      Workload(context=4096),
                      Pricing(k_fixed=2))
    # k-quant MMVQ: t_v(3)/t_v(1) = 1.26 on the weight read (PR #5434, RTX 3090); the KV read is unscaled
    assert at2.plans[0].k == 2 and 1.1 < at2.plans[0].prediction.verify_ratio < 1.26
