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
    assert _loaded_commands(["memory", "llama-3.1-8b", "--json"]) == (0, ["memory"])
    assert _loaded_commands(["machines", "list", "--json"]) == (0, ["machines"])


def test_help_imports_every_command_module():
    assert _loaded_commands(["--help"]) == (0, sorted(COMMAND_MODULES))


def test_help_lists_commands_in_order_whatever_ran_before(capsys):
    for argv in (["machines", "list", "--json"], ["catalog", "--json"], ["--help"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 0
    block = capsys.readouterr().out.rsplit("\nCommands:\n", 1)[1]  # click's plain help (rich_markup_mode=None)
    listed = [line.split()[0] for line in block.splitlines() if line.startswith("  ") and line[2] != " "]
    assert listed == [m for m in COMMAND_MODULES if m != "machines"] + ["machines"]  # sub-apps follow commands
