"""Readable output: at 80 columns no line of the main commands is wider than 100 characters,
`--wide` prints every line whole, and a broken launch command still runs the same argv.

Why: the tables used to be 134-366 characters wide at 80 columns; a wrapped launch command that
no longer pastes as one command would be worse than a wide one.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess

import pytest

from planner.cli import main
from planner.render import width

COMMANDS = {
    "recommend": ["recommend", "qwen2.5-7b-instruct", "--machine", "rtx-4090"],
    "recommend-70b": ["recommend", "llama-3.3-70b-instruct", "--machine", "2x-rtx-4090", "--all"],
    "recommend-llamacpp": ["recommend", "llama-3.1-8b-instruct", "--machine", "m3-max-36gb", "--engine", "llama.cpp"],
    "recommend-transformers": ["recommend", "qwen2.5-7b-instruct", "--machine", "rtx-4090", "--engine",
                               "transformers"],
    "memory": ["memory", "llama-3.1-8b", "--draft", "llama-3.2-1b-instruct"],
    "fit": ["fit", "llama-3.3-70b-instruct", "--machine", "2x-rtx-4090", "--engine", "vllm"],
    "fit-llamacpp": ["fit", "llama-3.3-70b-instruct", "--machine", "2x-rtx-4090", "--engine", "llama.cpp"],
    "pair": ["pair", "qwen2.5-7b-instruct", "llama-3.2-1b-instruct"],
    "machines": ["machines", "list"],
}


def run(args, capsys, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    with pytest.raises(SystemExit):
        main(args)
    return capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_line_over_100_at_80_columns(name, capsys, monkeypatch):
    out = run(COMMANDS[name], capsys, monkeypatch, 80)
    widest = max(out.splitlines(), key=len)
    assert len(widest) <= 100, widest


def test_wide_prints_lines_whole(capsys, monkeypatch):
    narrow = run([*COMMANDS["memory"]], capsys, monkeypatch, 80)
    wide = run([*COMMANDS["memory"], "--wide"], capsys, monkeypatch, 80)
    assert max(len(x) for x in wide.splitlines()) > 100
    assert "target: meta-llama/Llama-3.1-8B" in wide.splitlines()[0]  # the ids back in the header
    assert len(wide.splitlines()) < len(narrow.splitlines())


def test_120_columns_uses_the_room(capsys, monkeypatch):
    out = run(COMMANDS["pair"], capsys, monkeypatch, 120)
    lines = out.splitlines()
    assert max(len(x) for x in lines) <= 120 and max(len(x) for x in lines) > 100


def _argv_by_bash(text: str) -> list[str]:
    """What bash makes of pasted lines (line continuations, quotes)."""
    script = "set -- " + text + "\nprintf '%s\\0' \"$@\""
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    return out.split("\0")[:-1]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_a_broken_command_pastes_as_the_same_command(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    cmd = ("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 4096 --tensor-parallel-size 2 --speculative-config "
           "'{\"method\": \"draft_model\", \"model\": \"Qwen/Qwen2.5-0.5B-Instruct\", \"num_speculative_tokens\": 3, "
           "\"draft_tensor_parallel_size\": 1}'")
    lines = width.command_lines(cmd, indent="  ")
    assert len(lines) > 1 and all(len(x) <= 80 for x in lines)
    got = _argv_by_bash("\n".join(lines))
    want = shlex.split(cmd)
    assert got[:-1] == want[:-1]

    assert json.loads(got[-1]) == json.loads(want[-1])  # newlines inside the JSON are whitespace


def test_python_lines_break_inside_parentheses_only(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    line = ("model = AutoModelForCausalLM.from_pretrained('Qwen/Qwen2.5-14B-Instruct', dtype='auto', "
            "device_map='auto', note='a, b')")
    out = width.python_lines(line, indent="    ")
    assert len(out) == 2 and all(len(x) <= 80 for x in out)
    compile("\n".join(x.strip() if i == 0 else x for i, x in enumerate(out)), "<snippet>", "exec")
    assert "note='a, b'" in out[-1]  # never inside a string literal
