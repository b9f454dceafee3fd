"""Per-module quantisation of pre-quantised checkpoints (issue #30): compressed-tensors and ModelOpt.

Each expected figure is worked by hand from the writer's layout (planner/core/quant_checkpoint.py cites
the lines): NVFP4 = in/2 bytes of e2m1 pairs + in/16 fp8 scales per row + fp32 scalars; MXFP4 = in/2 +
in/32 per row; fp8 per-channel = out x in + a 16-bit scale per row; `re:` ignore patterns by re.match.
"""

from __future__ import annotations

import json

from planner.core import quant, quant_checkpoint
from planner.core.spec import make_tensor
from planner.sources import load_spec

from .conftest import model_dir

NVFP4_GROUP = {"targets": ["Linear"], "format": "nvfp4-pack-quantized",
               # compressed-tensors quant_scheme.py preset NVFP4: weights and activations tensor_group g16
               "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
                           "symmetric": True, "dynamic": False},
               "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                     "group_size": 16, "symmetric": True, "dynamic": "local"}}


def _ct(*groups: dict, ignore: list | None = None, fmt: str = "") -> dict:
    return {"quant_method": "compressed-tensors", "format": fmt, "ignore": ignore or [],
            "config_groups": {f"group_{i}": g for i, g in enumerate(groups)}}


def _bytes(qc: dict, name: str, shape: tuple[int, ...], group: str = "attention", dtype: str = "BF16") -> int:
    scheme = quant_checkpoint.from_quantization_config(qc)
    assert scheme is not None
    return sum(t.nbytes for t in quant.apply([make_tensor(name, shape, dtype, group)], scheme))


def test_nvfp4_compressed_tensors_layout():
    # [4096, 4096]: packed 4096 x 2048 B + fp8 scales 4096 x 256 + weight_global_scale 4 B + input_global_scale 4 B
    got = _bytes(_ct(NVFP4_GROUP), "model.layers.0.self_attn.q_proj.weight", (4096, 4096))
    assert got == 4096 * 2048 + 4096 * 256 + 4 + 4 == 9_437_192


def test_nvfp4a16_has_no_input_scale_and_fused_experts_keep_their_expert_axis():
    w = {**NVFP4_GROUP}
    del w["input_activations"]
    # 8 experts x [2 x 768, 2048]: per expert 1536 x 1024 + 1536 x 128 + one 4-byte global scale
    got = _bytes(_ct(w), "model.layers.0.mlp.experts.gate_up_proj", (8, 1536, 2048), "experts")
    assert got == 8 * (1536 * 1024 + 1536 * 128 + 4)


def test_mxfp4_pack_quantized_layout():
    g = {"targets": ["Linear"], "format": "mxfp4-pack-quantized",
         "weights": {"num_bits": 4, "type": "float", "strategy": "group", "group_size": 32, "symmetric": True}}
    # 17 bytes per 32 weights, no global scale (strategy group): 2880 x (1440 + 90)
    assert _bytes(_ct(g), "model.layers.0.mlp.down_proj.weight", (2880, 2880), "ffn") == 2880 * (1440 + 90)


def test_fp8_channel_scale_is_in_the_model_dtype():
    g = {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel",
                                            "symmetric": True, "dynamic": False}}
    # e4m3 weight + a bf16 scale per output row (initialize.py: scale dtype = the observed dtype)
    assert _bytes(_ct(g, fmt="float-quantized"), "m.o_proj.weight", (1024, 4096)) == 1024 * 4096 + 1024 * 2


def test_fp8_block_static_input_scale():
    g = {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "block",
                                            "block_structure": [128, 128], "symmetric": True},
         "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False}}
    # ceil(1000/128) = 8 x ceil(4096/128) = 32 bf16 scales, + a bf16 input scale
    assert _bytes(_ct(g, fmt="float-quantized"), "m.o_proj.weight", (1000, 4096)) == 1000 * 4096 + 8 * 32 * 2 + 2


