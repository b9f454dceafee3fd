"""Fit: per-device split, budgets, verdicts, largest context and batch, suggestions, `planner fit`.

Every expected number below is worked by hand from config shapes (weights, KV bytes per token,
activation widths) and the published engine rules, not read back from the code under test.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace

import pytest

from planner import engines
from planner.core.constants import GiB, MiB
from planner.core.errors import UsageError
from planner.fits import fit as F
from planner.fits import verdict
from planner.fits.budget import device_budget
from planner.fits.machine import Device, custom_gpu, with_overrides
from planner.fits.machine_lookup import get_machine
from planner.fits.memory import Settings, ledger, model_ledger
from planner.fits.split import stage_ranges, weight_split
from planner.render.text import ledger_json
from planner.sources import load_spec

from .cli_run import run_cli as run
from .conftest import model_dir

# Llama-3.1-8B (bf16): golden numbers from shared/reference/models.json
W8B = 16_060_522_496
KV8B = 131_072  # 32 layers x 8 kv heads x (128 + 128) x 2 B
EMB8B = 128_256 * 4096 * 2
# Llama-3.2-1B-Instruct (bf16, tied embeddings)
W1B = 2_471_628_800
KV1B = 32_768  # 16 layers x 8 x (64 + 64) x 2
EMB1B = 128_256 * 2048 * 2
VLLM_OVERHEAD = 1833 * MiB  # non-torch memory at TP1 (vLLM PR #10511)
LOGITS_256 = 256 * 128_256 * 4  # vLLM samples max_num_seqs=256 rows of fp32 logits


def act_vllm(hidden, q, kv, hd, inter, chunk=2048, tp=1, logits=True):
    """vLLM activation estimate, by hand: chunk x (3 hidden + q + k + v + 3 ffn) x 2 B + logits."""
    per_token = 3 * hidden + (q // tp) * hd + max(kv // tp, 1) * 2 * hd + 3 * (inter // tp)
    return chunk * per_token * 2 + (LOGITS_256 if logits else 0)


A8B = act_vllm(4096, 32, 8, 128, 14336)  # 382_992_384 = 365.25 MiB
A1B = act_vllm(2048, 32, 8, 64, 8192)  # 269_746_176 = 257.25 MiB


@pytest.fixture
def llama8b(tmp_path):
    return load_spec(str(model_dir(tmp_path, "Llama-3.1-8B")))


@pytest.fixture
def llama1b(tmp_path):
    return load_spec(str(model_dir(tmp_path, "Llama-3.2-1B-Instruct")))


@pytest.fixture
def llama70b(tmp_path):
    # Llama-3.1-70B's published shapes on the 8B config (same family, same rope, same vocabulary)
    d = model_dir(tmp_path, "Llama-3.1-8B", hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                  num_attention_heads=64, num_key_value_heads=8, _name_or_path="meta-llama/Llama-3.1-70B")
    return load_spec(str(d))


def test_hand_values_match_reference(llama8b, llama1b):
    assert A8B == 382_992_384 and A1B == 269_746_176
    assert llama8b.weights.resident_bytes == W8B and llama1b.weights.resident_bytes == W1B


# --- single consumer GPU ------------------------------------------------------------------

def test_single_gpu_vllm_verdict_by_hand(llama8b):
    m = get_machine("rtx-4090")
    r = verdict.fit(F.Problem(llama8b, m, Settings(resolved_engine=engines.get("vllm"), context=8192)))
    budget = 24564 * MiB * 92 // 100  # nvidia-smi total x gpu_memory_utilization 0.92 (vllm/config/cache.py:215)
    used = W8B + KV8B * 8192 + A8B + VLLM_OVERHEAD
    (dev,) = r.devices
    assert dev.budget.budget_bytes == budget == 23_696_643_194
    assert dev.used_bytes == used == 19_439_296_512
    assert r.fits and r.headroom_bytes == budget - used == 4_257_346_682
    assert r.dominant["term"] == "weights" and r.dominant["role"] == "target"
    assert r.suggestions == ()
    # largest context, closed form: KV = 131072 x pad16(ctx) must fit in what is left
    left = budget - W8B - A8B - VLLM_OVERHEAD
    assert r.max_context == (left // KV8B) // 16 * 16 == 40_672
    assert r.max_context_limit == "memory"
    # largest batch at 8192 tokens: each sequence adds 1 GiB of KV (logits rows stay 256 up to batch 256)
    assert r.max_batch == left // (KV8B * 8192) == 4


def test_single_gpu_llamacpp_keeps_input_embedding_on_host(llama8b, llama1b):
    m = get_machine("rtx-4090")
    s = Settings(resolved_engine=engines.get("llama.cpp"), context=4096)
    (dev,) = verdict.fit(F.Problem(llama8b, m, s, draft=llama1b)).devices
    target, draft = dev.shares
    assert target.weights_bytes == W8B - EMB8B  # token_embd in host RAM, output.weight on the GPU
    assert draft.weights_bytes == W1B  # tied: the output head is a device copy of token_embd
    assert dev.host_bytes == EMB8B + EMB1B
    budget = 24564 * MiB - 1024 * MiB  # llama.cpp --fit margin 1 GiB per device
    assert dev.budget.budget_bytes == budget
    assert dev.overhead_bytes == 456 * MiB  # CUDA context, llama.cpp PR #15860


def test_max_context_search_matches_closed_form_without_padding(llama8b):
    # SGLang holds exactly batch x context tokens: max context = floor(left / kv per token)
    for gib in (20, 24, 40):
        m = custom_gpu(gib * GiB)
        r = verdict.fit(F.Problem(llama8b, m, Settings(resolved_engine=engines.get("sglang"), context=1024)))
        act = 4096 * (3 * 4096 + 32 * 128 + 8 * 256 + 3 * 14336) * 2 + LOGITS_256  # 4096-token chunk
        left = math.floor(gib * GiB * 0.9) - W8B - act - VLLM_OVERHEAD
        assert r.max_context == min(left // KV8B, 131_072)


@pytest.mark.parametrize(("engine", "pad"), [("sglang", 1), ("vllm", 16)])
def test_draft_lowers_max_context_by_its_weights_and_kv_share(llama8b, llama1b, engine, pad):
    m = custom_gpu(24 * GiB)
    s = Settings(resolved_engine=engines.get(engine), context=1024)
    a_t, a_d = model_ledger(llama8b, s).activation_bytes, model_ledger(llama1b, s, "draft").activation_bytes
    left = math.floor(24 * GiB * {"sglang": 0.9, "vllm": 0.92}[engine]) - W8B - a_t - VLLM_OVERHEAD
    alone = F.max_context(F.Problem(llama8b, m, s))[0]
    paired = F.max_context(F.Problem(llama8b, m, s, draft=llama1b))[0]
    assert alone == (left // KV8B) // pad * pad
    # the draft's weights (and its activations) leave the budget; its KV joins every token's cost
    assert paired == ((left - W1B - a_d) // (KV8B + KV1B)) // pad * pad
    assert paired < alone


# --- tensor parallel: Llama-3.1-70B on two A100-80GB --------------------------------------

def test_tp2_split_of_70b_by_hand(llama70b):
    per_layer = 2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192  # q,o + k,v + mlp + 2 norms
    emb = 128_256 * 8192
    params = 80 * per_layer + 8192 + 2 * emb  # + final norm, embedding, untied lm_head
    assert params == 70_553_706_496 and llama70b.weights.resident_bytes == 2 * params
    norms = (80 * 2 * 8192 + 8192) * 2  # replicated on every rank; vLLM shards the vocabulary too
    per_rank_w = (2 * params - norms) // 2 + norms
    per_rank_kv = 80 * 4 * (128 + 128) * 2 * 8192  # 8 kv heads / tp 2 = 4 per rank
    per_rank_act = act_vllm(8192, 64, 8, 128, 28672, tp=2)
    m = with_overrides(get_machine("a100-80gb"), n_devices=2)
    r = verdict.fit(F.Problem(llama70b, m, Settings(resolved_engine=engines.get("vllm"), context=8192), layout=F.Layout(tp=2)))
    assert len(r.devices) == 2
    budget = 81920 * MiB * 92 // 100  # gpu_memory_utilization 0.92 (vllm/config/cache.py:215)
    for d in r.devices:
        (share,) = d.shares
        assert share.weights_bytes == per_rank_w == 70_555_025_408
        assert share.kv_cache_bytes == per_rank_kv == 1_342_177_280
        assert share.activation_bytes == per_rank_act
        assert d.overhead_bytes == VLLM_OVERHEAD and d.comm_bytes == 1833 * MiB  # 3.58 GiB at TP2 (PR #10511)
        assert d.headroom_bytes == budget - (per_rank_w + per_rank_kv + per_rank_act + 2 * VLLM_OVERHEAD)
    assert r.fits and r.headroom_bytes == 79_027_398_246 - 76_170_412_032
    # the same model on one of those GPUs does not fit, and more GPUs is a suggested fix
    one = verdict.fit(F.Problem(llama70b, get_machine("a100-80gb"), Settings(resolved_engine=engines.get("vllm"), context=8192)))
    assert not one.fits
    gpus = [x for x in one.suggestions if x.kind == "gpus"]
    assert gpus and gpus[0].value == 2 and gpus[0].fits and gpus[0].headroom_bytes == r.headroom_bytes


def test_pp2_split_of_70b_by_hand(llama70b):
    per_layer = 2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192
    emb = 128_256 * 8192
    m = with_overrides(get_machine("a100-80gb"), n_devices=2)
    devs = F.evaluate(F.Problem(llama70b, m, Settings(resolved_engine=engines.get("vllm"), context=4096), layout=F.Layout(pp=2)), 4096, 1)
    first, last = (d.shares[0] for d in devs)
    assert first.weights_bytes == 2 * (emb + 40 * per_layer)  # embedding + layers 0-39
    assert last.weights_bytes == 2 * (40 * per_layer + 8192 + emb)  # layers 40-79 + final norm + lm_head
    assert first.kv_cache_bytes == last.kv_cache_bytes == 40 * 8 * 256 * 2 * 4096
    chunk_acts = 2048 * (3 * 8192 + 64 * 128 + 8 * 256 + 3 * 28672) * 2
    assert first.activation_bytes == chunk_acts and last.activation_bytes == chunk_acts + LOGITS_256
    assert all(d.comm_bytes == 0 for d in devs)  # no tensor-parallel buffers for a pipeline split


def test_kv_heads_replicate_when_tp_exceeds_them(llama8b):
    s = Settings(resolved_engine=engines.get("vllm"), context=4096)
    full = model_ledger(llama8b, s).kv_cache_bytes
    for tp, per_rank in ((2, full // 2), (8, full // 8), (16, full // 8)):  # max(8 // tp, 1) heads per rank
        m = custom_gpu(80 * GiB, tp)
        devs = F.evaluate(F.Problem(llama8b, m, s, layout=F.Layout(tp=tp)), 4096, 1)
        assert {d.shares[0].kv_cache_bytes for d in devs} == {per_rank}


def test_mla_latent_cache_is_replicated_across_tp(tmp_path):
    spec = load_spec(str(model_dir(tmp_path, "DeepSeek-V2-Lite")))
    s = Settings(resolved_engine=engines.get("vllm"), context=2048)
    devs = F.evaluate(F.Problem(spec, custom_gpu(80 * GiB, 2), s, layout=F.Layout(tp=2)), 2048, 1)
    full = model_ledger(spec, s).kv_cache_bytes
    assert full == 27 * (512 + 64) * 2 * 2048  # latent 512 + rope 64 per layer
    assert [d.shares[0].kv_cache_bytes for d in devs] == [full, full]


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "gemma-2-9b-it", "Qwen3-Next-80B-A3B-Thinking",
                                  "DeepSeek-V2-Lite", "Falcon-H1-0.5B"])
@pytest.mark.parametrize("engine", ["vllm", "llama.cpp", "transformers"])
def test_single_device_split_equals_the_ledger(tmp_path, name, engine):
    spec = load_spec(str(model_dir(tmp_path, name)))
    s = Settings(resolved_engine=engines.get(engine), context=6000, batch=2)
    (dev,) = F.evaluate(F.Problem(spec, get_machine("cpu-epyc-9654-384gb"), s), 6000, 2)
    row = model_ledger(spec, s)
    share = dev.shares[0]
    assert (share.weights_bytes, share.kv_cache_bytes, share.activation_bytes) == \
        (row.weights_bytes, row.kv_cache_bytes, row.activation_bytes)


def test_stage_ranges():
    assert stage_ranges(10, 4, engines.get("vllm")) == ((0, 2), (2, 5), (5, 8), (8, 10))  # get_pp_indices: [2, 3, 3, 2]
    assert stage_ranges(94, 3, engines.get("llama.cpp")) == ((0, 32), (32, 63), (63, 94))  # floor(il * 3 / 94)
    assert stage_ranges(80, 2, engines.get("transformers")) == ((0, 40), (40, 80))
    with pytest.raises(UsageError):
        stage_ranges(4, 5, engines.get("vllm"))


# --- Apple unified memory and CPU-only runs -------------------------------------------------

def test_apple_unified_memory_by_hand(llama8b):
    m = get_machine("m3-max-36gb")
    s = Settings(resolved_engine=engines.get("mlx"), context=8192)
    r = verdict.fit(F.Problem(llama8b, m, s))
    budget = math.floor(36 * GiB * 0.666667)  # Metal working set: 2/3 of 36 GiB
    act = 2048 * (3 * 4096 + 32 * 128 + 8 * 256 + 3 * 14336) * 2 + 128_256 * 4  # prefill step + 1 logits row
    (dev,) = r.devices
    assert dev.budget.budget_bytes == budget and dev.overhead_bytes == 0  # no CUDA context on Metal
    assert dev.used_bytes == W8B + KV8B * 8192 + act
    assert r.fits and r.headroom_bytes == budget - (W8B + KV8B * 8192 + act)
    # MLX's KVCache grows in steps of 256 tokens
    assert r.max_context == ((budget - W8B - act) // KV8B) // 256 * 256 == 71_936


def test_apple_default_working_set_fraction():
    from planner.fits.machine import apple_working_set_fraction

    assert apple_working_set_fraction(32 * GiB) == pytest.approx(2 / 3)
    assert apple_working_set_fraction(64 * GiB) == 0.75
    dev = Device(0, "Apple M2", "apple", 16 * GiB)
    assert device_budget(dev, engines.get("mlx")).budget_bytes == math.floor(16 * GiB * 2 / 3)  # 10922.67 MiB, as Metal says


def test_cpu_only_run_by_hand(llama8b):
    m = get_machine("cpu-ryzen-7-5800x-32gb")
    s = Settings(resolved_engine=engines.get("llama.cpp"), context=4096)
    r = verdict.fit(F.Problem(llama8b, m, s))
    budget = math.floor(32 * GiB * 0.85)  # RAM after OS headroom; no llama.cpp GPU margin on a CPU
    act = 512 * (128_256 + 4096) * 4  # compute buffer: f32 logits + final hidden of a 512-token ubatch
    (dev,) = r.devices
    assert dev.shares[0].weights_bytes == W8B and dev.host_bytes == 0  # RAM is the device
    assert dev.overhead_bytes == 0 and dev.budget.budget_bytes == budget == 29_205_777_612
    assert r.headroom_bytes == budget - (W8B + KV8B * 4096 + act) == 12_337_327_308
    assert r.max_context == ((budget - W8B - act) // KV8B) // 256 * 256 == 98_048  # context padded to 256


def test_detected_free_memory_caps_the_budget():
    dev = Device(0, "NVIDIA GeForce RTX 4090", "gpu", 24564 * MiB, free_bytes=10 * GiB)
    b = device_budget(dev, engines.get("vllm"))
    assert b.budget_bytes == 10 * GiB and "free memory" in b.source
    b = device_budget(replace(dev, free_bytes=None), engines.get("transformers"), utilization=0.5)
    assert b.budget_bytes == 24564 * MiB // 2 and b.fraction == 0.5
    with pytest.raises(UsageError):
        device_budget(dev, engines.get("vllm"), utilization=1.5)


# --- suggestions and layouts ----------------------------------------------------------------

def test_suggestions_each_recomputed(llama8b, llama1b, tmp_path):
    smaller = load_spec(str(model_dir(tmp_path, "SmolLM2-135M")))
    m = get_machine("rtx-3060-12gb")
    s = Settings(resolved_engine=engines.get("vllm"), context=8192)
    p = F.Problem(llama8b, m, s, draft=llama1b)
    r = verdict.fit(p, smaller_drafts=[smaller])
    assert not r.fits and r.max_context == 0
    by = {x.kind: x for x in r.suggestions}
    assert set(by) >= {"kv_dtype", "draft", "weights", "gpus", "no_draft"}
    assert by["no_draft"].headroom_bytes == verdict.fit(F.Problem(llama8b, m, s)).headroom_bytes
    fp8 = replace(s, kv_dtype="fp8")
    assert by["kv_dtype"].headroom_bytes == verdict.fit(F.Problem(llama8b, m, fp8, draft=llama1b)).headroom_bytes
    assert by["draft"].value == smaller.id
    assert by["draft"].headroom_bytes == verdict.fit(F.Problem(llama8b, m, s, draft=smaller)).headroom_bytes
    # the draft's weights leave, its KV share goes: exactly their difference in headroom
    diff = by["draft"].headroom_bytes - r.headroom_bytes
    small = model_ledger(smaller, s, "draft")
    big = model_ledger(llama1b, s, "draft")
    assert diff == big.total_bytes - small.total_bytes
    # fitting changes first, then least intrusive first
    flags = [x.fits for x in r.suggestions]
    assert flags == sorted(flags, reverse=True)


def test_layout_errors(llama8b, llama1b):
    m = get_machine("rtx-4090")
    with pytest.raises(UsageError):
        verdict.fit(F.Problem(llama8b, m, Settings(), layout=F.Layout(tp=2)))
    with pytest.raises(UsageError):
        verdict.fit(F.Problem(llama8b, m, Settings(), draft=llama1b, layout=F.Layout(draft_device=3)))
    with pytest.raises(UsageError):
        verdict.fit(F.Problem(llama8b, m, Settings(), layout=F.Layout(draft_device=0)))


def test_draft_on_its_own_device(llama8b, llama1b):
    m = get_machine("2x-rtx-3090")
    s = Settings(resolved_engine=engines.get("transformers"), context=4096)
    devs = F.evaluate(F.Problem(llama8b, m, s, draft=llama1b, layout=F.Layout(draft_device=1)), 4096, 1)
    assert [[x.role for x in d.shares] for d in devs] == [["target"], ["draft"]]
    assert devs[1].shares[0].weights_bytes == W1B
    assert devs[1].shares[0].kv_cache_bytes == KV1B * 4096


# --- CLI ------------------------------------------------------------------------------------


def test_cli_json_schema_and_exit_codes(tmp_path, capsys):
    t = str(model_dir(tmp_path, "Llama-3.1-8B"))
    d = str(model_dir(tmp_path, "Llama-3.2-1B-Instruct"))
    code, out, _ = run(["fit", t, "--draft", d, "--machine", "rtx-4090", "--engine", "vllm", "--context", "8k",
                        "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert {"fits", "headroom_bytes", "max_context", "max_batch", "devices", "suggestions", "ledger"} <= set(data)
    assert data["fits"] is True and data["suggestions"] == []
    (dev,) = data["devices"]
    assert {"name", "budget_bytes", "used_bytes", "headroom_bytes"} <= set(dev)
    # vLLM's 0.92 share, less the default 1 GiB safety margin (vLLM's own budget leaves none past its share)
    assert data["margin_bytes"] == 1024 * MiB
    assert dev["budget_bytes"] == 24564 * MiB * 92 // 100 - 1024 * MiB
    assert dev["used_bytes"] == W8B + W1B + (KV8B + KV1B) * 8192 + A8B + A1B + VLLM_OVERHEAD
    assert data["headroom_bytes"] == dev["budget_bytes"] - dev["used_bytes"]
    s = Settings(resolved_engine=engines.get("vllm"), context=8192)
    assert data["ledger"] == ledger_json(ledger(load_spec(t), s, load_spec(d)))

    code, out, _ = run(["fit", t, "--draft", d, "--machine", "rtx-3060-12gb", "--engine", "vllm", "--json"], capsys)
    data = json.loads(out)
    assert code == 1 and data["fits"] is False and data["suggestions"]
    assert all({"change", "headroom_bytes"} <= set(x) for x in data["suggestions"])

    code, _, err = run(["fit", t, "--machine", "no-such-gpu"], capsys)
    assert code == 2 and err.startswith("error: Cannot find machine 'no-such-gpu'") and err.count("\n") == 1
    code, _, err = run(["fit", t, "--machine", "rtx-4090", "--tp", "2"], capsys)
    assert code == 2 and "--gpus N" in err
    code, _, _ = run(["fit", t, "--gpu-memory", "lots"], capsys)
    assert code == 2


def test_cli_gpu_memory_and_gpus(tmp_path, capsys):
    t = str(model_dir(tmp_path, "Llama-3.1-8B"))
    code, out, _ = run(["fit", t, "--gpu-memory", "16GiB", "--gpus", "2", "--engine", "vllm", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["tp"] == 2 and len(data["devices"]) == 2
    assert {x["budget_bytes"] for x in data["devices"]} == {16 * GiB * 92 // 100 - 1024 * MiB}  # - the margin
    code, out, _ = run(["fit", t, "--machine", "2x-rtx-3090", "--engine", "llama.cpp", "--json"], capsys)
    data = json.loads(out)
    assert data["pp"] == 2 and data["tp"] == 1  # llama.cpp splits layers by default
    code, out, _ = run(["fit", t, "--machine", "m2-max-96gb", "--engine", "mlx", "--context", "32k"], capsys)
    assert code == 0 and "FITS" in out and "largest context" in out


def test_catalog_machine_never_imports_torch(tmp_path):
    t = str(model_dir(tmp_path, "Llama-3.1-8B"))
    code = ("import sys\nfrom planner.cli import main\n"
            f"try:\n    main(['fit', {t!r}, '--machine', 'rtx-4090', '--json'])\nexcept SystemExit as e:\n"
            "    assert e.code == 0, e.code\n"
            "assert 'torch' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr


def test_vision_tower_stays_on_the_first_stage(tmp_path):
    from planner.core.spec import WeightInventory

    spec = load_spec(str(model_dir(tmp_path, "Qwen3.5-35B-A3B")))
    vision = [t for t in spec.weights.tensors if t.group == "vision"]
    assert any(t.layer for t in vision)  # the tower numbers its own blocks from 0
    text = replace(spec, weights=WeightInventory(tuple(t for t in spec.weights.tensors if t.group != "vision"),
                                                 "header", spec.params_total, spec.params_active))
    s = Settings(resolved_engine=engines.get("vllm"))
    with_tower, _ = weight_split(spec, s, 1, 2, on_host_ok=True)
    without, _ = weight_split(text, s, 1, 2, on_host_ok=True)
    assert with_tower[0] - without[0] == sum(t.nbytes for t in vision) and with_tower[1] == without[1]
    assert sum(with_tower) == spec.weights.resident_bytes


def test_cli_margin_is_stated_and_settable(tmp_path, capsys):
    """fit leaves a safety margin on each device (#31 item 5): 1 GiB by default past an engine that leaves
    none, none extra past llama.cpp's own 1 GiB, and --margin sets it (0: the engine's budget to the byte)."""
    t = str(model_dir(tmp_path, "Llama-3.1-8B"))
    base = ["fit", t, "--machine", "rtx-4090", "--json"]
    got = {}
    for engine, extra in (("vllm", []), ("vllm", ["--margin", "0"]), ("vllm", ["--margin", "512MiB"]),
                          ("llama.cpp", [])):
        code, out, _ = run([*base, "--engine", engine, *extra], capsys)
        assert code == 0
        data = json.loads(out)
        got[(engine, *extra)] = (data["margin_bytes"], data["devices"][0]["budget_bytes"])
    share = 24564 * MiB * 92 // 100  # vLLM's share of a 4090, by hand
    assert got[("vllm",)] == (1024 * MiB, share - 1024 * MiB)
    assert got[("vllm", "--margin", "0")] == (0, share)
    assert got[("vllm", "--margin", "512MiB")] == (512 * MiB, share - 512 * MiB)
    assert got[("llama.cpp",)] == (0, 24564 * MiB - 1024 * MiB)  # llama.cpp's own fit margin, nothing added
    code, out, _ = run(["fit", t, "--machine", "rtx-4090", "--engine", "vllm"], capsys)
    assert code == 0 and "1.00 GiB safety margin (--margin)" in out and "past the 1.00 GiB safety margin" in out
