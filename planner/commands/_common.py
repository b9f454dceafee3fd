"""What the command faces share: the typer app they register on (with its root callback), and what they print
through (planner/commands/_output.py, re-exported here: JSON out, warnings, small flag helpers).

`--draft` as a drafting method is in _methods.py (only memory and fit take one).

`planner.cli` imports `app` from here and runs it; no command imports `planner.cli`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ._output import echo, emit, engine_for, say, split_values, version_line, warn

__all__ = ["app", "echo", "emit", "engine_for", "say", "split_values", "version_line", "warn"]

# Plain click help (rich_markup_mode=None): examples in `\b` blocks stay one pasteable line each, and flags
# carry no `<bool>` type labels (typer's rich panels reflow examples and label every option's type).
app = typer.Typer(add_completion=True, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Plan speculative decoding before you deploy: fit, compatibility, speed-up.")


def _print_version(value: bool) -> None:
    if value:
        echo(version_line())
        raise typer.Exit(0)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                                 help="Print 'spec-planner <version>' and exit.")] = False) -> None:
    """The root's only option besides --help (listed in root help); `_print_version` answers it eagerly.

    planner.cli answers a leading --version before importing typer; this callback answers it anywhere else
    on the root. The root itself does nothing: every answer comes from a command.
    """
