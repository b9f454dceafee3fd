"""Start-up: a run imports only the module of the command it names; help and errors still list every command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from planner import cli
from planner.cli import COMMAND_MODULES, main


def _loaded_commands(args: list[str]) -> tuple[int, list[str]]:
    """Exit code and the planner.commands modules (not _common/_options) a fresh `planner ARGS` imported."""
    code = ("import sys\nfrom planner.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    rc = e.code\n"
            "print(rc, *sorted(m.rsplit('.', 1)[1] for m in sys.modules\n"
            "                   if m.startswith('planner.commands.') and not m.rsplit('.', 1)[1].startswith('_')))\n")
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
    rc, *mods = r.stdout.split("\n")[-2].split()
    return int(rc), mods


@pytest.mark.parametrize("argv, expected", [
    (["memory", "llama-3.1-8b"], ("memory",)),
    (["machines", "list"], ("machines",)),
    (["recommend", "--help"], ("recommend",)),
    ([], COMMAND_MODULES),
    (["--help"], COMMAND_MODULES),
    (["--help", "memory"], COMMAND_MODULES),  # root help: lists every command
    (["nope"], COMMAND_MODULES),              # "No such command" names the real ones
])
def test_modules_for_the_first_argument(argv, expected):
    assert cli._modules_for(argv) == expected


def test_a_command_imports_only_its_own_module():
    assert _loaded_commands(["memory", "llama-3.1-8b", "--json", "--json"]) == (0, ["memory"])  # typer's path
    assert _loaded_commands(["memory", "llama-3.1-8b", "--help"]) == (0, ["memory"])
    assert _loaded_commands(["machines", "list", "--json"]) == (0, ["machines"])


def test_a_plain_memory_line_runs_without_typer(tmp_path):
    """The fast path (planner/commands/_fastcli.py): no typer, no click, no command face (issue #33)."""
    assert _loaded_commands(["memory", "llama-3.1-8b", "--json"]) == (0, [])
    rc, mods = _imported(["memory", "llama-3.1-8b", "--context", "8k", "-np", "2", "--json"])
    assert rc == 0 and _loaded(mods, ("typer", "click")) == []
    rc, mods = _imported(["--version"])
    assert rc == 0 and _loaded(mods, ("typer", "click", "planner.sources")) == []


def test_root_help_imports_no_command_module_and_no_typer():
    """The root's page comes from planner/commands/_fasthelp.py (issue #33); tests/test_fasthelp.py holds
    it equal to typer's. Any other help line still goes through typer and imports every command."""
    assert _loaded_commands(["--help"]) == (0, [])
    rc, mods = _imported(["--help"])
    assert rc == 0 and _loaded(mods, ("typer", "click", "planner.sources")) == []
    assert _loaded_commands(["--help", "memory"]) == (0, sorted(COMMAND_MODULES))


def test_help_lists_commands_in_order_whatever_ran_before(capsys):
    for argv in (["machines", "list", "--json"], ["catalog", "--json"], ["--help"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 0
    block = capsys.readouterr().out.rsplit("\nCommands:\n", 1)[1]  # click's plain help (rich_markup_mode=None)
    listed = [line.split()[0] for line in block.splitlines() if line.startswith("  ") and line[2] != " "]
    assert listed == [m for m in COMMAND_MODULES if m != "machines"] + ["machines"]  # sub-apps follow commands


FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures"
# What a plain ledger must not load (issue #33): the drafting methods and what they bring (pairing, speed, the
# plan), the gguf package (numpy, yaml) for a type table, tabulate for a --json run, pydantic for option values.
NOT_FOR_A_PLAIN_LEDGER = ("planner.drafting", "planner.speed", "planner.pairing", "planner.plan", "gguf", "numpy",
                          "yaml", "tabulate", "pydantic", "typer._adapters")


def _imported(args: list[str]) -> tuple[int, set[str]]:
    """Exit code and every module name a fresh `planner ARGS` left in sys.modules."""
    code = ("import sys\nfrom planner.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    rc = e.code\n"
            "sys.stdout.flush()\nprint('\\n@@', rc, *sorted(sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
    rc, *mods = r.stdout.rsplit("\n@@", 1)[1].split()
    return int(rc), set(mods)


def _loaded(mods: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in mods if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_a_plain_ledger_imports_no_drafting_speed_gguf_or_tabulate(tmp_path):
    (tmp_path / "config.json").write_bytes((FIXTURES / "configs" / "Llama-3.1-8B.json").read_bytes())
    rc, mods = _imported(["memory", str(tmp_path), "--json"])
    assert rc == 0 and "planner.fits.memory" in mods
    assert _loaded(mods, NOT_FOR_A_PLAIN_LEDGER) == []
    assert _loaded(mods, ("planner.sources.gguf", "planner.sources.gguf_header", "typer")) == []  # a folder


def test_a_gguf_ledger_reads_types_without_the_gguf_package():
    from tests.gguf_dir import gguf_test_dir

    path = next(iter(sorted(gguf_test_dir().glob("*.gguf"))), None)
    if path is None:
        pytest.skip("no real test GGUF in the cache (tests/gguf_dir.py)")
    rc, mods = _imported(["memory", str(path), "--json"])
    assert rc == 0 and "planner.sources.gguf_header" in mods
    assert _loaded(mods, NOT_FOR_A_PLAIN_LEDGER) == []


def test_a_draft_still_brings_the_drafting_methods(tmp_path):
    """The deferral is only for the plain ledger: --draft loads the methods (else the check above is vacuous)."""
    (tmp_path / "config.json").write_bytes((FIXTURES / "configs" / "Llama-3.1-8B.json").read_bytes())
    rc, mods = _imported(["memory", str(tmp_path), "--draft", "llama-3.2-1b", "--json"])
    assert rc == 0 and _loaded(mods, ("planner.drafting",))
