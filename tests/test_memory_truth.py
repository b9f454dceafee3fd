"""Issue #16 beyond the unseen set: confidence levels, NaN/Infinity configs, Mistral-format folders,
MTP layers read from headers, and `planner check` refusing estimates unless allowed."""

from __future__ import annotations

import json

from planner import engines
from planner.fits.memory import Settings, kv_per_token, model_ledger
from planner.sources import load_spec

from .cli_run import run_cli
from .conftest import CONFIGS, model_dir
from .safetensors_util import llama_tensors, write_sparse


def test_confidence_exact_with_headers_high_from_config(tmp_path):
    d = model_dir(tmp_path, "Llama-3.1-8B")
    assert load_spec(str(d)).confidence == "high"
    cfg = json.loads((d / "config.json").read_text())
    write_sparse(d / "model.safetensors", llama_tensors(cfg))
    s = load_spec(str(d))
    assert s.confidence == "exact" and s.weights.source == "header"


def test_unknown_structural_key_makes_it_low(tmp_path):
    # a real layout key nothing reads (Mixtral's experts under a llama model_type) must not pass silently
    d = model_dir(tmp_path, "Llama-3.1-8B", n_routed_experts=64)
    s = load_spec(str(d))
    assert s.confidence == "low"
    assert any("n_routed_experts" in a for a in s.assumptions)


