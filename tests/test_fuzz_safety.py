"""Never execute model code, never lose a file.

- Pickled weights (.bin, .pt, .pth, .pkl, .ckpt), remote-code modules named by `auto_map` and chat
  templates written to run code are placed next to a valid config, locally and in the Hugging Face
  cache: every command that reads the folder succeeds from the config, and no payload ever runs
  (each would create a marker file). The Hub side is in tests/test_fuzz_hub.py (never requested).
- Outputs: `--out` never overwrites an input (a file, or a file inside an input model folder), and
  an interrupted write leaves the previous file whole.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from planner.core.atomic import atomic_write
from planner.core.errors import UsageError
from planner.sources import load_spec

from .conftest import CONFIGS
from .fuzz.harness import run_cli, run_planner
from .fuzz.tokenizer_inputs import TOKENIZERS

PICKLES = ("pytorch_model.bin", "model.pt", "consolidated.pth", "optimizer.pkl", "last.ckpt", "training_args.bin")


def booby_trapped(d: Path, marks: Path) -> list[Path]:
    """A SmolLM2 folder whose every executable part would create a file under `marks` if run."""
    d.mkdir(parents=True, exist_ok=True)
    marks.mkdir(exist_ok=True)
    cfg = json.loads((CONFIGS / "SmolLM2-135M.json").read_text())
    cfg["auto_map"] = {"AutoConfig": "configuration_evil.EvilConfig", "AutoModelForCausalLM": "modeling_evil.Evil"}
    (d / "config.json").write_text(json.dumps(cfg))
    out = []
    for name in PICKLES:  # pickle opcodes: import os.system, call it with "touch <marker>"
        m = marks / f"pickle-{name}"
        (d / name).write_bytes(b"cos\nsystem\n(S'touch " + str(m).encode() + b"'\ntR.")
        out.append(m)
    for mod in ("modeling_evil", "configuration_evil", "tokenization_evil"):
        m = marks / f"import-{mod}"
        (d / f"{mod}.py").write_text(f"import pathlib\npathlib.Path({str(m)!r}).touch()\n")
        out.append(m)
    m = marks / "template"
    ssti = "{{ cycler.__init__.__globals__.os.system('touch " + str(m) + "') }}"
    (d / "tokenizer.json").write_text(json.dumps(TOKENIZERS["bpe"]))
    (d / "tokenizer_config.json").write_text(json.dumps({
        "chat_template": ssti, "bos_token": "<s>", "eos_token": "</s>", "tokenizer_class": "LlamaTokenizer",
        "auto_map": {"AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]}}))
    (d / "chat_template.jinja").write_text(ssti)
    out.append(m)
    return out


def test_local_folder_payloads_never_run(tmp_path):
    d = tmp_path / "evil"
    marks = booby_trapped(d, tmp_path / "marks")
    spec = load_spec(str(d))
    assert spec.weights.source == "config" and any("pickle" in w for w in spec.warnings)
    assert spec.tokenizer is not None and spec.tokenizer.has_chat_template  # hashed, not rendered
    for args in (["memory", str(d), "--json"], ["pair", str(d), str(d), "--json"],
                 ["fit", str(d), "--machine", "rtx-4090", "--json"]):
        r = run_cli(args, [d])
        assert r.code in (0, 1), (args, r.err)
    assert not [m for m in marks if m.exists()]
    assert not [m for m in sys.modules if m.endswith("_evil")]


def test_hf_cache_payloads_never_run(tmp_path):
    cache = tmp_path / "hub"
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / "models--acme--evil"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    marks = booby_trapped(repo / "snapshots" / commit, tmp_path / "marks")
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    mem, pair = run_planner([["memory", "acme/evil", "--json"], ["pair", "acme/evil", "acme/evil", "--json"]], env)
    assert mem["code"] == 0, mem
    m = json.loads(mem["out"])["models"][0]
    assert m["id"] == "acme/evil" and m["provenance"]["weights"].startswith("config shapes (config.json (HF cache)")
    assert pair["code"] in (0, 1), pair
    assert not [p for p in marks if p.exists()]


def test_out_never_overwrites_an_input(tmp_path):
    bench = tmp_path / "bench.csv"
    bench.write_text("n,seconds\n1,0.02\n2,0.021\n")
    before = bench.read_bytes()
    r = run_cli(["probe", "--import", str(bench), "--out", str(bench), "--json"], [bench])
    assert r.code == 2 and "also an input" in r.err and bench.read_bytes() == before
    model = tmp_path / "model"
    model.mkdir()
    cfg = model / "config.json"
    cfg.write_text((CONFIGS / "SmolLM2-135M.json").read_text())
    before = cfg.read_bytes()
    r = run_cli(["probe", str(model), "--import", str(bench), "--out", str(cfg), "--json"], [cfg])
    assert r.code == 2 and "a file of the input directory" in r.err and cfg.read_bytes() == before
    new = model / "profile.json"  # a new file beside the model's files is fine
    r = run_cli(["probe", str(model), "--import", str(bench), "--out", str(new), "--json"], [new])
    assert r.code == 0 and json.loads(new.read_text())["target"]["verify_s"] == [0.02, 0.021]


def test_interrupted_write_keeps_the_old_file(tmp_path, monkeypatch):
    f = tmp_path / "profile.json"
    f.write_text("old")

    def killed(src, dst, **dir_fds):
        raise KeyboardInterrupt  # the process dies between writing the temp file and the rename

    monkeypatch.setattr(os, "rename", killed)  # atomic.py renames relative to the folder's handle (#34)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(f, "new" * 1000)
    assert f.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["profile.json"]
    monkeypatch.undo()
    with pytest.raises(UsageError, match="is a directory"):
        atomic_write(tmp_path, "x")
    assert atomic_write(f, "new").read_text() == "new"

