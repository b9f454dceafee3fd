"""Hangs, silent degradations, catch-all messages and absurd values (issue #34, classes 6, 9 and 10).

Each test reproduces an attack of the issue: a FIFO as --fleet, a stuck nvidia-smi, duplicate fleet
lines, names the OS refuses, `~nosuchuser`, and values no model or flag can hold.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from planner.core.errors import MachineError
from planner.fits import machine_detect

from .cli_run import run_cli as run
from .conftest import CONFIGS
from .fuzz.harness import ROOT, run_cli


def test_a_fifo_as_fleet_file_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "fleet"
    os.mkfifo(fifo)
    r = run_cli(["report", "--fleet", str(fifo), "--no-plots"], [fifo], json_out=False)
    assert r.code == 2 and "not a regular file" in r.err


def test_duplicate_fleet_lines_are_planned_once(tmp_path, capsys):
    one = tmp_path / "one.txt"
    one.write_text("h100-sxm\n")
    many = tmp_path / "many.txt"
    many.write_text("h100-sxm\nH100-SXM\n" * 5000)
    args = ["report", "--targets", "qwen2.5-0.5b-instruct", "--no-plots", "--json", "--fleet"]
    t0 = time.perf_counter()
    code, out_one, _ = run([*args, str(one)], capsys)
    single = time.perf_counter() - t0
    t0 = time.perf_counter()
    code2, out_many, _ = run([*args, str(many)], capsys)
    assert code == code2 == 0 and out_many == out_one  # the same one machine, planned once
    assert time.perf_counter() - t0 < 5 * single + 2


def test_a_stuck_nvidia_smi_is_killed_and_said(tmp_path, monkeypatch):
    child = tmp_path / "child.pid"
    tool = tmp_path / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\necho '0, NVIDIA H100 80GB HBM3, 81559, 81000'\nsleep 30 &\necho $! > {child}\n"
                    "wait\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(machine_detect, "DETECT_TIMEOUT_S", 0.5)
    with pytest.raises(MachineError, match=r"did not finish within 0\.5 s"):
        machine_detect.nvidia_smi_devices()
    pid = int(child.read_text())
    for _ in range(50):  # the kill is asynchronous: the child is gone (or a zombie: dead) within a moment
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                break
        except FileNotFoundError:
            break
        time.sleep(0.02)
    else:
        pytest.fail("the tool's child is still running")


LONG = "a" * 300  # one path component over NAME_MAX (255 bytes): the OS answers ENAMETOOLONG


def test_a_name_over_255_bytes_is_one_clear_line(tmp_path, capsys):
    model = tmp_path / "m"
    model.mkdir()
    shutil.copy(CONFIGS / "SmolLM2-135M.json", model / "config.json")
    (model / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {"model.embed_tokens.weight": f"{LONG}.safetensors"}}))
    r = run_cli(["memory", str(model)], [model], json_out=False)
    assert r.code == 2 and "which is missing" in r.err
    r = run_cli(["check", "--config", str(tmp_path / f"{LONG}.toml")], [tmp_path], json_out=False)
    assert r.code == 2 and "file not found" in r.err


def test_tilde_nosuchuser_lists_are_not_found(capsys):
    for flag in ("--fleet", "--targets"):
        code, out, err = run(["report", flag, "~nosuchuser-i34/list.txt", "--json"], capsys)
        assert code == 2 and out == "" and len(err.splitlines()) == 1 and "~nosuchuser-i34" in err, err


def test_a_bad_comp_cword_is_one_line(monkeypatch, capsys):
    monkeypatch.setenv("_PLANNER_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", "planner fi")
    monkeypatch.setenv("COMP_CWORD", "x")
    code, out, err = run([], capsys)
    assert code == 2 and out == "" and err.startswith("error: ") and "COMP_CWORD" in err and len(err.splitlines()) == 1


def _head(tmp_path, **changes) -> Path:
    d = tmp_path / "head"
    d.mkdir(exist_ok=True)
    cfg = json.loads((ROOT / "tests" / "fixtures" / "heads" / "llama4-scout-eagle3" / "config.json").read_text())
    cfg.update(changes)
    (d / "config.json").write_text(json.dumps(cfg))
    return d


@pytest.mark.parametrize("changes", [{"architectures": 5}, {"architectures": {}}, {"architectures": [7]},
                                     {"hidden_size": 10**15}, {"num_key_value_heads": 1000},
                                     {"max_position_embeddings": 10**12}])
def test_a_hostile_eagle3_head_config_is_refused(tmp_path, changes):
    head = _head(tmp_path, **changes)
    r = run_cli(["memory", "llama-3.1-8b", "--method", "eagle3", "--draft", str(head)], [head / "config.json"],
                json_out=False)
    assert r.code == 2 and next(iter(changes)) in r.err, r.err


def test_a_string_targets_in_a_heads_catalog_is_refused(tmp_path):
    from planner.core.errors import ConfigError
    from planner.drafting import heads

    real = json.loads(next((ROOT / "planner" / "catalogs" / "heads").glob("*.json")).read_text())
    real["heads"][0]["targets"] = "meta-llama/Llama-3.1-8B-Instruct"  # was split into characters, silently
    (tmp_path / "h.json").write_text(json.dumps(real))
    with pytest.raises(ConfigError, match="'targets'"):
        heads.entries(tmp_path)


@pytest.mark.parametrize("k", ["-1", "0", "99999999999", "33"])
def test_acceptance_at_an_absurd_k_is_refused(k, capsys):
    code, _, err = run(["recommend", "llama-3.1-8b", "--machine", "h100-sxm", "--acceptance",
                        f"greedy_match=0.8@{k}"], capsys)
    assert code == 2 and "K after '@' must be 1 to 32" in err
