"""MLX (mlx-lm) quantised checkpoints sized from config.json's `quantization` (issue #30 part B).

mlx-lm's quantize_model (mlx_lm/utils.py:818-889 @ d78bf58, cited in planner/core/quant_checkpoint.py)
quantises every Linear / Embedding whose input width the group divides, embeddings and routers included,
and writes {group_size, bits} (plus a per-path entry for a module sized otherwise) to `quantization` and
`quantization_config`. Each quantised [out, in] matrix stores (mx.quantize, affine): weight uint32
[out, in x bits / 32] + scales and biases [out, in / group] in the model dtype.
"""

from __future__ import annotations

from planner.core import quant, quant_checkpoint
from planner.core.spec import make_tensor
from planner.sources import load_spec

from .conftest import model_dir

MLX_4BIT = {"group_size": 64, "bits": 4}  # what `mlx_lm.convert -q` writes by default (affine 4-bit, g64)


def test_mlx_affine_layout_of_one_matrix():
    scheme = quant_checkpoint.from_quantization_config(MLX_4BIT)
    assert scheme is not None
    out = quant.apply([make_tensor("model.layers.0.mlp.down_proj.weight", (896, 4864), "BF16", "ffn")], scheme)
    # weight 896 x 4864/8 uint32 = 896 x 608 x 4 B; scales and biases 896 x 76 bf16 each
    assert {t.name: (t.shape, t.dtype) for t in out} == {
        "model.layers.0.mlp.down_proj.weight": ((896, 608), "U32"),
        "model.layers.0.mlp.down_proj.scales": ((896, 76), "BF16"),
        "model.layers.0.mlp.down_proj.biases": ((896, 76), "BF16")}
    assert sum(t.nbytes for t in out) == 896 * 608 * 4 + 2 * 896 * 76 * 2


def test_qwen25_05b_mlx_4bit_from_config(tmp_path):
    # Qwen/Qwen2.5-0.5B's config.json as mlx-community's 4-bit conversions save it (both keys, mlx-lm #957)
    s = load_spec(str(model_dir(tmp_path, "Qwen2.5-0.5B", quantization=MLX_4BIT, quantization_config=MLX_4BIT)))
    h, n, inter, v, kv = 896, 24, 4864, 151936, 2 * 64
    matrices = v * h + n * (2 * h * h + 2 * kv * h + 3 * inter * h)  # tied embedding (quantised too) + layers
    # 4-bit g64 with bf16 scales and biases: in/2 + 2 x 2 x in/64 bytes per row = 0.5625 B per weight
    quantised = matrices * 9 // 16
    rest = 2 * (n * (h + 2 * kv + 2 * h) + h)  # q/k/v biases, two norms per layer, final norm: bf16
    assert s.weights.resident_bytes == quantised + rest == 277_996_288
    assert s.confidence == "high"
    assert "mlx-4bit-g64" in s.provenance["weights"]


def test_mlx_per_path_entries_and_unsized_modes(tmp_path):
    qc = {**MLX_4BIT, "model.layers.0.mlp.down_proj": {"group_size": 64, "bits": 8},
          "model.layers.1.mlp.down_proj": False}
    base = load_spec(str(model_dir(tmp_path / "a", "Qwen2.5-0.5B", quantization=MLX_4BIT)))
    mixed = load_spec(str(model_dir(tmp_path / "b", "Qwen2.5-0.5B", quantization=qc)))
    h, inter = 896, 4864
    four = h * inter // 2 + 2 * h * (inter // 64) * 2
    eight = h * inter + 2 * h * (inter // 64) * 2  # 8 bits: in / 4 uint32 per row
    assert mixed.weights.resident_bytes - base.weights.resident_bytes == (eight - four) + (h * inter * 2 - four)
    # mxfp4 / nvfp4 modes are not sized: the figure says so (low), never silently bf16
    other = load_spec(str(model_dir(tmp_path / "c", "Qwen2.5-0.5B",
                                    quantization={"group_size": 32, "bits": 4, "mode": "mxfp4"})))
    assert other.confidence == "low"


def test_a_moegate_router_is_a_raw_parameter_left_in_the_model_dtype():
    # mlx-lm's DeepSeek/GLM-MoE/Nemotron-H routers are `MoEGate.weight = mx.zeros((n_routed_experts, hidden))`
    # (no to_quantized: nn.quantize skips it); Qwen3-MoE's `mlp.gate` is an nn.Linear and is quantised
    gate = make_tensor("model.layers.1.mlp.gate.weight", (64, 2048), "BF16", "other")
    raw = quant_checkpoint.from_quantization_config(MLX_4BIT, ("deepseek_v2",))
    linear = quant_checkpoint.from_quantization_config(MLX_4BIT, ("qwen3_moe",))
    assert raw is not None and linear is not None
    assert [(t.shape, t.dtype) for t in quant.apply([gate], raw)] == [((64, 2048), "BF16")]
    # 4-bit g64: 2048 / 8 uint32 + 32 bf16 scales + 32 bf16 biases per row
    assert sum(t.nbytes for t in quant.apply([gate], linear)) == 64 * (256 * 4 + 2 * 32 * 2)
    # only the router: the experts beside it are SwitchLinear (to_quantized) and stay 4-bit
    down = make_tensor("model.layers.1.mlp.experts.down_proj", (64, 2048, 1408), "BF16", "experts")
    assert next(t.dtype for t in quant.apply([down], raw)) == "U32"


def test_deepseek_v2_lite_mlx_gates_stay_bf16(tmp_path):
    # DeepSeek-V2-Lite: 27 layers, the first dense (first_k_dense_replace 1), 64 routed experts, hidden 2048.
    # Its 26 routers weigh as if the config listed each one unquantised (`false`), and against a 4-bit g64
    # router (1152 B per row) they add 26 x 64 x (2 x 2048 - 1152) bytes
    s = load_spec(str(model_dir(tmp_path / "a", "DeepSeek-V2-Lite", quantization=MLX_4BIT)))
    listed = {**MLX_4BIT, **{f"model.layers.{i}.mlp.gate": False for i in range(1, 27)}}
    same = load_spec(str(model_dir(tmp_path / "b", "DeepSeek-V2-Lite", quantization=listed)))
    assert s.weights.resident_bytes == same.weights.resident_bytes
    eights = {**MLX_4BIT, **{f"model.layers.{i}.mlp.gate": {"group_size": 64, "bits": 8} for i in range(1, 27)}}
    # an explicit entry cannot quantise what the loader never wraps in a quantisable module
    assert load_spec(str(model_dir(tmp_path / "c", "DeepSeek-V2-Lite", quantization=eights))).weights.resident_bytes \
        == s.weights.resident_bytes
    assert s.confidence == "high"
