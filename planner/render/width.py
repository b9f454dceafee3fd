"""Width: text that fits the terminal (80 columns and up) without breaking what is pasted.

Why its own module: tables, notes and launch commands all have to fit an 80-column terminal,
and the three need different treatment: prose wraps at word boundaries, a launch command breaks
between shell words with a trailing backslash (so it still pastes as one command), and a table
trims its source column (render/text.py). `--wide` turns all of it off.
"""

from __future__ import annotations

import shlex
import shutil
import textwrap

MIN_WIDTH = 80  # narrower terminals get 80-column text (and scroll)
_wide = False


def set_wide(on: bool) -> None:
    """--wide: print every line whole (no wrapping, no trimmed columns)."""
    global _wide
    _wide = on


def is_wide() -> bool:
    return _wide


def width() -> int:
    """Columns to fill: the terminal's ($COLUMNS first, shutil), at least MIN_WIDTH; unbounded with --wide."""
    if _wide:
        return 1 << 30
    return max(MIN_WIDTH, shutil.get_terminal_size((100, 24)).columns)


def wrap(text: str, *, indent: str = "", cont: str = "    ") -> list[str]:
    """Prose wrapped to width() at word boundaries, continuation lines indented further."""
    if _wide:
        return [indent + text]
    return textwrap.wrap(text, width=width(), initial_indent=indent, subsequent_indent=indent + cont,
                         break_long_words=False, break_on_hyphens=False) or [indent]


def command_lines(command: str, *, indent: str = "", head: str = "") -> list[str]:
    """A shell command broken between words with ' \\' continuations; pasting the lines runs the
    same argv. An option and its value stay on one line."""
    first = indent + head
    if _wide or len(first) + len(command) <= width():
        return [first + command]
    try:
        words = shlex.split(command)
    except ValueError:  # not shell syntax (a Python snippet): leave it whole
        return [first + command]
    groups: list[str] = []
    for w in words:
        q = shlex.quote(w)
        if groups and not w.startswith("-") and groups[-1].startswith("-") and " " not in groups[-1]:
            groups[-1] += " " + q  # the option's value
        else:
            groups.append(q)
    lines, cur, pad = [], first, indent + "    "
    for g in groups:
        if cur.strip() and len(cur) + 1 + len(g) + 2 > width():
            lines.append(cur + " \\")
            cur = pad + g
        else:
            cur = cur + ("" if not cur.strip() or cur.endswith(" ") else " ") + g
    lines.append(cur)
    return lines
