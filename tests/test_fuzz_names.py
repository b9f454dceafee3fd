"""Fuzzing names into every output format (issue #34): deployment names, machine names and model folders.

Fresh hostile names, drawn from the fragments that drive each sink (workflow commands, CR/LF, HTML,
Markdown links and images, table pipes, backslashes), flow through the real CLI into the check table,
the annotations, the step summary, JUnit XML, `machines show` and the Markdown and HTML reports. After
each run: no line a GitHub runner would run as a workflow command unless the planner wrote it as an
annotation, no live Markdown link or image, no raw HTML tag in Markdown, and the XML parses.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from planner.cli import main

from .conftest import CONFIGS
from .fuzz.harness import ROOT, fuzz_settings, hang_guard, run_cli, scratch
from .test_hardening_ci import live_links, runner_commands

FRAGMENTS = ("::", "::error::x", "::stop-commands::t", "\r", "\n", "\r\n", " ", "\t", "<", "<img src=http://e/i>",
             "<details>", "&lt;", "&#58;", "[", "]", "](", "![", "(javascript:alert(1))", "|", "\\", "`", "**", "#",
             "a", "é", "\u2028", "%0A", "=", '"')
names = st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8).map("".join).filter(lambda s: s.strip())
_TAG = re.compile(r"<[A-Za-z/!?]")


def _markdown_ok(text: str) -> None:
    prose = re.sub(r"(?ms)^(`{3,})\n.*?^\1$", "", text)  # fenced blocks are literal
    prose = re.sub(r"(?m)^<a id=\"[^\"]*\"></a>$", "", prose)  # the section anchors the writer adds
    assert runner_commands(text) == [] and live_links(prose) == [] and not _TAG.search(prose), text


def _run_on_actions(args: list[str], summary) -> tuple[int, str, str]:
    """The CLI in-process with GITHUB_ACTIONS=true (run_cli takes every stderr line for a warning)."""
    old = {k: os.environ.get(k) for k in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    os.environ.update(GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary))
    out, err, code = io.StringIO(), io.StringIO(), 0
    try:
        with hang_guard(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(args)
            except SystemExit as e:
                code = e.code
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v
    assert "Traceback" not in err.getvalue()
    return code, out.getvalue(), err.getvalue()


@given(name=names)
@fuzz_settings(25)
def test_deployment_names_into_table_annotations_summary_and_junit(name):
    with scratch() as d:
        pol = d / "planner.toml"
        pol.write_text(f'[[deployment]]\nname = {json.dumps(name)}\ntarget = "qwen2.5-0.5b-instruct"\n'
                       f'machine = "rtx-4090"\nengine = "vllm"\n')
        summary, junit = d / "summary.md", d / "junit.xml"
        code, out, err = _run_on_actions(["check", "--config", str(pol), "--junit", str(junit)], summary)
        assert code == 0 and runner_commands(out) == []
        ours = runner_commands(err)
        assert len(ours) == 1 and ours[0].startswith("::warning file=") and "\r" not in ours[0], err
        _markdown_ok(summary.read_text())
        xml = junit.read_text()
        assert runner_commands(xml) == [] and ET.fromstring(xml.split("\n", 1)[1]).tag == "testsuites"


@given(name=names)
@fuzz_settings(25)
def test_machine_names_into_machines_show(name):
    spec = json.loads((ROOT / "planner" / "catalogs" / "machines" / "rtx-4090.json").read_text())
    spec.update(name=name, display_name=name)
    with scratch() as d:
        f = d / "box.json"
        f.write_text(json.dumps(spec))
        r = run_cli(["machines", "show", str(f)], [f], json_out=False)
        assert runner_commands(r.out + r.err) == []


@given(name=names.filter(lambda s: "/" not in s and "\x00" not in s and s not in (".", "..")))
@fuzz_settings(20, cli=True)
def test_model_folder_names_into_the_markdown_and_html_reports(name):
    with scratch() as d:
        model = d / name[:200]
        model.mkdir()
        shutil.copy(CONFIGS / "SmolLM2-135M.json", model / "config.json")
        for out in (d / "r.md", d / "r.html"):
            r = run_cli(["report", str(model), "--machine", "rtx-4090", "--no-plots", "--out", str(out)], [model],
                        json_out=False)
            assert r.code == 0, r.err
            text = out.read_text()
            assert runner_commands(text) == [] and runner_commands(r.out) == []
            if out.suffix == ".md":
                _markdown_ok(text)
