"""Writing a line as click's `echo` does, without importing click: what every command face prints through.

Why: `planner --version` and a plain `planner memory` line run without typer or click at all (planner/cli.py,
planner/commands/_fastcli.py; issue #33), and their output must be byte for byte what the typer path prints.
So every path prints through `echo`, which does what click's `echo` does for a line of text
(typer/_click/utils.py `echo`): one write of the text and a newline, ANSI escape sequences removed when the
stream is not a terminal, a flush. A stream whose encoding is ASCII (a misconfigured locale, which click
re-wraps with replacement characters) is handed to click's own echo. This module imports nothing of the
project but the version, so `--version` loads nothing else.
"""

from __future__ import annotations

import codecs
import re
import sys
from typing import Any

from ..core.version import __version__

_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # click's _compat._ansi_re: what it strips off a non-terminal


def plain_stream(stream: Any) -> bool:
    """A text stream that click's echo writes to as it is: it has an encoding and it is not ASCII."""
    encoding = getattr(stream, "encoding", None)
    if not isinstance(encoding, str) or not encoding:
        return False
    try:
        return codecs.lookup(encoding).name != "ascii"
    except LookupError:
        return False


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # click's _compat.isatty: one that cannot say is not a terminal
        return False


def echo(text: str, *, err: bool = False) -> None:
    """`text` and a newline on stdout (stderr with `err`), as click's echo writes it; then flush."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # no standard stream attached (click writes nothing either)
        return
    if not plain_stream(stream):
        import typer  # only a misconfigured stream: click re-wraps it (typer is already loaded on that path)

        typer.echo(text, err=err)
        return
    out = text + "\n"
    if not _isatty(stream):
        out = _ANSI.sub("", out)
    stream.write(out)
    stream.flush()


def version_line() -> str:
    """What `--version` prints: the distribution name and planner/core/version.py's version."""
    return f"spec-planner {__version__}"
