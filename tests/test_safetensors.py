"""Header-only reading of real safetensors layouts, and every way a header can be wrong."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from safetensors.numpy import save_file

from planner.core.errors import HeaderError
from planner.sources import load_spec
from planner.sources.safetensors import read_header

from .cli_run import run_cli
from .conftest import CONFIGS, model_dir
from .safetensors_util import llama_tensors, write_sharded, write_sparse


def test_llama31_8b_sparse_shards_exact(tmp_path):
    d = model_dir(tmp_path, "Llama-3.1-8B")
    cfg = json.loads((d / "config.json").read_text())
    total = write_sharded(d, llama_tensors(cfg), 4)
    assert total == 16_060_522_496
    spec = load_spec(str(d))
    assert spec.weights.resident_bytes == 16_060_522_496
    assert spec.weights.source == "header"
    assert spec.params_total == 8_030_261_248
    assert spec.provenance["weights"].startswith("header (4 safetensors")
    assert (d / "model-00001-of-00004.safetensors").stat().st_size > 1_000_000_000  # sparse, not written


def test_tied_lm_head_stored_is_resident_once(tmp_path):
    # Qwen3-0.6B: tie_word_embeddings true yet the checkpoint stores lm_head.weight (file > resident).
    d = model_dir(tmp_path, "Qwen3-0.6B")
    cfg = json.loads((CONFIGS / "Qwen3-0.6B.json").read_text())
    h, v = cfg["hidden_size"], cfg["vocab_size"]
    tensors = [("model.embed_tokens.weight", "BF16", (v, h)), ("lm_head.weight", "BF16", (v, h)),
               ("model.norm.weight", "BF16", (h,))]
    write_sparse(d / "model.safetensors", tensors)
    spec = load_spec(str(d))
    assert spec.weights.resident_bytes == v * h * 2 + h * 2
    assert spec.weights.excluded_bytes == v * h * 2
    assert any("lm_head stored" in n for n in spec.warnings)


def test_real_library_file_matches_numpy_sizes(tmp_path):
    arrays = {"model.layers.0.mlp.up_proj.weight": np.zeros((8, 16), np.float16),
              "model.layers.0.input_layernorm.weight": np.zeros((16,), np.float32),
              "model.embed_tokens.weight": np.zeros((32, 16), np.float16)}
    save_file(arrays, str(tmp_path / "x.safetensors"))
    got = {name: (dtype, shape) for name, dtype, shape in read_header(tmp_path / "x.safetensors")}
    assert got == {k: ({"float16": "F16", "float32": "F32"}[str(a.dtype)], a.shape) for k, a in arrays.items()}


def _raw(path, header_bytes: bytes, length: int | None = None, data: int = 0):
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(header_bytes) if length is None else length))
        fh.write(header_bytes)
        fh.write(b"\0" * data)


BAD_HEADERS = {
    "truncated": (b'{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', None, 0, "truncated"),
    "huge_length": (b"{}", 2**62, 0, "maximum"),
    "past_eof": (b"{}", 4096, 0, "truncated"),
    "not_json": (b"\xff\xfe garbage", None, 0, "Cannot"),
    "unknown_dtype": (b'{"a":{"dtype":"F13","shape":[1],"data_offsets":[0,2]}}', None, 2, "unknown dtype"),
    "size_mismatch": (b'{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}}', None, 8, "needs 16"),
    "overlap": (b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                b'"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', None, 12, "overlap"),
    "negative_shape": (b'{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}', None, 0, "invalid shape"),
    "short_file": (b"", None, 0, "too short"),
}


@pytest.mark.parametrize("case", list(BAD_HEADERS))
def test_bad_headers_raise_and_exit_2(case, tmp_path, capsys):
    body, length, data, fragment = BAD_HEADERS[case]
    d = model_dir(tmp_path, "SmolLM2-135M")
    f = d / "model.safetensors"
    if case == "short_file":
        f.write_bytes(b"\x01\x02")
    else:
        _raw(f, body, length, data)
    with pytest.raises(HeaderError) as e:
        load_spec(str(d))
    assert fragment in str(e.value)
    code, out, err = run_cli(["memory", str(d)], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err


def test_index_naming_missing_shard(tmp_path, capsys):
    d = model_dir(tmp_path, "SmolLM2-135M")
    write_sparse(d / "model-00001-of-00002.safetensors", [("model.norm.weight", "BF16", (576,))])
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        "model.norm.weight": "model-00001-of-00002.safetensors",
        "lm_head.weight": "model-00002-of-00002.safetensors"}}))
    code, _, err = run_cli(["memory", str(d)], capsys)
    assert code == 2 and "model-00002-of-00002.safetensors" in err and "missing" in err


def test_index_path_traversal_rejected(tmp_path):
    d = model_dir(tmp_path, "SmolLM2-135M")
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": "../../etc/x.safetensors"}}))
    with pytest.raises(HeaderError, match="invalid shard name"):
        load_spec(str(d))


def test_pickle_weights_never_opened(tmp_path):
    d = model_dir(tmp_path, "SmolLM2-135M")
    # A pickle that would create a file if it were ever unpickled.
    marker = tmp_path / "pwned"
    payload = (b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR.")
    (d / "pytorch_model.bin").write_bytes(payload)
    spec = load_spec(str(d))
    assert not marker.exists()
    assert spec.weights.source == "config"
    assert any("pickle" in w for w in spec.warnings)
