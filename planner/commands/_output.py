"""What every command face prints through, without typer: JSON out, warnings, and two flag helpers.

Why apart from _common.py (which holds the typer app): `planner memory` on a plain argv runs without typer
or click at all (planner/commands/_fastcli.py, issue #33: typer's import is ~40% of a ledger's start-up), and
its output must be byte for byte what the typer path prints: both print through _echo.py's `echo`.
"""

from __future__ import annotations

import json
from typing import Any

from .. import engines
from ..core.constants import JSON_SCHEMA_VERSION
from ..core.errors import one_line
from ..render.escape import no_commands
from ._echo import echo, plain_stream, version_line

__all__ = ["echo", "emit", "engine_for", "plain_stream", "say", "split_values", "version_line", "warn"]


def emit(data: Any) -> None:
    """JSON to stdout. An object starts with `"schema_version"` (docs/json.md); a list is printed as it is.

    Why lists stay bare: `catalog --json` and `machines list --json` have always printed a list, and
    wrapping it in an object would break every consumer that iterates over it.
    """
    if isinstance(data, dict):
        data = {"schema_version": JSON_SCHEMA_VERSION, **data}
    echo(json.dumps(data, indent=2, sort_keys=False))


def say(text: str, *, err: bool = False) -> None:
    """Print command output (a table, a report, a note): no line of it can start a GitHub workflow command.

    Why every face prints through here: names in tables come from policies and machine files, and a
    runner runs any output line starting `::` (`::stop-commands::x` silences the gate's own annotations);
    only `commands/check.py` writes annotations, with typer.echo, on purpose (render/escape.py).
    """
    echo(no_commands(text), err=err)


def warn(msg: str) -> None:
    # one line even when it quotes a hostile file, and never wrapped: every stderr line starts "warning: " or
    # "error: " (tests/test_fuzz_*), so no file name can forge one; the 80-column rule holds for stdout
    echo(f"warning: {one_line(msg)}", err=True)


def split_values(values: list[str] | None) -> list[str]:
    """Repeated and comma-separated values, in order."""
    return [x.strip() for v in values or [] for x in v.split(",") if x.strip()]


def engine_for(name: str, *specs, kind: str | None = None) -> str:
    """--engine auto: llama.cpp when a model is a GGUF file (what runs GGUFs natively), else the registry's
    default for the machine kind (None, no machine named: transformers); any other name, canonical."""
    if name.strip().lower() == "auto":
        return engines.default_engine(kind, gguf=any(s is not None and s.source == "gguf" for s in specs))
    return engines.canonical(name)
