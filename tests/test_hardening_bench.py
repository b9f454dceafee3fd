"""`bench` and `probe` on hostile model folders: refused in one line before anything big is built.

Reproduces issue #19: a header-only safetensors claiming 139 GB of weights was loaded by `bench` (no
memory check), and `probe` crashed inside SDPA when num_key_value_heads > num_attention_heads.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="bench and probe need torch (extra 'probe')")
transformers = pytest.importorskip("transformers", reason="bench and probe load transformers models")

from planner.bench.models import weights_bytes  # noqa: E402

from .test_bench_errors import BENCH, PROBE, _tiny_llama, one_error_line  # noqa: E402


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bench-hostile")
    good = _tiny_llama(root / "good")
    huge = root / "huge"
    shutil.copytree(good, huge)
    cfg = json.loads((huge / "config.json").read_text())
    cfg.update(hidden_size=8192, intermediate_size=28672, num_hidden_layers=40, num_attention_heads=64,
               num_key_value_heads=8)
    (huge / "config.json").write_text(json.dumps(cfg))
    h, i, v = 8192, 28672, cfg["vocab_size"]
    shapes = {"model.embed_tokens.weight": [v, h], "lm_head.weight": [v, h], "model.norm.weight": [h]}
    for n in range(40):
        shapes.update({f"model.layers.{n}.self_attn.q_proj.weight": [h, h],
                       f"model.layers.{n}.self_attn.k_proj.weight": [1024, h],
                       f"model.layers.{n}.self_attn.v_proj.weight": [1024, h],
                       f"model.layers.{n}.self_attn.o_proj.weight": [h, h],
                       f"model.layers.{n}.mlp.gate_proj.weight": [i, h], f"model.layers.{n}.mlp.up_proj.weight": [i, h],
                       f"model.layers.{n}.mlp.down_proj.weight": [h, i],
                       f"model.layers.{n}.input_layernorm.weight": [h],
                       f"model.layers.{n}.post_attention_layernorm.weight": [h]})
    header, off = {}, 0
    for name, shape in shapes.items():
        size = 4 * shape[0] * (shape[1] if len(shape) > 1 else 1)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + size]}
        off += size
    blob = json.dumps(header).encode()
    with open(huge / "model.safetensors", "wb") as fh:  # sparse: the header and a claimed 139 GB of zeros
        fh.write(struct.pack("<Q", len(blob)) + blob)
        fh.truncate(8 + len(blob) + off)
    kv = root / "kv-over-heads"
    shutil.copytree(good, kv)
    cfg = json.loads((kv / "config.json").read_text())
    cfg["num_key_value_heads"] = 2 * cfg["num_attention_heads"]
    (kv / "config.json").write_text(json.dumps(cfg))
    return {"good": good, "huge": huge, "kv": kv, "huge_bytes": off}


def test_bench_checks_memory_before_loading_weights(folders, capsys):
    assert weights_bytes(folders["huge"], "F32") == folders["huge_bytes"]  # numel x 4 from the header
    assert weights_bytes(folders["huge"], "BF16") == folders["huge_bytes"] // 2
    line = one_error_line(capsys, ["bench", str(folders["huge"]), "--draft", str(folders["good"]), *BENCH])
    assert f"{folders['huge_bytes'] + weights_bytes(folders['good'], 'F32'):,} bytes in F32" in line
    assert "more than the" in line and "free" in line


def test_probe_refuses_more_kv_heads_than_query_heads(folders, capsys):
    line = one_error_line(capsys, ["probe", str(folders["kv"]), *PROBE])
    assert "4 query heads and 8 KV heads" in line and "multiple of num_key_value_heads" in line
