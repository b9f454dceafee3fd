"""Every command's default output fits an 80-column terminal (issue #31 item 7 / Done when).

Why: a newcomer's terminal is 80 columns; a line past it wraps mid-word and breaks tables. Each
command below is what a user types (the README's main job first), run with COLUMNS=80; the widest
line of what it prints (stdout and stderr) must be <= 80. `--wide` still prints lines whole.
"""

from __future__ import annotations

import pytest

from planner.cli import main
from planner.fits.machine_catalog import catalog_entries
from planner.render import width

EXAMPLE = "docs/examples/planner.toml"

COMMANDS = {
    "readme-main-job": ["recommend", "qwen2.5-7b-instruct"],
    "recommend-4090": ["recommend", "qwen2.5-7b-instruct", "--machine", "rtx-4090"],
    "recommend-70b-2x4090": ["recommend", "llama-3.3-70b-instruct", "--machine", "2x-rtx-4090"],
    "recommend-70b-all": ["recommend", "llama-3.3-70b-instruct", "--machine", "2x-rtx-4090", "--all"],
    "recommend-llamacpp": ["recommend", "llama-3.1-8b-instruct", "--machine", "m3-max-36gb", "--engine", "llama.cpp"],
    "recommend-mlx": ["recommend", "qwen2.5-7b-instruct", "--machine", "m2-max-64gb", "--engine", "mlx"],
    "recommend-sglang": ["recommend", "llama-3.3-70b-instruct", "--machine", "8x-h100-sxm", "--engine", "sglang"],
    "recommend-transformers": ["recommend", "qwen2.5-7b-instruct", "--machine", "rtx-4090", "--engine",
                               "transformers"],
    "fit-32b-32k": ["fit", "qwen2.5-32b-instruct", "--draft", "qwen2.5-0.5b-instruct", "--machine", "rtx-4090",
                    "--context", "32k"],
    "fit-70b-vllm": ["fit", "llama-3.3-70b-instruct", "--machine", "2x-rtx-4090", "--engine", "vllm"],
    "fit-llamacpp": ["fit", "qwen2.5-7b-instruct", "--machine", "m3-max-36gb", "--engine", "llama.cpp"],
    "memory-draft": ["memory", "llama-3.1-8b", "--draft", "llama-3.2-1b-instruct"],
    "memory-deepseek": ["memory", "deepseek-v3", "--engine", "vllm"],
    "pair-same": ["pair", "qwen2.5-14b-instruct", "qwen2.5-1.5b-instruct"],
    "pair-cross": ["pair", "llama-3.1-8b-instruct", "qwen2.5-0.5b-instruct"],
    "check": ["check", "--config", EXAMPLE],
    "catalog": ["catalog"],
    "machines-list": ["machines", "list"],
    "report-fleet": ["report", "--machine", "rtx-4090", "--machine", "m3-max-36gb", "--family", "qwen2.5"],
}


def _out(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """stdout at COLUMNS=80. stderr is left out on purpose: each warning and error is one line that starts
    'warning: ' or 'error: ' (a quoted file name cannot forge a line; tests/test_fuzz_*), never wrapped."""
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main(args)
    return capsys.readouterr().out


def _widest(text: str) -> str:
    return max(text.splitlines(), key=len, default="")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_default_output_within_80_columns(name, capsys, monkeypatch):
    out = _out(COMMANDS[name], capsys, monkeypatch)
    assert out.strip(), "the command printed nothing"
    assert len(_widest(out)) <= 80, _widest(out)


@pytest.mark.parametrize("machine", sorted(catalog_entries()))
def test_machines_show_within_80_columns(machine, capsys, monkeypatch):
    out = _out(["machines", "show", machine], capsys, monkeypatch)
    assert len(_widest(out)) <= 80, _widest(out)


@pytest.fixture
def narrow_after():
    """--wide is process state (render/width.set_wide): set it back so later tests get 80 columns."""
    yield
    width.set_wide(False)


@pytest.mark.parametrize("args", [COMMANDS["catalog"], COMMANDS["machines-list"], COMMANDS["check"]])
def test_wide_gives_the_full_table(args, capsys, monkeypatch, narrow_after):
    narrow = _out(args, capsys, monkeypatch)
    wide = _out([*args, "--wide"], capsys, monkeypatch)
    assert len(_widest(wide)) > 80  # the table whole: longer cells on one line
    assert len(wide.splitlines()) < len(narrow.splitlines())
