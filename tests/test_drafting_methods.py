"""The drafting methods beyond a separate draft model: EAGLE-3 heads, MTP layers, n-gram lookup, early exit.

Why: each method keeps something different resident (a head without its embedding, the target's
MTP layers, nothing), is run by some engines and refused by others, and has its own acceptance
evidence. Every figure below is computed independently: the Scout head against the reference
truth (tests/fixtures/heads/llama4-scout-eagle3/SOURCE.md), header bytes against a real
safetensors file written here, MTP bytes and KV by hand from the DeepSeek-V3 config.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from planner import engines
from planner.core.errors import ConfigError, UsageError
from planner.core.spec import MtpSpec
from planner.drafting import METHODS, EarlyExit, MtpLayers, NgramLookup, heads, priors, self_drafting
from planner.drafting.eagle3 import Eagle3
from planner.drafting.mtp import mtp_model
from planner.engines.base import METHOD_KINDS
from planner.fits import fit, memory
from planner.fits.machine_lookup import get_machine
from planner.fits.memory import Settings
from planner.plan import recommend as P
from planner.plan.request import Target, Where, Workload
from planner.sources import load_spec
from planner.speed import roofline
from planner.speed.model import expected_accepted

SCOUT = Path(__file__).parent / "fixtures" / "heads" / "llama4-scout-eagle3"
# reference unseen/truth.json "Llama-4-Scout-EAGLE3-draft" (SOURCE.md)
SCOUT_CHECKPOINT_BYTES, SCOUT_NO_EMBED_BYTES, SCOUT_KV_PER_TOKEN = 3_760_299_328, 1_691_327_808, 4096


def test_every_engine_method_kind_has_a_drafting_module():
    assert tuple(METHODS) == METHOD_KINDS


# --- EAGLE-3 heads ---------------------------------------------------------------------------------

def test_scout_head_from_its_real_config_within_5_percent_of_the_checkpoint():
    h = heads.from_dir(SCOUT, targets=("meta-llama/Llama-4-Scout-17B-16E-Instruct",))
    assert h.source == "config"
    assert abs(h.checkpoint_bytes - SCOUT_CHECKPOINT_BYTES) <= 0.05 * SCOUT_CHECKPOINT_BYTES
    assert abs(h.resident_bytes - SCOUT_NO_EMBED_BYTES) <= 0.05 * SCOUT_NO_EMBED_BYTES
    layer = h.spec.layers[0]
    assert len(h.spec.layers) == 1 and layer.kv_heads * (layer.head_dim_k + layer.head_dim_v) * 2 == SCOUT_KV_PER_TOKEN
    # the head's own KV in the ledger: one layer, context tokens (transformers holds exactly the context)
    kv, _ = memory.kv_cache(h.spec, Settings(context=1000, resolved_engine=engines.get("transformers")), 1000)
    assert kv == 1000 * SCOUT_KV_PER_TOKEN


def test_held_out_llama31_8b_head_hand_count():
    """yuhuili/EAGLE3-LLaMA3.1-Instruct-8B (catalog config), counted by hand: h 4096, 32 heads of 128, 8 KV
    heads, FFN 14336, target vocab 128256, draft vocab 32000, fp16."""
    h = next(x for x in heads.entries() if x.id == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B").head()
    params = (4096 * 3 * 4096  # fc
              + 4096 * 8192 + 2 * 1024 * 8192 + 4096 * 4096  # q, k, v over 2h; o
              + 3 * 14336 * 4096  # gate, up, down
              + 4 * 4096  # hidden_norm, input_layernorm, post_attention_layernorm, norm
              + 32000 * 4096)  # draft-vocabulary lm_head
    assert h.resident_bytes == 2 * params + 8 * 32000 + 128256  # + d2t int64 + t2d bool
    assert 0.5e9 <= h.resident_bytes <= 2.5e9
    assert not h.stores_embedding and h.checkpoint_bytes == h.resident_bytes


def test_head_sized_exactly_from_a_real_safetensors_header(tmp_path):
    cfg = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 64, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 512, "draft_vocab_size": 128,
           "torch_dtype": "bfloat16"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    arrays = {"embed_tokens.weight": np.zeros((512, 64), np.float16), "fc.weight": np.zeros((64, 192), np.float16),
              "midlayer.self_attn.q_proj.weight": np.zeros((64, 128), np.float16),
              "midlayer.self_attn.k_proj.weight": np.zeros((32, 128), np.float16),
              "midlayer.self_attn.v_proj.weight": np.zeros((32, 128), np.float16),
              "midlayer.self_attn.o_proj.weight": np.zeros((64, 64), np.float16),
              "midlayer.mlp.gate_proj.weight": np.zeros((160, 64), np.float16),
              "midlayer.mlp.up_proj.weight": np.zeros((160, 64), np.float16),
              "midlayer.mlp.down_proj.weight": np.zeros((64, 160), np.float16),
              "midlayer.hidden_norm.weight": np.zeros(64, np.float16),
              "midlayer.input_layernorm.weight": np.zeros(64, np.float16),
              "midlayer.post_attention_layernorm.weight": np.zeros(64, np.float16),
              "norm.weight": np.zeros(64, np.float16), "lm_head.weight": np.zeros((128, 64), np.float16),
              "d2t": np.zeros(128, np.int64), "t2d": np.zeros(512, np.bool_)}
    save_file(arrays, str(tmp_path / "model.safetensors"))
    h = heads.from_dir(tmp_path)
    assert h.source == "header"
    assert h.checkpoint_bytes == sum(a.nbytes for a in arrays.values())  # exact: the file's own tensors
    assert h.resident_bytes == h.checkpoint_bytes - arrays["embed_tokens.weight"].nbytes
    # the config alone gives the same bytes (bf16 and fp16 are both 2 bytes)
    assert heads.build("x", cfg).checkpoint_bytes == h.checkpoint_bytes


def test_head_for_another_target_is_refused_with_the_reason():
    head = next(x for x in heads.entries() if x.id == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B").head()
    qwen = load_spec("Qwen/Qwen3-8B")
    c = Eagle3(head).compatibility(qwen, engines.get("vllm"))
    assert not c.runs and c.verdict.failed_rule == "head_target" and "151936" in c.verdict.detail
    llama = load_spec("llama-3.1-8b-instruct")
    assert Eagle3(head).compatibility(llama, engines.get("vllm")).runs
    mlx = Eagle3(head).compatibility(llama, engines.get("mlx"))
    assert not mlx.runs and mlx.verdict.failed_rule == "method" and "draft-model" in mlx.verdict.detail


def test_malformed_heads_catalog_is_a_config_error(tmp_path):
    (tmp_path / "h.json").write_text(json.dumps({"heads": [{"id": "x", "targets": ["t"], "config": {},
                                                            "stores_embedding": True, "source": "s"}]}))
    with pytest.raises(ConfigError, match="hidden_size"):
        heads.entries(tmp_path)


# --- the JSON contract: recommend ranks every method together ---------------------------------------

CONTRACT = ("method", "draft", "draft_weights_bytes", "k", "speedup", "speedup_interval", "verdict", "launch",
            "baseline_tokens_per_s")


def _recommend(capsys, *argv: str) -> dict:
    from planner.cli import main
    with pytest.raises(SystemExit) as e:
        main(["recommend", *argv, "--json"])
    assert e.value.code == 0
    return json.loads(capsys.readouterr().out)


def test_llama31_8b_h100_vllm_has_an_eagle3_plan(capsys):
    data = _recommend(capsys, "llama-3.1-8b-instruct", "--machine", "h100-sxm", "--engine", "vllm")
    assert all(set(CONTRACT) <= set(p) for p in data["plans"])
    plan = next(p for p in data["plans"] if p["method"] == "eagle3")
    argv = shlex.split(plan["launch"]["command"])
    cfg = json.loads(argv[argv.index("--speculative-config") + 1])
    assert cfg["method"] == "eagle3" and cfg["num_speculative_tokens"] == plan["k"]
    assert cfg["model"] in {e.id for e in heads.entries()} and cfg["model"] == plan["draft"]
    assert 0.5e9 <= plan["draft_weights_bytes"] <= 2.5e9
    lo, hi = plan["speedup_interval"]
    assert lo <= plan["speedup"] <= hi
    ngram = next(p for p in data["plans"] if p["method"] == "ngram")
    assert ngram["draft_weights_bytes"] == 0 and ngram["draft"].startswith("ngram")
    assert "prompt_lookup_max" in json.loads(shlex.split(ngram["launch"]["command"])[-1])


def test_sglang_eagle3_command(capsys):
    data = _recommend(capsys, "llama-3.1-8b-instruct", "--machine", "h100-sxm", "--engine", "sglang",
                      "--method", "eagle3")
    assert {p["method"] for p in data["plans"]} == {"eagle3"}
    argv = shlex.split(data["plans"][0]["launch"]["command"])
    assert argv[argv.index("--speculative-algorithm") + 1] == "EAGLE3"
    assert argv[argv.index("--speculative-draft-model-path") + 1] == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"


def test_unknown_method_or_workload_is_exit_2(capsys):
    from planner.cli import main
    for extra in (["--method", "medusa"], ["--workload", "poetry"]):
        with pytest.raises(SystemExit) as e:
            main(["recommend", "llama-3.1-8b-instruct", "--machine", "h100-sxm", *extra])
        assert e.value.code == 2


# --- n-gram lookup ---------------------------------------------------------------------------------

def test_ngram_prior_depends_on_the_workload():
    code, chat = priors.prior("ngram", workload="code"), priors.prior("ngram", workload="chat")
    # code: vLLM PR #24344, sequence-normalised acceptance length 2.96 at K = 5 (bonus token included)
    assert expected_accepted(code.alpha, 5) == pytest.approx(2.96, abs=1e-6)
    assert "24344" in code.source and code.low < code.alpha < code.high
    assert chat.alpha < code.alpha and "assumed" in chat.source and "uncertain" in chat.source
    t = load_spec("llama-3.1-8b-instruct")
    assert NgramLookup("code").acceptance_prior(t).alpha == code.alpha


def test_ngram_keeps_nothing_resident_and_runs_where_the_engine_has_it():
    t = load_spec("llama-3.1-8b-instruct")
    m = NgramLookup("code")
    assert m.resident_model() is None and m.launch_fields()["draft"] is None
    assert {e.name for e in engines.all_engines() if m.compatibility(t, e).runs} == {"llama.cpp", "vllm", "sglang",
                                                                                    "transformers"}


# --- MTP layers ----------------------------------------------------------------------------------

def _deepseek_mtp_params() -> int:
    """One DeepSeek-V3 MTP module by hand (config: h 7168, MLA q_lora 1536 kv_lora 512, 128 heads of
    128 nope + 64 rope, v 128; 256 routed experts + 1 shared of 2048; eh_proj 2h -> h, three norms)."""
    h = 7168
    attention = (h * 1536 + 1536 + 1536 * 128 * 192 + h * 576 + 512 + 512 * 128 * 256 + 128 * 128 * h)
    moe = 257 * 3 * h * 2048 + 256 * h
    return attention + moe + 2 * h + (3 * h + 2 * h * h)  # layer norms; enorm, hnorm, head norm, eh_proj


def _deepseek_with_mtp():
    base = load_spec("deepseek-ai/DeepSeek-V3")
    p = _deepseek_mtp_params()
    return dataclasses.replace(base, mtp=MtpSpec(layers=1, params=p, nbytes=p, source="config")), p  # FP8: 1 B each


def test_mtp_resident_model_is_the_mtp_layers_with_their_own_kv():
    t, nbytes = _deepseek_with_mtp()
    spec = MtpLayers(t).resident_model()
    assert spec.weights.resident_bytes == nbytes and spec.n_layers == 1
    # vLLM keeps MLA as its latent: (kv_lora_rank 512 + rope 64) x 2 bytes per token for the one MTP layer
    kv, _ = memory.kv_cache(spec, Settings(context=4096, resolved_engine=engines.get("vllm")), 4096)
    assert kv == 4096 * 576 * 2


def _eight_h200():
    from planner.fits.machine import with_overrides
    return with_overrides(get_machine("h200"), n_devices=8)


def test_deepseek_with_mtp_gets_an_mtp_plan_with_those_bytes():
    t, nbytes = _deepseek_with_mtp()
    rec = P.recommend(Target(t, t.id, methods=("mtp",)),
                      Where(_eight_h200(), engines.get("vllm")),
                      Workload(context=4096))
    plan = rec.plans[0]
    assert plan.method.kind == "mtp" and plan.fits and plan.compatible
    assert memory.weights(plan.problem.draft, plan.problem.settings)[0] == nbytes
    assert json.loads(plan.launch["speculative_config"]) == {"method": "mtp", "num_speculative_tokens": plan.k}
    # DeepSeek-V3 report: 85-90% second-token acceptance is in the prior's evidence
    assert "2412.19437" in plan.acceptance.source
    without = P.recommend(Target(dataclasses.replace(t, mtp=None), t.id, methods=("mtp",)),
                          Where(_eight_h200(), engines.get("vllm")),
                          Workload(context=4096))
    assert not without.plans and any("ships no MTP layers" in n for n in without.notes)


def test_sglang_mtp_is_nextn_on_the_target_itself():
    x = engines.LaunchInput(target="deepseek-ai/DeepSeek-V3", draft=None, k=3, context=4096, method="mtp")
    argv = shlex.split(engines.launch("sglang", x)["command"])
    assert argv[argv.index("--speculative-algorithm") + 1] == "NEXTN"
    assert argv[argv.index("--speculative-draft-model-path") + 1] == "deepseek-ai/DeepSeek-V3"
    assert argv[argv.index("--speculative-num-draft-tokens") + 1] == "4"


# --- early exit ----------------------------------------------------------------------------------

def test_early_exit_runs_only_in_transformers_and_costs_a_fraction_of_the_target():
    t = load_spec("llama-3.1-8b-instruct")
    m = EarlyExit(t)
    assert m.exit_at == 8  # 32 layers // 4
    assert {e.name for e in engines.all_engines() if m.compatibility(t, e).runs} == {"transformers"}
    assert m.resident_model().weights.resident_bytes == 0 and m.resident_model().n_layers == 8
    roof = P.roofline_machine(get_machine("h100-sxm"), fit.default_layout(1, engines.get("transformers")), engines.get("transformers"))
    s = Settings(context=4096, resolved_engine=engines.get("transformers"))
    full = roofline.draft_step_s(t, roof, context=4096, settings=s)
    assert 0.2 * full < m.step_s(roof, s) < 0.5 * full  # 8 of 32 layers + the lm_head
    code = engines.launch("transformers", engines.LaunchInput(target=t.id, draft=None, k=4, context=4096,
                                                              method="early_exit", exit_layer=8))["python"]
    assert "assistant_early_exit=8" in code and "num_assistant_tokens = 4" in code
    compile(code, "<snippet>", "exec")


def test_self_drafting_names_what_it_leaves_out():
    t = load_spec("llama-3.1-8b-instruct")
    runs, left = self_drafting(t, engines.get("vllm"))
    assert [m.kind for m in runs] == ["eagle3", "ngram"]
    assert any(line.startswith("early_exit: vLLM has no") for line in left)
    assert any(line.startswith("mtp:") for line in left)
    with pytest.raises(UsageError):
        from planner.commands._methods import parse_methods
        parse_methods("eagle3,medusa")


# --- --method on the faces that judge one plan (memory, fit, check) ---------------------------------

def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from planner.cli import main
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    out, err = capsys.readouterr()
    return e.value.code, out, err


def test_memory_method_eagle3_sizes_the_catalogued_head(capsys):
    code, out, _ = _cli(capsys, "memory", "llama-3.1-8b-instruct", "--method", "eagle3", "--engine", "vllm", "--json")
    assert code == 0
    draft = next(m for m in json.loads(out)["models"] if m["role"] == "draft")
    head = next(x for x in heads.entries() if x.id == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B").head()
    assert draft["id"] == head.id and draft["weights_bytes"] == head.resident_bytes
    assert draft["kv_bytes_per_token"] == 8 * 128 * 2 * 2  # one layer, 8 KV heads of 128, K and V, 16-bit


def test_memory_method_errors_are_exit_2(capsys):
    for argv in (["--method", "medusa"], ["--method", "draft_model"], ["--method", "eagle3,ngram"]):
        code, _, err = _cli(capsys, "memory", "llama-3.1-8b-instruct", *argv)
        assert code == 2 and err.startswith("error: Cannot use --method")
    code, _, err = _cli(capsys, "memory", "qwen2.5-7b-instruct", "--method", "eagle3")
    assert code == 2 and "no EAGLE-3 head is catalogued" in err


def test_fit_method_ngram_adds_nothing_beside_the_target(capsys):
    code, out, _ = _cli(capsys, "fit", "llama-3.1-8b-instruct", "--machine", "rtx-4090", "--json")
    code2, out2, _ = _cli(capsys, "fit", "llama-3.1-8b-instruct", "--machine", "rtx-4090", "--method", "ngram",
                          "--json")
    assert code == code2 == 0
    assert json.loads(out)["devices"] == json.loads(out2)["devices"]


def test_check_policy_method_and_workload(tmp_path, capsys):
    (tmp_path / "planner.toml").write_text(
        '[[deployment]]\nname = "code"\ntarget = "llama-3.1-8b-instruct"\nmethod = "ngram"\nworkload = "code"\n'
        'engine = "vllm"\nmachine = "h100-sxm"\nrequire = { min_speedup = 1.0 }\n\n'
        '[[deployment]]\nname = "mac"\ntarget = "llama-3.1-8b-instruct"\nmethod = "eagle3"\nengine = "mlx"\n'
        'machine = "m3-max-36gb"\nrequire = { compatible = true }\n')
    code, out, _ = _cli(capsys, "check", "--config", str(tmp_path / "planner.toml"), "--json")
    assert code == 1  # mlx refuses EAGLE-3: the answer is no
    data = json.loads(out)
    by = {(r["deployment"], r["requirement"]): r for r in data["results"]}
    assert by[("code", "min_speedup")]["status"] == "pass"
    assert by[("mac", "compatible")]["status"] == "fail" and "eagle3 drafting" in by[("mac", "compatible")]["message"]
    assert {d["method"] for d in data["deployments"]} == {"ngram", "eagle3"}
    (tmp_path / "planner.toml").write_text('[[deployment]]\nname = "x"\ntarget = "llama-3.1-8b-instruct"\n'
                                           'method = "medusa"\nmachine = "h100-sxm"\n')
    code, _, err = _cli(capsys, "check", "--config", str(tmp_path / "planner.toml"))
    assert code == 2 and "medusa" in err


def test_mtp_layers_resize_with_the_weights_dtype_like_the_target():
    """DeepSeek-V3's MTP layer (13.46B parameters, fp8 as stored) re-sized by --weights-dtype: int4 packs
    2 parameters per byte plus group scales, so it lands between 0.5 and 0.6 bytes per parameter and
    below the fp8 copy (a 1-D stand-in tensor would fall back to 16-bit, twice the stored size)."""
    m = mtp_model(load_spec("deepseek-v3"))
    params = m.weights.params_total
    int4 = memory.weights(m, Settings(resolved_engine=engines.get("vllm"), weights_dtype="int4"))[0]
    fp8 = memory.weights(m, Settings(resolved_engine=engines.get("vllm"), weights_dtype="fp8"))[0]
    assert 0.5 * params < int4 < 0.6 * params < fp8 <= m.weights.resident_bytes


def test_mtp_priors_by_workload_are_the_medians_of_their_publications():
    # llama.cpp draft-mtp on Qwen3.8-27B (sudoingX/qwen38-mtp): accepted per drafted at n-max K, inverted by
    # hand from alpha (1 - alpha^K) / ((1 - alpha) K); code: PRs #43 (code prompts), #42, #78
    from planner.speed.acceptance import accepted_per_drafted

    def invert(rate: float, k: int) -> float:
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if accepted_per_drafted(mid, k) < rate else (lo, mid)
        return hi

    code = sorted(invert(r, k) for r, k in ((0.805, 4), (0.648, 4), (0.786, 2)))
    got = priors.prior("mtp", workload="code", target="Qwen/Qwen3.5-35B-A3B")
    assert got.alpha == pytest.approx(code[1], abs=1e-6) and "sudoingX/qwen38-mtp" in got.source
    # chat keeps the DeepSeek-V3 report's and the Qwen3.6 run's level; the prose prompt (0.40 at K = 4)
    # is its low end
    chat = priors.prior("mtp", workload="chat", target="Qwen/Qwen3.5-35B-A3B")
    assert chat.low == pytest.approx(invert(0.40, 4), abs=1e-6) and chat.low < 0.7 < chat.alpha
