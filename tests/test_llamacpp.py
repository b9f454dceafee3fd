"""llama.cpp in the ledger: KV types, context padding, --parallel, the draft's -cd, the compute buffer.

Expected values are worked by hand from the published shapes (catalog configs) and llama.cpp's
rules (src/llama-context.cpp, src/llama-kv-cache*.cpp, tools/server/server-context.cpp), or
are published / measured llama.cpp log lines, never read back from the code under test:

* published CUDA logs: Qwen2.5-3B at n_ctx 4096, `CUDA0 compute buffer size = 300.75 MiB`
  (SciSharp/LLamaSharp issue #1099, llama.cpp build 4701); a Mistral-7B-class model (32 layers,
  8 KV heads, vocab 32000) with flash_attn = 0: 164.00 MiB at n_ctx 2048 and 2144.00 MiB at
  32768 (fedora-copr/logdetective PR #106);
* measured here with llama-cpp-python 0.3.36 (CPU build, n_ubatch 512, flash attention on,
  swa_full off): `sched_reserve: CPU compute buffer size = ... MiB` for zero-weight GGUFs with
  the listed shapes (script in docs/llamacpp.md) and for the two real test GGUFs. A CPU-only run
  keeps the input rows (u x hidden x 4 B) in the same buffer, a GPU run in its host buffer.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from planner import engines
from planner.engines import llamacpp
from planner.fits.memory import (
    Settings,
    kv_cache,
    kv_per_token,
    ledger,
    model_ledger,
    prefill_chunk,
    runs_swa,
)
from planner.sources import load_spec

from .cli_run import run_cli as run
from .gguf_dir import gguf_test_dir

MiB = 1 << 20
UBATCH = 512


def llamacpp_compute_bytes(spec, s: Settings, context: int, **kw) -> int:
    """llama.cpp's compute buffer for `spec` under settings `s` (the engine file's formula)."""
    return llamacpp.compute_bytes(spec, context, s.batch, prefill_chunk(s, context), runs_swa(spec, s), **kw)


def cpp(context: int, **kw) -> Settings:
    return Settings(resolved_engine=engines.get("llama.cpp"), context=context, **kw)


@pytest.fixture(scope="module")
def llama8b():
    return load_spec("meta-llama/Llama-3.1-8B-Instruct")


@pytest.fixture(scope="module")
def llama1b():
    return load_spec("meta-llama/Llama-3.2-1B-Instruct")


# --- KV cache: types, padding, --parallel, SWA --------------------------------------------------

def test_kv_types_are_ggml_blocks(llama8b):
    # per layer a K and a V row of 8 heads x 128 = 1024 elements, 32 layers
    assert kv_per_token(llama8b, cpp(4096)) == 32 * 2 * 1024 * 2 == 131_072  # f16 default
    assert kv_per_token(llama8b, cpp(4096, kv_dtype="q8_0")) == 32 * 2 * (1024 // 32) * 34 == 69_632
    assert kv_per_token(llama8b, cpp(4096, kv_dtype="q4_0")) == 32 * 2 * (1024 // 32) * 18 == 36_864
    assert kv_per_token(llama8b, cpp(4096, kv_dtype="q5_1")) == 32 * 2 * (1024 // 32) * 24 == 49_152


def test_parallel_sequences_share_one_padded_pool(llama8b):
    # -c 9000 -np 3 --kv-unified: one pool of GGML_PAD(9000, 256) = 36 x 256 = 9216 cells
    kv, state = kv_cache(llama8b, cpp(3000, batch=3), 3000)
    assert (kv, state) == (131_072 * 9216, 0)
    assert kv_cache(llama8b, cpp(1, batch=1), 1)[0] == 131_072 * 256  # never below one 256-cell page


def test_swa_cache_grows_with_parallel_sequences():
    g = load_spec("google/gemma-3-1b-it")  # 26 layers: 5 sliding (window 512) : 1 full -> layers 5, 11, 17, 23 full
    assert sum(1 for layer in g.layers if layer.attention == "full") == 4
    row = 2 * 256 * 2  # one KV head of 256, K + V, f16
    # full layers: pad(8192 x 2, 256) = 16384 cells; SWA: min(16384, pad(512 x 2 + 512, 256)) = 1536 cells
    assert kv_cache(g, cpp(8192, batch=2), 8192)[0] == 4 * 16384 * row + 22 * 1536 * row
    # q8_0: a 256-element row is 8 blocks of 34 B
    q8 = 2 * (256 // 32) * 34
    assert kv_cache(g, cpp(8192, batch=2, kv_dtype="q8_0"), 8192)[0] == 4 * 16384 * q8 + 22 * 1536 * q8


def test_draft_context_and_parallel_slots(llama8b, llama1b):
    # Llama-3.2-1B: 16 layers x 8 KV heads x 64 x (K + V) x 2 B = 32768 B per token
    assert kv_per_token(llama1b, cpp(4096)) == 32_768
    s = cpp(8192, batch=4, draft_context=2048)
    t, d = ledger(llama8b, s, llama1b).models
    assert t.kv_cache_bytes == 131_072 * 32_768  # 4 slots x 8192
    assert (d.context, d.kv_cache_bytes) == (2048, 32_768 * 8192)  # -cd 2048 for each of the 4 slots
    # -cd absent (0): llama-server gives the draft the target's context per slot
    d0 = model_ledger(llama1b, cpp(8192, batch=4), "draft")
    assert (d0.context, d0.kv_cache_bytes) == (8192, 32_768 * 32_768)


def test_launch_flags_for_parallel_slots_and_draft_context():
    x = engines.LaunchInput(target="t.gguf", draft="d.gguf", k=4, context=4096, batch=4, draft_context=2048,
                            kv_dtype="q8_0")
    out = engines.launch("llama.cpp", x)
    assert set(out) == {"command", "note"}  # one command: the pre-2026 spelling is gone
    cmd = out["command"]
    assert cmd.startswith("llama-server -m t.gguf -c 16384 -ngl 99 -np 4 --kv-unified -ctk q8_0 -ctv q8_0")
    assert " -md d.gguf -ngld 99 -ctkd q8_0 -ctvd q8_0 --spec-type draft-simple --spec-draft-n-max 4 " \
           "--spec-draft-n-min 0 --spec-draft-p-min 0.0" in cmd
    assert " -cd " not in cmd and "--draft-max" not in cmd and "--draft-min" not in cmd
    # current builds give the draft the target's context: the ledger's 2048 cannot be asked for
    assert "size the draft from the target's context" in out["note"] and "2048" in out["note"]
    one = engines.launch("llama.cpp", engines.LaunchInput(target="t.gguf", draft=None, k=1, context=4096))
    assert one == {"command": "llama-server -m t.gguf -c 4096 -ngl 99"}  # one slot: no -np


def test_launch_model_refs_gguf_repo_and_safetensors_placeholder():
    def cmd(target, draft=None, quant=None):
        return engines.launch("llama.cpp", engines.LaunchInput(target=target, draft=draft, k=3, context=4096,
                                                               weights_quant=quant))
    # a GGUF repo: -hf repo:QUANT, the quant the ledger sized (planner spelling q4_k -> file tag Q4_K_M)
    out = cmd("bartowski/Llama-3.2-3B-Instruct-GGUF", "bartowski/Llama-3.2-1B-Instruct-GGUF", "q4_k")
    assert out == {"command": "llama-server -hf bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M -c 4096 -ngl 99 "
                              "-hfd bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M -ngld 99 --spec-type draft-simple "
                              "--spec-draft-n-max 3 --spec-draft-n-min 0 --spec-draft-p-min 0.0"}
    # the caller names the quant: that repo is taken as a GGUF repo, with the quant given
    assert cmd("unsloth/Qwen3-8B:Q8_0")["command"].startswith("llama-server -hf unsloth/Qwen3-8B:Q8_0 ")
    # a safetensors repo: never -hf; a placeholder .gguf path sized as the ledger did, and a note
    out = cmd("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct")
    assert out["command"].startswith("llama-server -m Qwen2.5-7B-Instruct-F16.gguf -c 4096 -ngl 99 "
                                     "-md Qwen2.5-0.5B-Instruct-F16.gguf -ngld 99 --spec-type draft-simple")
    assert "-hf" not in out["command"]
    # the files are what the convert steps write (F16: convert_hf_to_gguf.py writes it directly)
    assert out["convert"] == ("python convert_hf_to_gguf.py --remote Qwen/Qwen2.5-7B-Instruct --outtype f16 "
                              "--outfile Qwen2.5-7B-Instruct-F16.gguf && python convert_hf_to_gguf.py --remote "
                              "Qwen/Qwen2.5-0.5B-Instruct --outtype f16 --outfile Qwen2.5-0.5B-Instruct-F16.gguf")
    assert out["note"].count("convert or download a GGUF: llama.cpp does not run safetensors repos") == 1
    q8 = cmd("./my-model", quant="q8_0")  # a local folder: converted from the folder, Q8_0 by the converter
    assert q8["convert"] == "python convert_hf_to_gguf.py ./my-model --outtype q8_0 --outfile my-model-Q8_0.gguf"
    assert q8["command"].startswith("llama-server -m my-model-Q8_0.gguf ")
    assert cmd("Qwen/Qwen2.5-7B-Instruct", quant="Q4_K_M")["command"].startswith(
        "llama-server -m Qwen2.5-7B-Instruct-Q4_K_M.gguf ")
    # a KV type llama.cpp has no cache type for is left out, and said so
    fp8 = engines.launch("llama.cpp", engines.LaunchInput(target="t.gguf", draft="d.gguf", k=2, context=512,
                                                          kv_dtype="fp8"))
    assert "-ctk" not in fp8["command"] and "not a llama.cpp cache type" in fp8["note"]


def test_cli_parallel_and_draft_context(capsys):
    code, out, _ = run(["memory", "llama-3.1-8b", "--draft", "llama-3.2-1b-instruct", "--engine", "llama.cpp",
                        "--parallel", "4", "-cd", "2k", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    t, d = data["models"]
    assert data["batch"] == 4 and data["engine"] == "llama.cpp"
    assert t["kv_cache_bytes"] == 131_072 * 4096 * 4
    assert (d["context"], d["kv_cache_bytes"]) == (2048, 32_768 * 2048 * 4)
    code, out, _ = run(["fit", "llama-3.1-8b", "--draft", "llama-3.2-1b-instruct", "--engine", "llama.cpp",
                        "--machine", "rtx-4090", "--parallel", "2", "--draft-context", "1024", "--json"], capsys)
    fit = json.loads(out)
    assert code == 0 and fit["batch"] == 2
    draft = fit["devices"][0]["models"][1]
    assert draft["kv_cache_bytes"] == 32_768 * 2048  # pad(1024 x 2, 256) cells


# --- compute buffer ---------------------------------------------------------------------------

def test_compute_buffer_matches_published_cuda_logs():
    qwen = load_spec("Qwen/Qwen2.5-3B-Instruct")
    # the output stage: 512 rows of f32 logits + the final normed hidden state
    assert llamacpp_compute_bytes(qwen, cpp(4096), 4096) == 512 * (151_936 + 2048) * 4 == round(300.75 * MiB)
    mistral = load_spec("mistralai/Mistral-7B-v0.1")  # llama.cpp runs its window as full attention
    no_fa = [llamacpp_compute_bytes(mistral, cpp(c), c, flash_attn=False) for c in (2048, 32768)]
    assert no_fa == [164 * MiB, 2144 * MiB]
    # with flash attention the K*Q scores are never materialised: only the f16 mask grows with context
    fa = [llamacpp_compute_bytes(mistral, cpp(c), c) for c in (2048, 32768)]
    assert fa[1] - fa[0] == (32768 - 2048) * UBATCH * 2


def _shrunk(name: str, layers: int, vocab: int, ffn: int | None = None):
    spec = load_spec(name)
    kept = spec.layers[:layers]
    if ffn:
        kept = tuple(replace(layer, ffn_width=ffn) for layer in kept)
    return replace(spec, layers=tuple(kept), vocab=vocab)


# (catalog shapes, layers kept, vocab, FFN override, n_ctx, measured CPU compute buffer MiB)
MEASURED_CPU = [
    ("meta-llama/Llama-3.1-8B-Instruct", 2, 1024, None, 2048, 118.0137),
    ("meta-llama/Llama-3.1-8B-Instruct", 2, 1024, None, 32768, 148.0137),
    ("meta-llama/Llama-3.1-8B-Instruct", 2, 1024, None, 131072, 244.0137),
    ("meta-llama/Llama-3.1-8B-Instruct", 2, 1024, 28672, 2048, 202.0137),
    ("meta-llama/Llama-3.1-70B-Instruct", 2, 1024, None, 2048, 234.0137),
    ("mistralai/Mistral-7B-v0.1", 2, 32000, None, 2048, 118.0137),
    ("Qwen/Qwen2.5-3B-Instruct", 1, 151936, None, 4096, 304.7520),
    ("google/gemma-3-270m", 6, 1024, None, 4096, 22.7715),
    ("google/gemma-3-270m", 6, 1024, None, 65536, 82.7715),
    ("google/gemma-3-4b-it", 6, 1024, None, 4096, 84.5215),
    ("google/gemma-3-4b-it", 6, 1024, None, 65536, 144.5215),
    ("Qwen/Qwen3-30B-A3B", 2, 1024, None, 4096, 92.0137),
    ("Qwen/Qwen3-30B-A3B", 2, 1024, None, 32768, 120.0137),
]


@pytest.mark.parametrize(("name", "layers", "vocab", "ffn", "ctx", "measured"), MEASURED_CPU)
def test_compute_buffer_matches_measured_cpu_buffers(name, layers, vocab, ffn, ctx, measured):
    spec = _shrunk(name, layers, vocab, ffn)
    est = llamacpp_compute_bytes(spec, cpp(ctx), ctx) + UBATCH * spec.hidden * 4  # CPU: input rows too
    assert abs(est / MiB - measured) / measured < 0.04


def test_compute_buffer_of_the_real_test_ggufs_measured():
    # llama-cpp-python 0.3.36, CPU, n_ctx 4096: 98.2520 MiB (SmolLM2) and 514.5020 MiB (Gemma 3 270M)
    for name, measured in (("SmolLM2-135M-Instruct.Q4_1.gguf", 98.2520), ("gemma-3-270m-q4_k_m.gguf", 514.5020)):
        path = gguf_test_dir() / name
        if not path.exists():
            pytest.skip(f"{path} not found: run 'python scripts/fetch_ggufs.py'")
        spec = load_spec(str(path))
        est = llamacpp_compute_bytes(spec, cpp(4096), 4096) + UBATCH * spec.hidden * 4
        assert abs(est / MiB - measured) < 0.01


def test_compute_buffer_is_the_ledger_activations_and_leaves_pipeline_stages_without_logits(llama8b):
    act = model_ledger(llama8b, cpp(8192)).activation_bytes
    assert act == 512 * (128_256 + 4096) * 4 == round(258.5 * MiB)  # logits stage dominates an 8B
    # 131072 cells: FFN stage 512 x (3 x 14336 + 3 x 4096) x 4 + f16 mask 131072 x 512 x 2 = 236 MiB < 258.5
    assert model_ledger(llama8b, cpp(131072)).activation_bytes == act
    # a pipeline stage without the output layer (vocab 0) keeps only the layer stage
    head_less = replace(llama8b, vocab=0)
    assert llamacpp_compute_bytes(head_less, cpp(8192), 8192) == 512 * (3 * 14336 + 3 * 4096) * 4 + 8192 * 512 * 2


def test_compute_buffer_and_kv_against_a_live_llama_cpp():
    """llama.cpp's own log lines for the real GGUFs (CPU build): compute and KV buffers."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install spec-planner[llamacpp])")
    from planner.probe.llamacpp import llama_log, load

    for name in ("SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"):
        path = gguf_test_dir() / name
        if not path.exists():
            pytest.skip(f"{path} not found: run 'python scripts/fetch_ggufs.py'")
        spec = load_spec(str(path))
        with load(str(path), context=4096, gpu=False, threads=1):
            lines = llama_log()
        begin = max(i for i, x in enumerate(lines) if "loaded meta data" in x)  # this load's lines only
        log = "\n".join(lines[begin:])
        compute = float(re.findall(r"CPU compute buffer size =\s*([\d.]+) MiB", log)[-1])
        kv = sum(float(x) for x in re.findall(r"CPU KV buffer size =\s*([\d.]+) MiB", log))  # full + SWA caches
        est = llamacpp_compute_bytes(spec, cpp(4096), 4096) + UBATCH * spec.hidden * 4
        assert abs(est / MiB - compute) < 0.01
        assert kv * MiB == kv_cache(spec, cpp(4096), 4096)[0]