def test_nemotron_h_with_infinity_parses_and_sizes_the_same(tmp_path):
    # the real Nemotron-H configs carry "time_step_limit": [0.0, Infinity] (Python's json reads it)
    plain = model_dir(tmp_path / "a", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    d = tmp_path / "b"
    d.mkdir()
    text = (plain / "config.json").read_text()
    (d / "config.json").write_text(text[:-1].rstrip().rstrip("}") + ', "time_step_limit": [0.0, Infinity]}')
    a, b = load_spec(str(plain)), load_spec(str(d))
    s = Settings(context=8192, resolved_engine=engines.get("vllm"))
    assert b.weights.resident_bytes == a.weights.resident_bytes
    assert kv_per_token(b, s) == kv_per_token(a, s) > 0


def test_infinity_in_a_size_key_is_still_refused(tmp_path, capsys):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text('{"model_type": "llama", "hidden_size": Infinity, "num_hidden_layers": 2, '
                                   '"num_attention_heads": 2, "vocab_size": 64}')
    code, _, err = run_cli(["memory", str(d)], capsys)
    assert code == 2 and "'hidden_size' must be an integer" in err


def test_mistral_format_folder(tmp_path):
    # Mistral-7B-v0.3 params.json (mistral-inference layout); weights from consolidated.safetensors
    params = {"dim": 4096, "n_layers": 32, "head_dim": 128, "hidden_dim": 14336, "n_heads": 32, "n_kv_heads": 8,
              "norm_eps": 1e-05, "vocab_size": 32768, "rope_theta": 1000000.0}
    d = tmp_path / "Mistral-7B-v0.3"
    d.mkdir()
    (d / "params.json").write_text(json.dumps(params))
    h, n, kv, ff, v = 4096, 32, 1024, 14336, 32768
    tensors = [("tok_embeddings.weight", "BF16", (v, h)), ("norm.weight", "BF16", (h,)), ("output.weight", "BF16", (v, h))]
    for i in range(n):
        p = f"layers.{i}"
        tensors += [(f"{p}.attention.wq.weight", "BF16", (h, h)), (f"{p}.attention.wk.weight", "BF16", (kv, h)),
                    (f"{p}.attention.wv.weight", "BF16", (kv, h)), (f"{p}.attention.wo.weight", "BF16", (h, h)),
                    (f"{p}.feed_forward.w1.weight", "BF16", (ff, h)), (f"{p}.feed_forward.w2.weight", "BF16", (h, ff)),
                    (f"{p}.feed_forward.w3.weight", "BF16", (ff, h)), (f"{p}.attention_norm.weight", "BF16", (h,)),
                    (f"{p}.ffn_norm.weight", "BF16", (h,))]
    data = write_sparse(d / "consolidated.safetensors", tensors)
    s = load_spec(str(d))
    assert s.weights.resident_bytes == data == 7_248_023_552 * 2  # Mistral-7B-v0.3: 7,248,023,552 params
    assert s.confidence == "exact" and s.model_type == "mistral"
    assert kv_per_token(s, Settings(resolved_engine=engines.get("vllm"))) == n * 2 * kv * 2


def test_mtp_layer_read_from_headers_on_its_own_row(tmp_path):
    # a MiMo-style checkpoint: model.mtp_layers.0.* beside the decoder, counted apart, exact
    d = model_dir(tmp_path, "Llama-3.2-1B-Instruct")
    cfg = json.loads((d / "config.json").read_text())
    h = cfg["hidden_size"]
    mtp = [("model.mtp_layers.0.input_proj.weight", "BF16", (h, 2 * h)),
           ("model.mtp_layers.0.token_layernorm.weight", "BF16", (h,))]
    write_sparse(d / "model.safetensors", llama_tensors(cfg) + mtp)
    s = load_spec(str(d))
    assert s.mtp is not None and s.mtp.source == "header" and s.mtp.layers == 1
    assert s.mtp.nbytes == (2 * h * h + h) * 2
    led = model_ledger(s, Settings(resolved_engine=engines.get("vllm")))
    v = cfg["vocab_size"]
    assert s.stored_extra_bytes == v * h * 2  # llama_tensors stores the tied lm_head too
    assert led.mtp_bytes == s.mtp.nbytes
    assert led.checkpoint_bytes == led.weights_bytes + s.mtp.nbytes + v * h * 2


def _policy(tmp_path, target, allow):
    p = tmp_path / "planner.toml"
    p.write_text(f'[[deployment]]\nname = "x"\ntarget = "{target}"\ngpu_memory = "200GiB"\ngpus = 1\n'
                 f'engine = "vllm"\ncontext = 4096\n' + ("allow_estimates = true\n" if allow else ""))
    return p


def test_check_refuses_a_fit_resting_on_low_confidence(tmp_path, capsys):
    d = model_dir(tmp_path, "Llama-3.1-8B", model_type="not_a_known_type")
    assert load_spec(str(d)).confidence == "low"
    code, out, _ = run_cli(["check", "--config", str(_policy(tmp_path, d, allow=False)), "--json"], capsys)
    assert code == 1
    res = next(r for r in json.loads(out)["results"] if r["requirement"] == "fits")
    assert res["status"] == "fail" and "allow_estimates" in res["message"]
    code, out, _ = run_cli(["check", "--config", str(_policy(tmp_path, d, allow=True)), "--json"], capsys)
    assert code == 0


def test_memory_table_shows_confidence_and_mtp_rows(capsys):
    code, out, _ = run_cli(["memory", "deepseek-v3", "--engine", "vllm"], capsys)
    assert code == 0
    assert "confidence" in out and "MTP layers (stored)" in out
    code, out, _ = run_cli(["memory", str(CONFIGS.parent / "unseen/models/openPangu-Embedded-7B")], capsys)
    assert "low" in out.split("confidence", 1)[1].splitlines()[0]


def test_compressed_tensors_pack_quantized_layout(tmp_path):
    # llm-compressor W4A16 g128 (RedHatAI *-quantized.w4a16 configs): int32 packs 8 weights per row
    qc = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
          "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
              "num_bits": 4, "type": "int", "symmetric": True, "group_size": 128, "strategy": "group"}}}}
    s = load_spec(str(model_dir(tmp_path, "Llama-3.1-8B", quantization_config=qc)))
    by = {t.name: t for t in s.weights.tensors}
    q = "model.layers.0.self_attn.q_proj"
    assert by[f"{q}.weight_packed"].shape == (4096, 4096 * 4 // 32) and by[f"{q}.weight_packed"].dtype == "I32"
    assert by[f"{q}.weight_scale"].shape == (4096, 4096 // 128) and by[f"{q}.weight_scale"].dtype == "BF16"
    assert by["lm_head.weight"].dtype == "BF16" and s.confidence == "high"


def test_unmodelled_quantization_config_is_low(tmp_path):
    s = load_spec(str(model_dir(tmp_path, "Llama-3.1-8B", quantization_config={"quant_method": "hqq"})))
    assert s.confidence == "low" and any("'hqq' not modelled" in a for a in s.assumptions)


def test_headers_make_a_tower_guess_moot(tmp_path):
    # an approximated vision tower makes config-only weights a guess; with headers the weights are exact
    cfg = json.loads((CONFIGS / "Llama-3.2-1B-Instruct.json").read_text())
    d = model_dir(tmp_path, "Llama-3.2-1B-Instruct", vision_config={"model_type": "some_new_vit", "hidden_size": 64,
                                                                     "num_hidden_layers": 2})
    assert load_spec(str(d)).confidence == "low"
    write_sparse(d / "model.safetensors", llama_tensors(cfg))
    assert load_spec(str(d)).confidence == "exact"
