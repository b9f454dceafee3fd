"""The meta-device tensor inventory (issue #30): transformers' own structure, no weights, no remote code.

The tests that build a model need torch + transformers (the `real` extra, CI step 2) and are skipped with
that reason on a plain `.[test]` install; the refusals and the "only when needed" checks run everywhere.
Truths: the safetensors index `total_size` of real checkpoints (tests/fixtures/reference_models.json,
tests/fixtures/unseen/truth.json), and a hand count from GPT-J's modelling shapes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from planner import engines
from planner.core.errors import UnsupportedArchitecture, UsageError
from planner.fits.memory import Settings, kv_per_token
from planner.sources import load_spec
from planner.sources.meta_inventory import MetaRefusal, meta_inventory

FIXTURES = Path(__file__).parent / "fixtures"
REAL = pytest.mark.skipif(find_spec("torch") is None or find_spec("transformers") is None,
                          reason="the meta-device inventory needs torch + transformers (the `real` extra)")
VLLM = Settings(context=4096, resolved_engine=engines.get("vllm"))


def folder(tmp_path: Path, config: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    shutil.copy(config, d / "config.json")
    return d


@REAL
@pytest.mark.parametrize(("name", "config", "total_size"), [
    # index total_size of meta-llama/Llama-3.1-8B (reference_models.json: aiconfigurator + LLM-Prof copies)
    ("Llama-3.1-8B", FIXTURES / "configs" / "Llama-3.1-8B.json", 16_060_522_496),
    # index total_size of Qwen/Qwen3-30B-A3B: 128 experts in every layer (transformers fuses them per layer)
    ("Qwen3-30B-A3B", FIXTURES / "configs" / "Qwen3-30B-A3B.json", 61_064_245_248),
])
def test_meta_total_is_the_index_total_size(tmp_path, name, config, total_size):
    s = load_spec(str(folder(tmp_path, config, name)), inventory="meta")
    assert s.weights.source == "meta"
    assert "on the meta device" in s.provenance["weights"]
    assert s.checkpoint_bytes == total_size


@REAL
def test_a_vlm_wrapper_builds_with_its_vision_tower(tmp_path):
    """Qwen3-VL-30B-A3B: unseen truth 31,070,754,032 params x 2 B (text MoE + 27-block tower + deepstack
    merger, model-inspector report); transformers' Qwen3VLMoeForConditionalGeneration holds all of it."""
    src = FIXTURES / "unseen" / "models" / "Qwen3-VL-30B-A3B-Instruct" / "config.json"
    s = load_spec(str(folder(tmp_path, src, "Qwen3-VL-30B-A3B-Instruct")), inventory="meta")
    assert s.weights.source == "meta" and s.checkpoint_bytes == 62_141_508_064


@REAL
def test_an_architecture_the_formulas_cannot_read_gets_a_high_confidence_answer(tmp_path):
    """XGLM 1.7B (config: the facebook/xglm-1.7B config.json quoted verbatim in a fairseq -> HF conversion
    script, transformers 4.26.1) spells its sizes d_model / num_layers / attention_heads / ffn_dim: the
    formulas refuse it; transformers' XGLMConfig reads them.

    Hand count from transformers models/xglm/modeling_xglm.py shapes (d=2048, 24 layers, ffn 8192,
    vocab 256008, head tied to embed_tokens, sinusoidal positions: a buffer, no weights):
      per layer: q/k/v/out_proj 4(d^2 + d) = 16,785,408; self_attn_layer_norm 2d = 4,096;
                 fc1 8192 d + 8192 = 16,785,408; fc2 8192 d + d = 16,779,264; final_layer_norm 4,096
                                                                    -> 50,358,272 x 24 = 1,208,598,528
      embed_tokens 256008 d = 524,304,384; model.layer_norm 2d = 4,096
      total 1,732,907,008 params, bf16 assumed (no dtype key) -> 3,465,814,016 B
    KV per token: 24 layers x (K + V) 16 heads x 128 x 2 B = 196,608 (every head cached: MHA).
    """
    d = FIXTURES / "meta" / "xglm-1.7B"
    with pytest.raises(UnsupportedArchitecture):
        load_spec(str(d), inventory="analytic")
    s = load_spec(str(d), inventory="auto")
    assert s.weights.source == "meta" and s.params_total == 1_732_907_008
    assert s.weights.resident_bytes == 3_465_814_016
    assert kv_per_token(s, VLLM) == 196_608
    assert s.confidence == "high", s.assumptions  # its K/V projections confirm the plan's KV widths


