"""`planner memory | pair | fit | recommend | probe` on GGUF files, end to end.

Two kinds of file: the real test GGUFs (SmolLM2-135M-Instruct Q4_1, Gemma 3 270M Q4_K_M;
`python scripts/fetch_ggufs.py`, skipped with that instruction when absent), and tiny GGUFs
written here with gguf-py's GGUFWriter for the cases that need no real file. Expected values
are worked by hand from the files' shapes and llama.cpp's rules (ggml block sizes, GGML_PAD to
256 cells, the input embedding kept in host RAM, common_speculative_are_compatible).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from .cli_run import run_cli as run
from .gguf_dir import gguf_test_dir
from .test_gguf import ARR, F32, STR, lm_kv, tok_kv, write_gguf


def real(name: str) -> str:
    path = gguf_test_dir() / name
    if not path.exists():
        pytest.skip(f"{path} not found: run 'python scripts/fetch_ggufs.py' (or set SPEC_PLANNER_GGUF_DIR)")
    return str(path)


@pytest.fixture
def smollm() -> str:
    return real("SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.fixture
def gemma() -> str:
    return real("gemma-3-270m-q4_k_m.gguf")


# token_embd is Q8_0 in both files (34 B per 32 weights) and both tie the output head to it
SMOLLM_EMBD = 49_152 * 576 // 32 * 34  # 30,081,024 B
GEMMA_EMBD = 262_144 * 640 // 32 * 34  # 178,257,920 B


# --- tiny GGUFs ----------------------------------------------------------------------------------

def tiny_gguf(path: Path, *, model: str = "llama", hidden: int = 128, layers: int = 2, heads: int = 2,
              kv_heads: int = 1, ff: int = 256, n_normal: int = 253, name: str = "tiny") -> str:
    """A llama-architecture GGUF small enough to write in a test and run in llama.cpp (zero weights).

    SPM vocabulary ("llama"): <unk> <s> </s>, the 256 byte tokens, then n_normal plain tokens;
    BPE ("gpt2") files get the same strings (the planner reads them; llama.cpp would want merges).
    """
    head = hidden // heads
    tokens = ["<unk>", "<s>", "</s>", *[f"<0x{b:02X}>" for b in range(256)], *[f"t{i}" for i in range(n_normal)]]
    types = [2, 3, 3, *[6] * 256, *[1] * n_normal]
    vocab = len(tokens)
    kv = [("general.name", name, STR), *lm_kv("llama", layers=layers, hidden=hidden, heads=heads,
                                              kv_heads=kv_heads, ctx=2048, ff=ff, rope__dimension_count=head),
          ("llama.attention.layer_norm_rms_epsilon", 1e-5, F32),
          *tok_kv(model, tokens, types=types, bos_token_id=1, eos_token_id=2),
          ("tokenizer.ggml.scores", [0.0] * vocab, ARR, F32)]
    tensors = [("token_embd.weight", "F32", (vocab, hidden)), ("output_norm.weight", "F32", (hidden,)),
               ("output.weight", "F32", (vocab, hidden))]
    for il in range(layers):
        p = f"blk.{il}."
        tensors += [(p + "attn_norm.weight", "F32", (hidden,)), (p + "attn_q.weight", "F32", (heads * head, hidden)),
                    (p + "attn_k.weight", "F32", (kv_heads * head, hidden)),
                    (p + "attn_v.weight", "F32", (kv_heads * head, hidden)),
                    (p + "attn_output.weight", "F32", (hidden, heads * head)), (p + "ffn_norm.weight", "F32", (hidden,)),
                    (p + "ffn_gate.weight", "F32", (ff, hidden)), (p + "ffn_up.weight", "F32", (ff, hidden)),
                    (p + "ffn_down.weight", "F32", (hidden, ff))]
    return str(write_gguf(path, "llama", kv, tensors))


@pytest.fixture
def tiny_pair(tmp_path) -> tuple[str, str]:
    """A 4-layer target and a 2-layer draft sharing one SPM vocabulary."""
    return (tiny_gguf(tmp_path / "target.gguf", layers=4, hidden=256, heads=4, kv_heads=2, ff=512, name="tiny-t"),
            tiny_gguf(tmp_path / "draft.gguf", name="tiny-d"))


def test_memory_of_a_gguf_defaults_to_llama_cpp(tiny_pair, capsys):
    t, _ = tiny_pair
    code, out, _ = run(["memory", t, "--context", "1000", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["engine"] == "llama.cpp"
    (m,) = data["models"]
    # 4 layers x K + V rows of 2 heads x 64 x f16; 1000 tokens padded to 1024 cells
    assert m["kv_bytes_per_token"] == 4 * 2 * 2 * 64 * 2 == 2048
    assert m["kv_cache_bytes"] == 2048 * 1024
    vocab = 3 + 256 + 253
    # F32 stored, run as stored: per layer 2 norms, q and o (256 x 256), k and v (128 x 256), 3 FFN (512 x 256)
    per_layer = (2 * 256 + 2 * 256 * 256 + 2 * 128 * 256 + 3 * 512 * 256) * 4
    assert m["weights_bytes"] == 4 * per_layer + 2 * vocab * 256 * 4 + 256 * 4 == 10_494_976
    code, out, _ = run(["memory", t, "--engine", "transformers", "--json"], capsys)
    assert json.loads(out)["engine"] == "transformers"  # an explicit engine is kept


def test_recommend_gguf_pair_gives_llama_server_flags(tiny_pair, capsys):
    t, d = tiny_pair
    code, out, _ = run(["recommend", t, "--candidates", d, "--machine", "rtx-4090", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["engine"] == "llama.cpp"  # auto: a .gguf target runs on llama.cpp
    assert data["plans"] and all(p["compatible"] for p in data["plans"])
    for p in data["plans"]:
        argv = shlex.split(p["launch"]["command"])
        assert argv[:3] == ["llama-server", "-m", t] and argv[argv.index("-md") + 1] == d
        assert "-cd" not in argv and argv[argv.index("--spec-draft-n-max") + 1] == str(p["k"])
        assert argv[argv.index("--spec-type") + 1] == "draft-simple"


def test_recommend_gguf_target_takes_gguf_candidates_only(tiny_pair, capsys):
    t, _ = tiny_pair
    code, out, _ = run(["recommend", t, "--machine", "rtx-4090", "--json"], capsys)
    assert code == 0 and {p["method"] for p in json.loads(out)["plans"]} == {"ngram"}  # no draft model: GGUF only
    code, out, _ = run(["recommend", t, "--machine", "rtx-4090", "--method", "draft_model", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["plans"] == [] and data["recommendation"]["draft"] is None
    assert any("--candidates a.gguf" in n for n in data["notes"])
    assert data["recommendation"]["launch"]["command"] == f"llama-server -m {shlex.quote(t)} -c 4096 -ngl 99"


def test_vocab_type_mismatch_is_named(tmp_path, capsys):
    spm = tiny_gguf(tmp_path / "spm.gguf", name="spm")
    bpe = tiny_gguf(tmp_path / "bpe.gguf", model="gpt2", name="bpe")
    code, out, _ = run(["pair", spm, bpe, "--engine", "llama.cpp", "--json"], capsys)
    v = json.loads(out)["engines"]["llama.cpp"]
    assert code == 1 and not v["compatible"] and v["failed_rule"] == "vocab_type"


# --- the real test GGUFs -------------------------------------------------------------------------

def test_real_memory_auto_engine_and_exact_bytes(smollm, capsys):
    code, out, _ = run(["memory", smollm, "--context", "4096", "--json"], capsys)
    data = json.loads(out)
    (m,) = data["models"]
    assert code == 0 and data["engine"] == "llama.cpp"
    assert m["weights_bytes"] == 96_576_768  # every tensor of the file (docs/gguf.md)
    assert m["kv_bytes_per_token"] == 30 * 2 * 3 * 64 * 2 == 23_040  # 30 layers, 3 KV heads of 64, f16
    assert m["kv_cache_bytes"] == 23_040 * 4096
    assert m["activation_bytes"] == 512 * (49_152 + 576) * 4  # logits + final hidden of a 512-token ubatch


def test_real_pair_smollm_itself_ok_gemma_refused_by_vocab_type(smollm, gemma, capsys):
    code, out, _ = run(["pair", smollm, smollm, "--engine", "llama.cpp", "--json"], capsys)
    assert code == 0 and json.loads(out)["engines"]["llama.cpp"]["compatible"]
    code, out, _ = run(["pair", smollm, gemma, "--engine", "llama.cpp", "--json"], capsys)
    v = json.loads(out)["engines"]["llama.cpp"]
    assert code == 1 and v["failed_rule"] == "vocab_type" and "BPE" in v["detail"] and "SPM" in v["detail"]


def test_real_fit_keeps_input_embeddings_on_the_host(smollm, gemma, capsys):
    code, out, _ = run(["fit", gemma, "--draft", smollm, "--machine", "rtx-4090", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["engine"] == "llama.cpp" and data["fits"]
    (dev,) = data["devices"]
    # both tie their output head to token_embd: the input copy stays in RAM, the GPU holds the head's copy
    assert dev["host_bytes"] == GEMMA_EMBD + SMOLLM_EMBD == 208_338_944
    t, d = dev["models"]
    assert (t["weights_bytes"], d["weights_bytes"]) == (246_587_904, 96_576_768)
    # Gemma's 262k-token logits dominate: 512 x (262144 + 640) x 4 B, more than its weights
    assert t["activation_bytes"] == 512 * (262_144 + 640) * 4 > t["weights_bytes"]
    assert data["dominant"]["term"] == "activations" and data["dominant"]["role"] == "target"


def test_real_recommend_smollm_self_draft_and_gemma_refused(smollm, gemma, capsys):
    code, out, _ = run(["recommend", smollm, "--candidates", f"{smollm},{gemma}", "--machine", "rtx-4090",
                        "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["engine"] == "llama.cpp"
    assert data["tokenizer_family"] == "smollm2"  # matched to the catalog by token count and special ids
    by_draft = {}
    for p in data["plans"]:
        by_draft.setdefault(Path(p["draft_ref"]).name, []).append(p)
    same, other = by_draft[Path(smollm).name], by_draft[Path(gemma).name]
    assert all(p["compatible"] for p in same)
    assert all(not p["compatible"] and "vocab_type" in p["reasons"][0] for p in other)
    argv = shlex.split(same[0]["launch"]["command"])
    assert argv[argv.index("-m") + 1] == smollm and argv[argv.index("-md") + 1] == smollm


def test_real_probe_llamacpp_backend(smollm, tmp_path, capsys):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install spec-planner[llamacpp])")
    out_file = tmp_path / "profile.json"
    code, out, _ = run(["probe", smollm, "--backend", "llamacpp", "--device", "cpu", "--context", "256",
                        "--max-k", "7", "--threads", "1", "--clock", "thread", "--repeats", "3",
                        "--out", str(out_file), "--json"], capsys)
    data = json.loads(out)
    t = data["target"]
    assert code == 0 and data["backend"] == "llama.cpp (cpu)" and data["dtype"] == "Q4_1"
    assert t["method"] == "llamacpp" and len(t["verify_s"]) == 8 and all(x > 0 for x in t["verify_s"])
    # quantised CPU kernels: 8 tokens cost clearly more than one (measured 3-5x here)
    assert t["verify_s"][7] / t["verify_s"][0] > 1.5
    assert json.loads(out_file.read_text())["target"]["verify_s"] == t["verify_s"]


def test_probe_llamacpp_on_a_tiny_gguf(tmp_path):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install spec-planner[llamacpp])")
    from planner.probe.llamacpp import run_llamacpp
    from planner.probe.settings import ProbeSettings
    from planner.sources import load_spec
    from planner.speed.profile_file import load_profile, profile_json, save_profile

    t, d = tiny_gguf(tmp_path / "t.gguf", name="tiny-t"), tiny_gguf(tmp_path / "d.gguf", layers=1, name="tiny-d")
    st = ProbeSettings(device="cpu", max_k=3, context=64, repeats=2, warmup=1, threads=1)
    prof = run_llamacpp(t, load_spec(t), d, load_spec(d), st)
    assert len(prof.target.verify_s) == 4 and all(x > 0 for x in prof.target.verify_s)
    assert prof.draft is not None and prof.draft.step_s > 0 and prof.overhead_s > 0
    assert set(prof.overhead_parts) == {"sampling_comparison_s", "target_rollback_s", "draft_rollback_s"}
    assert prof.versions["llama-cpp-python"]
    save_profile(prof, tmp_path / "p.json")
    assert profile_json(load_profile(tmp_path / "p.json")) == profile_json(prof)


def test_probe_llamacpp_refuses_non_gguf(tmp_path):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install spec-planner[llamacpp])")
    from planner.core.errors import UsageError
    from planner.probe.llamacpp import run_llamacpp
    from planner.probe.settings import ProbeSettings
    from planner.sources import load_spec

    spec = load_spec("llama-3.2-1b-instruct")
    with pytest.raises(UsageError, match=r"not a local \.gguf file"):
        run_llamacpp(str(tmp_path / "model.safetensors"), spec, None, None, ProbeSettings(device="cpu"))


def test_missing_llama_cpp_is_a_clear_error(monkeypatch):
    import builtins

    from planner.core.errors import LlamaCppUnavailable, PlannerError
    from planner.probe import llamacpp

    real_import = builtins.__import__

    def no_llama(name, *args, **kwargs):
        if name == "llama_cpp":
            raise ImportError("No module named 'llama_cpp'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_llama)
    with pytest.raises(LlamaCppUnavailable) as e:
        llamacpp.require_llama_cpp()
    assert isinstance(e.value, PlannerError) and "pip install spec-planner[llamacpp]" in str(e.value)
