"""The typer-free fast path (planner/commands/_fastcli.py): the same options as typer's face, the same output.

Why these checks: the fast path describes `planner memory`'s options a second time (as `_ledger.FAST`); a
new option on the typer face that the table lacks would make a plain line fall back (slower, still right),
but a table that disagreed with typer (a bound, a default, a spelling) would answer differently. So the
table is compared with the click command typer builds, and every argv below is run both ways.
"""

from __future__ import annotations

import io
import sys

import pytest
import typer
import typer.main

from planner import cli
from planner.commands import _echo, _fastcli, _ledger
from planner.commands._common import app
from tests.cli_run import run_cli


def _typer_memory():
    import planner.commands.memory  # noqa: F401  (registers the face on app)

    return typer.main.get_command(app).commands["memory"]


def test_the_fast_table_is_the_typer_face():
    cmd = _typer_memory()
    table: dict[str, tuple] = {}
    argument = None
    for p in cmd.params:
        assert p.nargs == 1 and not p.multiple and p.callback is None and not p.envvar, p.name
        if p.param_type_name == "argument":
            argument = p.name
            continue
        desc = p.type_descriptor
        kind = bool if p.is_flag else desc.annotation
        lo, hi = (desc.parameter_info.min, desc.parameter_info.max) if kind is int else (None, None)
        for name in (*p.opts, *p.secondary_opts):
            table[name] = (p.name, kind, lo, hi)
        assert _ledger.DEFAULTS[p.name] == p.default, p.name
    assert argument == _ledger.FAST.argument == "model"
    assert {k: (o.dest, o.kind, o.lo, o.hi) for k, o in _ledger.FAST.options.items()} == table
    assert set(_ledger.DEFAULTS) == {o.dest for o in _ledger.FAST.options.values()}


@pytest.mark.parametrize("argv, expected", [
    (["memory", "m"], {"model": "m"}),
    (["memory", "--json", "m", "-c", "8k"], {"as_json": True, "model": "m", "context": "8k"}),
    (["memory", "m", "--batch=4", "-np", "4"], None),  # the same option twice: typer refuses it
    (["memory", "m", "-np", "4", "--engine=vllm"], {"model": "m", "batch": 4, "engine": "vllm"}),
    (["memory", "m", "--group-size", " 64"], {"model": "m", "group_size": 64}),  # int(" 64"), as _fastparse
    (["memory", "m", "--batch", "0"], None),         # out of range: typer's error
    (["memory", "m", "--batch", "9999999"], {"model": "m", "batch": 9_999_999}),
    (["memory", "m", "--batch", "10000000"], None),
    (["memory", "m", "--batch", "4k"], None),        # not a numeral: typer's error
    (["memory", "m", "--draft", "-x"], None),        # a value that looks like an option
    (["memory", "m", "--json=1"], None),             # a flag with a value
    (["memory", "m", "--help"], None),
    (["memory", "m", "--"], None),
    (["memory", "m", "n"], None),                    # two arguments
    (["memory"], None),                              # none
    (["memory", "m", "--draft"], None),              # an option without its value
    (["memory", "m", "-c8k"], None),                 # click's attached short value: typer decides
    (["memory", "m", "--nope"], None),
    (["memory", "-", "--wide"], {"model": "-", "wide": True}),
    (["fit", "m"], None),
])
def test_parse_accepts_only_the_plain_lines(argv, expected):
    assert _fastcli.parse(argv, _ledger.FAST) == expected


def _both_ways(argv, capsys, monkeypatch):
    assert _echo.plain_stream(sys.stdout) and _echo.plain_stream(sys.stderr)  # so main() takes the fast path
    fast = run_cli(argv, capsys)
    monkeypatch.setattr(cli, "FAST_COMMANDS", {})
    slow = run_cli(argv, capsys)
    monkeypatch.undo()
    return fast, slow


@pytest.mark.parametrize("argv", [
    ["memory", "llama-3.1-8b", "--json"],
    ["memory", "llama-3.1-8b"],
    ["memory", "llama-3.1-8b", "--context", "32k", "-np", "4", "--engine", "vllm", "--kv-dtype", "fp8"],
    ["memory", "qwen2.5-7b", "--weights-dtype", "int4", "--group-size", "64", "--overhead", "1GiB", "--wide"],
    ["memory", "llama-3.1-8b", "--draft", "llama-3.2-1b", "-cd", "2k", "--json"],
    ["memory", "llama-3.1-8b", "--overhead", "lots"],        # the body's own error: exit 2, one line
    ["memory", "no-such-model-anywhere", "--json"],           # not found: exit 2
    ["memory", "llama-3.1-8b", "--engine", "nope"],
])
def test_the_fast_path_prints_what_typer_prints(argv, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert _fastcli.parse(argv, _ledger.FAST) is not None  # else this compares typer with itself
    fast, slow = _both_ways(argv, capsys, monkeypatch)
    assert fast == slow
    assert fast[1] or fast[2]


class _Stream(io.TextIOWrapper):
    def __init__(self, tty: bool) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", write_through=True)
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def bytes(self) -> bytes:
        return self.buffer.getvalue()


@pytest.mark.parametrize("tty", [False, True])
@pytest.mark.parametrize("text", ["plain", "\x1b[31mred\x1b[0m and \x1b[?25l", "tab\tand é", ""])
def test_echo_writes_what_clicks_echo_writes(text, tty, monkeypatch):
    ours, theirs = _Stream(tty), _Stream(tty)
    monkeypatch.setattr(sys, "stdout", ours)
    _echo.echo(text)
    monkeypatch.setattr(sys, "stdout", theirs)
    typer.echo(text)
    assert ours.bytes() == theirs.bytes()
    assert ours.bytes().endswith(b"\n")


def test_an_ascii_stream_goes_through_typer():
    """click re-wraps an ASCII-encoded stream (replacing what it cannot encode): the fast path steps aside."""
    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    assert not _echo.plain_stream(ascii_out)
    assert _echo.plain_stream(io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    assert not _echo.plain_stream(io.StringIO())  # no encoding at all