def test_gpt_j_is_read_by_its_own_rule_and_agrees_with_the_meta_build(tmp_path):
    """GPT-J 6B (config: mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py key 'gpt_j' @79d603f0) spells
    its keys n_embd / n_layer / n_head; sources/arch/gptj.py reads them.

    Hand count from transformers models/gptj/modeling_gptj.py shapes (d=4096, 28 layers, n_inner None ->
    4d=16384, vocab 50400, untied head with a bias):
      per layer: ln_1 2d = 8,192; q/k/v/out_proj 4d^2 = 67,108,864; fc_in d*4d + 4d = 67,125,248;
                 fc_out 4d*d + d = 67,112,960                       -> 201,355,264 x 28 = 5,637,947,392
      wte 50400 d = 206,438,400; ln_f 2d = 8,192; lm_head 50400 d + 50400 = 206,488,800
      total 6,050,882,784 params, bf16 assumed (no dtype key) -> 12,101,765,568 B
    KV per token: 28 layers x (K + V) 16 heads x 256 x 2 B = 458,752 (every head cached: MHA).
    Saved by transformers 4.18, whose GPT-J kept its causal mask as a persistent buffer (attn.bias,
    [1, 1, 2048, 2048]): the checkpoint may store it, so the figure says low, naming why.
    """
    d = FIXTURES / "meta" / "gpt-j-6b"
    s = load_spec(str(d), inventory="analytic")
    assert s.weights.source == "config" and s.params_total == 6_050_882_784
    assert s.weights.resident_bytes == 12_101_765_568
    assert kv_per_token(s, VLLM) == 458_752
    assert s.confidence == "low" and any("attention.bias" in a for a in s.assumptions), s.assumptions
    if find_spec("transformers") is not None:
        m = load_spec(str(d), inventory="meta")
        assert m.weights.source == "meta" and m.params_total == s.params_total


@REAL
def test_a_draft_head_class_transformers_lacks_is_not_built_as_its_base_model(tmp_path):
    """The Llama-4 EAGLE-3 draft says model_type llama but architectures LlamaForCausalLMEagle3: building
    LlamaForCausalLM from it would count 40% too much (a full decoder); the worker refuses instead."""
    src = FIXTURES / "unseen" / "models" / "Llama-4-Scout-EAGLE3-draft" / "config.json"
    r = meta_inventory(json.loads(src.read_text()))
    assert isinstance(r, MetaRefusal) and r.status == "unknown" and "LlamaForCausalLMEagle3" in r.reason


def test_remote_code_is_refused_not_run():
    r = meta_inventory({"model_type": "llama", "auto_map": {"AutoModelForCausalLM": "modeling_x.X"}})
    assert isinstance(r, MetaRefusal) and r.status == "refused" and "auto_map" in r.reason


def test_a_refusal_is_one_assumption_line_and_the_formulas_answer(tmp_path):
    """openPangu ships remote code: under --inventory meta the formulas answer and the note says why not."""
    src = FIXTURES / "unseen" / "models" / "openPangu-Embedded-7B" / "config.json"
    d = folder(tmp_path, src, "openPangu-Embedded-7B")
    s = load_spec(str(d), inventory="meta")
    assert s.weights.source == "config" and s.confidence == "low"
    notes = [a for a in s.assumptions if a.startswith("meta-device inventory not built (refused)")]
    assert len(notes) == 1 and "\n" not in notes[0] and notes[0] in s.warnings


def test_an_unknown_mode_is_a_usage_error():
    with pytest.raises(UsageError, match="--inventory"):
        load_spec(str(FIXTURES / "meta" / "xglm-1.7B"), inventory="exact")


def test_memory_on_a_known_config_starts_no_meta_worker_and_imports_no_torch(tmp_path):
    """`planner memory DIR --json --inventory auto` on a config the formulas know: no worker, no torch or
    transformers in the process."""
    d = folder(tmp_path, FIXTURES / "configs" / "Llama-3.1-8B.json", "Llama-3.1-8B")
    code = ("import sys\nimport planner.sources.meta_inventory as mi\n"
            "def boom(*a, **k):\n    raise AssertionError('meta worker started')\n"
            "mi.meta_inventory = boom\nfrom planner.cli import main\n"
            "try:\n    main(['memory', sys.argv[1], '--json', '--inventory', 'auto'])\n"
            "except SystemExit as e:\n    assert e.code == 0, e.code\n"
            "heavy = [m for m in ('torch', 'transformers', 'accelerate') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    done = subprocess.run([sys.executable, "-c", code, str(d)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["models"][0]["provenance"]["weights"].startswith("config shapes")


@REAL
def test_the_cli_json_names_the_meta_source():
    """`planner memory DIR --json --inventory auto` on XGLM: the JSON says which source built the weights."""
    done = subprocess.run([sys.executable, "-m", "planner.cli", "memory", str(FIXTURES / "meta" / "xglm-1.7B"),
                           "--json", "--inventory", "auto"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    model = json.loads(done.stdout)["models"][0]
    assert "XGLMForCausalLM on the meta device" in model["provenance"]["weights"]
    assert model["confidence"] == "high"


@REAL
def test_the_class_a_config_names_is_built_not_a_narrower_auto_class(tmp_path):
    """A Llama 3.2 Vision config names MllamaForConditionalGeneration; AutoModelForCausalLM would build
    MllamaForCausalLM (text only) and miss the tower the checkpoint holds. The named class is built: the
    same 10,670,220,835 params the analytic rules count (tests/test_arch_more_families.py)."""
    cfg = {"model_type": "mllama", "architectures": ["MllamaForConditionalGeneration"], "torch_dtype": "bfloat16",
           "text_config": {"model_type": "mllama_text_model"},
           "vision_config": {"model_type": "mllama_vision_model", "image_size": 560}}
    d = tmp_path / "mllama"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    m = load_spec(str(d), inventory="meta")
    assert m.weights.source == "meta" and m.params_total == 10_670_220_835
    assert m.params_total == load_spec(str(d), inventory="analytic").params_total
