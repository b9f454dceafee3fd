"""Hostile names reaching CI sinks (issue #34, classes 1 and 7): workflow commands, step-summary and Markdown markup.

A GitHub runner runs every output line whose first non-blank characters are `::` (actions/runner
ActionCommandManager.cs: `TrimStart()`, then `StartsWith("::")`), cutting lines at `\\n` and a lone `\\r`.
Each test writes the attack into a deployment name, a machine file's `name`/`display_name` or a model
folder's name and asserts that the only such lines are the annotations `planner check` writes itself.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from planner.render import escape

from .cli_run import run_cli as run
from .conftest import CONFIGS
from .fuzz.harness import ROOT

HOSTILE = ("::stop-commands::x", "  ::error::forged", "a\r::error::cr", "a\r**PASSED**\r## forged",
           "<details><img src=http://e/x.png>", "[x](javascript:alert(1))", "![x](http://e/i.png)")
_RUNNER_LINES = re.compile(r"\r\n|\r|\n")  # .NET ReadLine's line ends


def runner_commands(text: str) -> list[str]:
    """The lines a GitHub runner would take as workflow commands."""
    return [ln for ln in _RUNNER_LINES.split(text) if ln.lstrip().startswith("::")]


def live_links(text: str) -> list[str]:
    """`[text](url)` or `![alt](url)` with neither bracket backslash-escaped: what a Markdown viewer makes live."""
    return re.findall(r"(?<!\\)\[[^\]]*(?<!\\)\]\(", text)


def toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a TOML basic string for these characters


def _policy(tmp_path: Path, names: tuple[str, ...] = HOSTILE) -> Path:
    p = tmp_path / "planner.toml"
    p.write_text("".join(f"[[deployment]]\nname = {toml_str(n)}\ntarget = \"qwen2.5-0.5b-instruct\"\n"
                         f"machine = \"rtx-4090\"\nengine = \"vllm\"\n" for n in names))
    return p


def test_no_output_line_of_check_starts_a_workflow_command(tmp_path, capsys, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, err = run(["check", "--config", str(_policy(tmp_path))], capsys)
    assert code == 0, err
    assert runner_commands(out) == []  # the table, wrapped cells included
    ours = runner_commands(err)  # each `compatible: skip` is one ::warning the planner wrote
    assert len(ours) == len(HOSTILE) and all(ln.startswith("::warning file=") for ln in ours), ours
    assert all("%3A%3Astop-commands" in ln or "stop-commands" not in ln for ln in ours)
    text = summary.read_text()
    assert runner_commands(text) == []
    rows = [ln for ln in text.split("\n") if ln.startswith("| ")]
    assert len(rows) == 1 + 2 * len(HOSTILE)  # header + (fits, compatible) per deployment: no row cut by a CR
    assert "\r" not in text and "<details" not in text and "<img" not in text
    assert live_links(text) == [] and "javascript:" in text  # brackets escaped: no link, no remote image
    assert "\n## forged" not in text and "\n**PASSED**" not in text


def test_a_machine_file_name_cannot_start_a_command(tmp_path, capsys):
    spec = json.loads((ROOT / "catalogs" / "machines" / "rtx-4090.json").read_text())
    spec.update(name="::stop-commands::x", display_name="\n::error::forged")
    f = tmp_path / "box.json"
    f.write_text(json.dumps(spec))
    for args in (["machines", "show", str(f)], ["fit", "qwen2.5-0.5b-instruct", "--machine", str(f)]):
        code, out, err = run(args, capsys)
        assert code in (0, 2) and runner_commands(out + err) == [], (args, out, err)


def test_markdown_report_names_are_neither_links_nor_images(tmp_path, capsys):
    model = tmp_path / "![x](http://e" / "i.png) [y](javascript:alert(1)) ::error::z"
    model.mkdir(parents=True)
    shutil.copy(CONFIGS / "SmolLM2-135M.json", model / "config.json")
    out_md = tmp_path / "r.md"
    code, _, err = run(["report", str(model), "--machine", "rtx-4090", "--out", str(out_md), "--no-plots"], capsys)
    assert code == 0, err
    text = out_md.read_text()
    prose = re.sub(r"(?ms)^(`{3,})\n.*?^\1$", "", text)  # a fenced launch command is literal, never a link
    assert live_links(prose) == [] and runner_commands(text) == [] and "vllm serve" in text
    assert "i.png) \\[y\\](javascript:alert(1))" in text  # still readable: CommonMark renders `\[` as `[`


def test_every_sink_escape_keeps_ordinary_text():
    assert escape.no_commands("a::b\n c :: d") == "a::b\n c :: d"  # `::` inside a line is no command
    assert escape.no_commands("x\r::y", "&#58;") == "x\r&#58;:y"
    assert escape.md("K <= 8 & 1 | 2") == "K <= 8 & 1 | 2" and escape.md_cell("a|b") == "a\\|b"


def test_every_face_prints_through_the_one_escaping_sink():
    """Only the sink (commands/_output.py: say, warn, emit; its _echo.py, which hands a misconfigured stream to
    typer.echo) and check's annotations call typer.echo in the command faces."""
    offenders = []
    for f in sorted((ROOT / "planner" / "commands").glob("*.py")):
        for i, line in enumerate(f.read_text().splitlines(), 1):
            progress = f.name == "probe.py" and "typer.echo(line, err=True)" in line  # '[ 40%  1.2 s] msg'
            if "typer.echo(" in line and f.name not in ("_common.py", "_echo.py") and "gh.annotation(" not in line and not progress:
                offenders.append(f"{f.name}:{i}")
    assert offenders == []
