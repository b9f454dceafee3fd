"""Start-up: plain option values (str, int, float, bool) converted without importing pydantic.

Why: typer 0.2x converts every parameter value, defaults included, through a pydantic
TypeAdapter (typer/core.py `_TyperParameter.process_value` -> `_coercion.build_runtime_param`,
which imports `typer._adapters` and with it pydantic: ~80 ms, more than everything
`planner memory` does with a local folder). Our options are plain strings and numbers, so
`install()` gives each such parameter a converter that does what the adapter does for a well-formed
value (the value itself for a string or a flag; int() / float() of a plain numeral inside the
option's min/max). Anything else (a malformed or out-of-range number, an unusual type) goes to typer's own
converter, which gives its usual error. A typer without this hook (`_runtime_param`) is left alone.
"""

from __future__ import annotations

import re
import types
from typing import Any, Union, get_args, get_origin

_INT = re.compile(r"[+-]?\d+")
_MAX_NUMERAL = 64  # longer numerals go to typer's own conversion (int() refuses 4,300+ digits)
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


class _Plain:
    """A typer RuntimeParam stand-in: `coerce(value, param=, ctx=)` for str/int/float values."""

    def __init__(self, kind: type, info: Any) -> None:
        self.kind, self.info = kind, info

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:
            return None
        if self.kind is str and isinstance(value, str):
            return value
        if self.kind is bool:
            return value if isinstance(value, bool) else self._typer(value, param, ctx)
        if isinstance(value, self.kind) and not isinstance(value, bool):
            number = value
        elif (isinstance(value, str) and len(value) <= _MAX_NUMERAL
              and (_INT if self.kind is int else _FLOAT).fullmatch(value.strip())):
            number = self.kind(value.strip())
        else:
            return self._typer(value, param, ctx)
        lo, hi = getattr(self.info, "min", None), getattr(self.info, "max", None)
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            return self._typer(value, param, ctx)  # clamps or raises typer's own range error
        return number

    @staticmethod
    def _typer(value: Any, param: Any, ctx: Any) -> Any:
        from typer._coercion import build_runtime_param

        return build_runtime_param(param.type_descriptor).coerce(value, param=param, ctx=ctx)


def _plain_kind(annotation: Any) -> type | None:
    """str, int, float or bool for `X` and `X | None`; None for anything else."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        annotation = args[0] if len(args) == 1 else None
    return annotation if annotation in (str, int, float, bool) else None


class _HelpNames:
    """What click's get_help_option reads of a context: the default help option names."""

    help_option_names = ("--help",)


def install(command: Any) -> None:
    """Give every plain str/int/float/bool parameter of `command` (and its subcommands, and the --help
    option click creates on first use) the light converter."""
    params = list(getattr(command, "params", ()))
    if getattr(command, "_help_option", "absent") is None and getattr(command, "add_help_option", False):
        params.append(command.get_help_option(_HelpNames()))  # created (and cached) now, as click would
    for p in params:
        if p is None:
            continue
        desc = getattr(p, "type_descriptor", None)
        if desc is None or getattr(p, "_runtime_param", "absent") is not None or p.nargs != 1 or p.multiple:
            continue
        info = desc.parameter_info
        kind = _plain_kind(desc.annotation)
        if kind is not None and getattr(info, "parser", None) is None and getattr(info, "click_type", None) is None:
            p._runtime_param = _Plain(kind, info)
    for sub in getattr(command, "commands", {}).values():
        install(sub)
