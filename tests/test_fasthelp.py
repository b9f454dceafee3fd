"""The root's --help without typer (planner/commands/_fasthelp.py) prints typer's own page, byte for byte."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer.main

from planner import cli
from planner.commands import _fasthelp


def _typer_page(prog: str, capsys) -> str:
    cli._register()
    group = typer.main.get_command(cli._app())
    group(args=["--help"], prog_name=prog, standalone_mode=False)
    return capsys.readouterr().out


@pytest.mark.parametrize("columns", [20, 50, 52, 60, 79, 80, 81, 100, 200])
@pytest.mark.parametrize("argv0", ["/usr/local/bin/planner", "spec-planner"])
def test_the_page_is_typers_at_every_width(columns, argv0, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setattr(sys, "argv", [argv0, "--help"])
    monkeypatch.setitem(sys.modules, "__main__", type(sys)("__main__"))  # a console script: no __package__
    page = _fasthelp.root_help()
    assert page is not None
    assert page + "\n" == _typer_page(_fasthelp.program_name(), capsys)
    assert _fasthelp.program_name() == argv0.rsplit("/", 1)[-1]


def test_python_dash_m_names_the_package_as_click_does(monkeypatch):
    main = type(sys)("__main__")
    main.__package__ = "planner"
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(sys, "argv", ["/x/planner/__main__.py", "--help"])
    assert _fasthelp.program_name() == "python -m planner"


def test_every_command_and_its_help_is_listed_as_registered():
    cli._register()
    group = typer.main.get_command(cli._app())
    ctx = group.make_context("planner", ["--help"], resilient_parsing=True)
    names = group.list_commands(ctx)
    assert [n for n, _ in _fasthelp.COMMANDS] == names
    for name, text in _fasthelp.COMMANDS:
        declared = group.get_command(ctx, name).help.split("\n\n")[0]
        assert text == " ".join(declared.split())


def test_short_help_is_clicks():
    utils = pytest.importorskip("typer._click.utils", reason="this typer vendors click") if _vendored() else pytest.importorskip("click.utils", reason="typer's help is rendered by click")
    make_default_short_help = utils.make_default_short_help
    text = _fasthelp.COMMANDS[7][1]
    for limit in range(5, 120):
        assert _fasthelp.short_help(text, limit) == make_default_short_help(text, limit)


def _vendored() -> bool:
    import importlib.util
    return importlib.util.find_spec("typer._click") is not None


def test_unusual_runs_go_to_typer(monkeypatch):
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    assert _fasthelp.root_help() is None
    monkeypatch.delenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION")
    monkeypatch.setattr(sys, "argv", ["p" * 200])
    monkeypatch.setitem(sys.modules, "__main__", type(sys)("__main__"))
    assert _fasthelp.root_help() is None  # a usage line click would wrap


def test_the_command_line_prints_it():
    r = subprocess.run([sys.executable, "-m", "planner", "--help"], capture_output=True, text=True, timeout=60,
                       env={"COLUMNS": "80", "PATH": ""})
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith("Usage: python -m planner [OPTIONS] COMMAND [ARGS]...\n")
    assert "\nCommands:\n  memory " in r.stdout
