"""FP8 MoE checkpoints as DeepSeek-V3 / Qwen3 FP8 ship them (issue #30 part B): e4m3 weights and, per
expert and projection, an fp32 weight_scale_inv over [128 x 128] blocks (config.json quantization_config
{quant_method fp8, weight_block_size [128, 128]}, vLLM Fp8Config), sized from the config alone.
"""

from __future__ import annotations

from planner.core import quant, quant_checkpoint
from planner.core.spec import make_tensor
from planner.sources import load_spec

from .conftest import model_dir

FP8_BLOCK = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3", "weight_block_size": [128, 128]}


def test_fused_expert_scales_are_one_grid_per_projection():
    scheme = quant_checkpoint.from_quantization_config(FP8_BLOCK)
    assert scheme is not None
    # 4 experts, moe_intermediate 160, hidden 256: the checkpoint stores per expert gate_proj and up_proj
    # [160, 256] e4m3 each with a ceil(160/128) x ceil(256/128) = 2 x 2 fp32 grid, so the fused
    # gate_up [4, 320, 256] carries 4 x (2 + 2) x 2 scales, not 4 x ceil(320/128) x 2
    out = quant.apply([make_tensor("model.layers.1.mlp.experts.gate_up_proj", (4, 320, 256), "BF16", "experts")],
                      scheme)
    assert [(t.shape, t.dtype) for t in out] == [((4, 320, 256), "F8_E4M3"), ((4, 4, 2), "F32")]
    assert sum(t.nbytes for t in out) == 4 * 320 * 256 + 4 * 4 * 2 * 4


def test_deepseek_v3_fp8_moe_checkpoint_matches_its_files(tmp_path):
    # deepseek-ai/DeepSeek-V3 config.json (tests/fixtures/configs): 58 MoE layers x 256 experts, fp8 block 128.
    # Its 163 safetensors files hold 688,586,727,753 bytes (the creator repository's weight files as a public
    # artifact record gives them; ollama lists deepseek-v3.1 at the same size): tensors plus each file's JSON
    # header, so the tensors alone sit just below it
    s = load_spec(str(model_dir(tmp_path, "DeepSeek-V3")))
    files = 688_586_727_753
    assert 0 < files - s.checkpoint_bytes < 163 * 100_000  # under 100 kB of header per file
    by = {t.name: t for t in s.weights.tensors}
    # one MoE layer's experts: gate_up 256 x 4096 x 7168 e4m3 + 256 x (16 + 16) x 56 fp32 scales
    assert by["model.layers.3.mlp.experts.gate_up_proj.weight_scale_inv"].shape == (256, 32, 56)
    assert by["model.layers.3.mlp.experts.down_proj.weight_scale_inv"].shape == (256, 56, 16)
    assert s.confidence == "high"
