"""Start-up: a command line that is plainly well formed, parsed without typer or click (issue #33).

Why: importing typer (and the click it vendors) is ~40% of `planner memory DIR --json`, more than the
ledger itself. A command that opts in (today: `memory`, in planner/commands/_ledger.py) describes its
options as a `FastCommand`; `parse` accepts only the argv whose meaning is beyond doubt: the command's one
argument, each option at most once as `--opt VALUE`, `--opt=VALUE` or a bare flag, every number a plain
numeral inside its bounds (what planner/commands/_fastparse.py converts the same way). Anything else
(`--help`, `--`, an unknown or repeated option, a value that starts with `-`, a malformed or out-of-range
number) returns None and the run goes through typer, which prints its usual help or error. Both paths call
the same function with the same values, so the output cannot differ; tests/test_fastcli.py holds each
`FastCommand` equal to the typer command's own options.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_INT = re.compile(r"[+-]?\d+")  # as planner/commands/_fastparse.py: int() of a plain numeral
_MAX_NUMERAL = 64


class Opt:
    """One option: the parameter it sets, its kind (str, int or bool for a flag) and an int's bounds.

    A plain class, not a NamedTuple or dataclass: building one of those classes costs ~1 ms at import.
    """

    __slots__ = ("dest", "hi", "kind", "lo")

    def __init__(self, dest: str, kind: type, lo: int | None = None, hi: int | None = None) -> None:
        self.dest, self.kind, self.lo, self.hi = dest, kind, lo, hi


class FastCommand:
    """A command the fast path may run: its name, its one argument, its options by every spelling, its body."""

    __slots__ = ("argument", "name", "options", "run")

    def __init__(self, name: str, argument: str, options: dict[str, Opt], run: Callable[..., Any]) -> None:
        self.name, self.argument, self.options, self.run = name, argument, options, run


def _value(opt: Opt, text: str) -> Any:
    """The option's value as typer would convert it, or None where typer must decide (an error, a clamp)."""
    if opt.kind is str:
        return text
    if opt.kind is int and len(text) <= _MAX_NUMERAL and _INT.fullmatch(text.strip()):
        number = int(text.strip())
        if (opt.lo is None or number >= opt.lo) and (opt.hi is None or number <= opt.hi):
            return number
    return None


def parse(argv: list[str], command: FastCommand) -> dict[str, Any] | None:
    """The keyword arguments of `command.run` that `argv` (command name first) gives, or None: let typer parse."""
    if argv[:1] != [command.name]:
        return None
    values: dict[str, Any] = {}
    rest = argv[1:]
    i = 0
    while i < len(rest):
        tok = rest[i]
        i += 1
        if not tok.startswith("-") or tok == "-":
            if command.argument in values:
                return None
            values[command.argument] = tok
            continue
        name, eq, text = tok.partition("=") if tok.startswith("--") else (tok, "", "")
        opt = command.options.get(name)
        if opt is None or opt.dest in values:
            return None
        if opt.kind is bool:
            if eq:
                return None
            values[opt.dest] = True
            continue
        if not eq:
            if i >= len(rest):
                return None
            text, i = rest[i], i + 1
        if text.startswith("-"):
            return None
        value = _value(opt, text)
        if value is None:
            return None
        values[opt.dest] = value
    return values if command.argument in values else None
