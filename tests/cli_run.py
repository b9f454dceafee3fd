"""One way for tests to run the CLI in-process: planner.cli.main(args) -> (exit code, stdout, stderr)."""

from __future__ import annotations

import pytest

from planner.cli import main


def run_cli(args, capsys):
    """Run `planner ARGS` in this process; the CLI always ends in SystemExit with its exit code."""
    with pytest.raises(SystemExit) as e:
        main(args)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err