def test_re_ignore_patterns_keep_modules_unquantised():
    qc = _ct(NVFP4_GROUP, ignore=["lm_head", "re:.*self_attn.*", "re:.*shared_expert.*"])
    assert _bytes(qc, "model.layers.3.self_attn.q_proj.weight", (512, 256)) == 512 * 256 * 2
    assert _bytes(qc, "model.layers.3.mlp.shared_expert.up_proj.weight", (512, 256), "ffn") == 512 * 256 * 2
    assert _bytes(qc, "model.layers.3.mlp.up_proj.weight", (512, 256), "ffn") == 512 * 128 + 512 * 16 + 8
    # a malformed pattern matches nothing rather than failing
    assert _bytes(_ct(NVFP4_GROUP, ignore=["re:("]), "a.q_proj.weight", (16, 16)) == 16 * 8 + 16 + 8


def test_two_config_groups_named_targets_win_over_linear():
    fp8 = {"targets": ["re:.*self_attn.*"], "format": "float-quantized",
           "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True}}
    qc = _ct(NVFP4_GROUP, fp8)  # the regex group listed second still takes the attention modules
    assert _bytes(qc, "model.layers.0.self_attn.k_proj.weight", (256, 1024)) == 256 * 1024 + 256 * 2
    assert _bytes(qc, "model.layers.0.mlp.gate_proj.weight", (256, 1024), "ffn") == 256 * 512 + 256 * 64 + 8


def test_modelopt_nvfp4_from_hf_quant_config_json(tmp_path):
    d = model_dir(tmp_path, "Llama-3.2-1B-Instruct")
    (d / "hf_quant_config.json").write_text(json.dumps({
        "producer": {"name": "modelopt", "version": "0.29.0"},
        "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16,
                         "exclude_modules": ["lm_head", "model.layers.0.self_attn*"]}}))
    s = load_spec(str(d))
    by = {t.name: t for t in s.weights.tensors}
    q = "model.layers.1.self_attn.q_proj"  # Llama-3.2-1B: hidden 2048, q 2048 x 2048
    assert by[f"{q}.weight"].dtype == "U8" and by[f"{q}.weight"].shape == (2048, 1024)
    assert by[f"{q}.weight_scale"].shape == (2048, 128) and by[f"{q}.weight_scale"].dtype == "F8_E4M3"
    assert by[f"{q}.weight_scale_2"].nbytes == 4 and by[f"{q}.input_scale"].nbytes == 4
    assert by["model.layers.0.self_attn.q_proj.weight"].dtype == "BF16"  # excluded by the wildcard
    assert by["model.layers.0.mlp.up_proj.weight"].dtype == "U8"
    assert s.confidence == "high" and "modelopt-nvfp4" in s.provenance["weights"]


def test_modelopt_mixed_precision_per_layer_with_per_expert_names():
    qc = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "quantized_layers": {
        "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
        "model.layers.0.mlp.experts.0.gate_proj": {"quant_algo": "NVFP4", "group_size": 16},
        "model.layers.0.mlp.experts.0.up_proj": {"quant_algo": "NVFP4", "group_size": 16}}}
    # FP8: e4m3 weight + fp32 weight_scale + fp32 input_scale
    assert _bytes(qc, "model.layers.0.self_attn.q_proj.weight", (64, 128)) == 64 * 128 + 4 + 4
    # per-expert names stand for the fused gate_up tensor: 4 experts x (128 x 64 + 128 x 8 + 4 + 4)
    got = _bytes(qc, "model.layers.0.mlp.experts.gate_up_proj", (4, 128, 128), "experts")
    assert got == 4 * (128 * 64 + 128 * 8 + 8)
    # a layer not listed stays as stored
    assert _bytes(qc, "model.layers.0.self_attn.k_proj.weight", (64, 128)) == 64 * 128 * 2


def test_unknown_group_scheme_is_not_modelled():
    g = {"targets": ["Linear"], "weights": {"num_bits": 3, "type": "int", "strategy": "group", "group_size": 64}}
    assert quant_checkpoint.from_quantization_config(_ct(g, fmt="pack-quantized")) is None
    assert quant_checkpoint.from_quantization_config({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}) is None
