"""`planner bench` and `planner probe` input errors: one `error:` line on stderr and exit 2, never a traceback.

Each case is a broken input a user can hand over: a folder without a tokenizer, a tokenizer that
does not parse, a truncated or garbage safetensors file, a GGUF draft that is not one (or one
transformers cannot load), a path that does not exist, and a --threads count the machine cannot run
(torch.set_num_threads(100000) used to crash the probe with a segmentation fault).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="bench and probe need torch (extra 'probe')")
transformers = pytest.importorskip("transformers", reason="bench and probe load transformers models")

from gguf import GGUFValueType, GGUFWriter  # noqa: E402

from planner.cli import main  # noqa: E402

from .conftest import FIXTURES  # noqa: E402
from .gguf_dir import gguf_test_dir  # noqa: E402

TOKENIZER = FIXTURES / "tokenizers" / "all-MiniLM-L6-v2"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
BENCH = ["--k", "2", "--tokens", "4", "--max-prompts", "1", "--repeats", "1"]
PROBE = ["--max-k", "2", "--repeats", "1", "--budget-s", "20", "--context", "64", "--json"]


def _tiny_llama(d: Path) -> Path:
    cfg = transformers.LlamaConfig(vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(cfg).eval().float().save_pretrained(d, safe_serialization=True)
    for name in TOKENIZER_FILES:
        shutil.copy(TOKENIZER / name, d / name)
    return d


def _gguf(path: Path, arch: str) -> Path:
    """A GGUF file with a valid header (gguf-py's writer) for an architecture transformers does not know."""
    w = GGUFWriter(str(path), arch)
    w.add_key_value(f"{arch}.block_count", 1, GGUFValueType.UINT32)
    w.add_tensor("token_embd.weight", np.zeros((8, 4), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """A good tiny model and one broken copy of it per case (built once: saving a model takes a second)."""
    root = tmp_path_factory.mktemp("bench-errors")
    good = _tiny_llama(root / "good")

    def variant(name: str, edit) -> Path:
        d = root / name
        shutil.copytree(good, d)
        edit(d)
        return d

    weights = good / "model.safetensors"
    out = {"good": good}
    out["no-tokenizer"] = variant("no-tokenizer", lambda d: [(d / n).unlink() for n in TOKENIZER_FILES])
    out["bad-tokenizer-json"] = variant("bad-tokenizer-json", lambda d: (d / "tokenizer.json").write_text("{not json"))
    out["bad-tokenizer-keys"] = variant("bad-tokenizer-keys", lambda d: (d / "tokenizer.json").write_text(
        '{"version": "1.0", "model": {"type": "Nope"}}'))
    out["truncated-weights"] = variant("truncated-weights", lambda d: (d / weights.name).write_bytes(
        weights.read_bytes()[: weights.stat().st_size // 2]))
    out["garbage-header"] = variant("garbage-header", lambda d: (d / weights.name).write_bytes(
        (8).to_bytes(8, "little") + b"{garbage"))
    (root / "not-a.gguf").write_bytes(os.urandom(64) + b"not a gguf file")
    (root / "truncated.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
    out["not-a.gguf"], out["truncated.gguf"] = root / "not-a.gguf", root / "truncated.gguf"
    out["unknown-arch.gguf"] = _gguf(root / "unknown-arch.gguf", "nosucharch")
    out["missing.gguf"] = root / "missing.gguf"
    return out


def one_error_line(capsys, argv: list[str]) -> str:
    """Run the CLI; assert exit 2 and exactly one `error:` line on stderr; return that line."""
    capsys.readouterr()
    threads = torch.get_num_threads()
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert e.value.code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert torch.get_num_threads() == threads  # a failed run leaves torch's thread count as it was
    return lines[0]


@pytest.mark.parametrize("target, draft, expected", [
    ("no-tokenizer", "good", "has no tokenizer files"),
    ("good", "no-tokenizer", "has no tokenizer files"),
    ("bad-tokenizer-json", "good", "JSONDecodeError"),
    ("bad-tokenizer-keys", "good", "Cannot load the tokenizer"),
    ("truncated-weights", "good", "the file is truncated"),
    ("good", "garbage-header", "invalid JSON"),
    ("good", "not-a.gguf", "bad magic"),
    ("good", "truncated.gguf", "too short for a GGUF file"),
    ("good", "unknown-arch.gguf", "architecture nosucharch is not supported"),
    ("good", "missing.gguf", "no such file or folder"),
])
def test_bench_bad_model_input(models, capsys, target, draft, expected):
    line = one_error_line(capsys, ["bench", str(models[target]), "--draft", str(models[draft]), *BENCH])
    assert expected in line


@pytest.mark.parametrize("extra, expected", [
    (["--threads", "100000"], "Cannot use --threads 100000 (expected 1.."),
    (["--threads", "0"], "Cannot use --threads 0"),
    (["--threads", "2", "--clock", "thread"], "--threads"),
    (["--k", "99"], "Cannot use --k 99"),
])
def test_bench_bad_flag(models, capsys, extra, expected):
    good = str(models["good"])
    base = list(BENCH)
    if extra[0] in base:  # a one-value option given twice is refused (#34): replace BENCH's own --k
        del base[base.index(extra[0]):base.index(extra[0]) + 2]
    assert expected in one_error_line(capsys, ["bench", good, "--draft", good, *base, *extra])


@pytest.mark.parametrize("target, draft, real, expected", [
    ("no-tokenizer", "good", True, "has no tokenizer files"),
    ("bad-tokenizer-json", "good", True, "JSONDecodeError"),
    ("truncated-weights", "good", True, "the file is truncated"),
    ("truncated-weights", "good", False, "the file is truncated"),
    ("good", "not-a.gguf", False, "bad magic"),
    ("good", "truncated.gguf", False, "too short for a GGUF file"),
])
def test_probe_bad_model_input(models, capsys, target, draft, real, expected):
    argv = ["probe", str(models[target]), "--draft", str(models[draft]), *PROBE, *(["--real"] if real else [])]
    assert expected in one_error_line(capsys, argv)


@pytest.mark.parametrize("threads", ["100000", "0", "-1"])
def test_probe_threads_outside_the_cpu_count(models, capsys, threads):
    good = str(models["good"])
    line = one_error_line(capsys, ["probe", good, "--draft", good, *PROBE, "--threads", threads])
    assert f"Cannot use --threads {threads} (expected 1..{os.cpu_count()}" in line


@pytest.mark.slow
def test_bench_real_gguf_draft_of_another_tokenizer(models, capsys):
    """A real GGUF draft: transformers' de-quantising progress bar stays off stderr; the mismatch is one line."""
    draft = gguf_test_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not draft.is_file():
        pytest.skip("real GGUF files absent: python scripts/fetch_ggufs.py")
    line = one_error_line(capsys, ["bench", str(models["good"]), "--draft", str(draft), *BENCH])
    assert "encodes prompt 0" in line


def test_bench_folders_without_tokenizer_run_on_token_id_prompts(models, capsys, tmp_path):
    prompts = tmp_path / "ids.json"
    prompts.write_text('{"prompts": [{"kind": "code", "ids": [101, 2023, 2003, 1037, 3231]}]}')
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["bench", str(models["no-tokenizer"]), "--draft", str(models["no-tokenizer"]), *BENCH,
              "--prompts", str(prompts), "--json"])
    out = capsys.readouterr().out
    assert e.value.code in (0, 1)
    d = json.loads(out)
    assert d["k"] == 2 and d["greedy_identical"] is True  # the same model drafts for itself


def test_bench_token_id_outside_the_vocabulary(models, capsys, tmp_path):
    prompts = tmp_path / "ids.json"
    prompts.write_text('{"prompts": [{"ids": [5, 30522]}]}')  # the tiny models have 30522 ids: 0..30521
    line = one_error_line(capsys, ["bench", str(models["no-tokenizer"]), "--draft", str(models["good"]), *BENCH,
                                   "--prompts", str(prompts)])
    assert "token id 30522 is outside the models' vocabulary" in line
