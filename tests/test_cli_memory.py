"""`planner memory` end to end: JSON schema, exit codes, one-line errors, no torch import."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .cli_run import run_cli as run
from .conftest import model_dir


def test_json_schema(tmp_path, capsys):
    t = model_dir(tmp_path, "Llama-3.1-8B")
    d = model_dir(tmp_path, "Llama-3.2-1B-Instruct")
    code, out, _ = run(["memory", str(t), "--draft", str(d), "--context", "8k", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert {"context", "batch", "engine", "models", "overhead_bytes", "total_bytes"} <= set(data)
    assert data["context"] == 8192
    roles = [m["role"] for m in data["models"]]
    assert roles == ["target", "draft"]
    for m in data["models"]:
        for key in ("id", "params_total", "params_active", "weights_bytes", "kv_bytes_per_token",
                    "kv_cache_bytes", "activation_bytes", "provenance"):
            assert key in m
        assert all(isinstance(m[k], int) for k in ("weights_bytes", "kv_cache_bytes", "activation_bytes"))
    t_, d_ = data["models"]
    assert t_["kv_cache_bytes"] == 131_072 * 8192 and d_["kv_cache_bytes"] == 32_768 * 8192
    assert data["total_bytes"] == sum(m["weights_bytes"] + m["kv_cache_bytes"] + m["activation_bytes"]
                                      for m in data["models"]) + data["overhead_bytes"]


def test_table_names_sources(tmp_path, capsys):
    code, out, _ = run(["memory", str(model_dir(tmp_path, "Qwen2.5-7B")), "--engine", "vllm"], capsys)
    assert code == 0
    assert "config shapes" in out and "vLLM non-torch memory" in out and "TOTAL" in out


BAD_CONFIGS = {
    "not_json": "{oops",
    "array": "[1, 2]",
    "wrong_type": json.dumps({"model_type": "llama", "hidden_size": "big", "num_hidden_layers": 2,
                              "num_attention_heads": 2, "vocab_size": 10}),
    "negative": json.dumps({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": -2,
                            "num_attention_heads": 2, "vocab_size": 10}),
    "implausible": json.dumps({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 10**9,
                               "num_attention_heads": 2, "vocab_size": 10}),
    "zero_heads": json.dumps({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
                              "num_attention_heads": 0, "vocab_size": 10}),
    "missing_key": json.dumps({"model_type": "llama", "hidden_size": 64}),
    "nan": '{"model_type": "llama", "hidden_size": NaN}',
    "unknown_arch": json.dumps({"model_type": "totally_new", "hidden_size": 64}),
    "no_model_type": json.dumps({"hidden_size": 64}),
}


@pytest.mark.parametrize("case", list(BAD_CONFIGS))
def test_bad_config_exit_2_one_line(case, tmp_path, capsys):
    d = tmp_path / case
    d.mkdir()
    (d / "config.json").write_text(BAD_CONFIGS[case])
    code, out, err = run(["memory", str(d), "--json"], capsys)
    assert code == 2 and out == ""
    assert err.startswith("error: Cannot") and err.count("\n") == 1, err
    assert str(d) in err or "config" in err


def test_unknown_arch_lists_supported(tmp_path, capsys):
    d = tmp_path / "x"
    d.mkdir()
    (d / "config.json").write_text(BAD_CONFIGS["unknown_arch"])
    _, _, err = run(["memory", str(d)], capsys)
    assert "totally_new" in err and "num_hidden_layers" in err and "qwen3_moe" in err


def test_missing_path_and_dir_without_config(tmp_path, capsys):
    code, _, err = run(["memory", str(tmp_path / "nope")], capsys)
    assert code == 2 and "Cannot find model" in err
    (tmp_path / "empty").mkdir()
    code, _, err = run(["memory", str(tmp_path / "empty")], capsys)
    assert code == 2 and "no config.json" in err


def test_bad_flags_exit_2(tmp_path, capsys):
    d = str(model_dir(tmp_path, "SmolLM2-135M"))
    for args in (["--context", "lots"], ["--kv-dtype", "q9"], ["--engine", "tgi"], ["--weights-dtype", "int3"],
                 ["--batch", "0"]):
        code, out, _ = run(["memory", d, *args], capsys)
        assert code == 2 and out == "", args


def test_memory_never_imports_torch(tmp_path):
    d = model_dir(tmp_path, "Qwen2.5-0.5B")
    code = ("import sys\nfrom planner.cli import main\n"
            "try:\n    main(['memory', sys.argv[1], '--draft', 'qwen2.5-7b', '--json'])\n"
            "except SystemExit as e:\n    assert e.code == 0, e.code\n"
            "heavy = [m for m in ('torch', 'transformers', 'tokenizers') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    r = subprocess.run([sys.executable, "-c", code, str(d)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_catalog_alias_resolves_offline(capsys):
    code, out, _ = run(["memory", "llama-3.1-8b", "--json"], capsys)
    assert code == 0
    m = json.loads(out)["models"][0]
    assert m["id"] == "meta-llama/Llama-3.1-8B" and m["weights_bytes"] == 16_060_522_496
    assert m["provenance"]["weights"].startswith("config shapes (catalog")


def test_memory_on_a_cpu_host_has_no_cuda_context(capsys, monkeypatch):
    monkeypatch.setenv("SPEC_PLANNER_HOST_KIND", "cpu")
    code, out, _ = run(["memory", "llama-3.1-8b", "--json"], capsys)
    d = json.loads(out)
    assert code == 0 and d["engine"] == "llama.cpp" and d["overhead_bytes"] == 0  # Metal/CPU default engine
    _, text, _ = run(["memory", "llama-3.1-8b"], capsys)
    assert "CUDA" not in text and "runtime overhead" not in text
    monkeypatch.setenv("SPEC_PLANNER_HOST_KIND", "gpu")  # a GPU host: vLLM and its non-torch memory
    _, out, _ = run(["memory", "llama-3.1-8b", "--json"], capsys)
    d = json.loads(out)
    assert d["engine"] == "vllm" and d["overhead_bytes"] == 1833 * 2**20
