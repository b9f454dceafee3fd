"""What the command faces share: the typer app they register on, JSON out, warnings, and small flag helpers.

`planner.cli` imports `app` from here and runs it; no command imports `planner.cli`.
"""

from __future__ import annotations

import json
from typing import Any

import typer

from .. import engines
from ..core.errors import one_line
from ..drafting import DraftingMethod, DraftModel
from ..sources import load_spec

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Plan speculative decoding before you deploy: fit, compatibility, speed-up.")


def emit(data: Any) -> None:
    """JSON to stdout."""
    typer.echo(json.dumps(data, indent=2, sort_keys=False))


def warn(msg: str) -> None:
    typer.echo(f"warning: {one_line(msg)}", err=True)  # one line even when it quotes a hostile file


def split_values(values: list[str] | None) -> list[str]:
    """Repeated and comma-separated values, in order."""
    return [x.strip() for v in values or [] for x in v.split(",") if x.strip()]


def engine_for(name: str, *specs) -> str:
    """--engine auto: llama.cpp when a model is a GGUF file (what runs GGUFs natively), else transformers."""
    if name.strip().lower() != "auto":
        return name
    return engines.default_engine(None, gguf=any(s is not None and s.source == "gguf" for s in specs))


def engine_for_machine(name: str, kind: str, source: str | None = None) -> str:
    """--engine auto: the registry's default for the machine kind (a GGUF target: llama.cpp)."""
    if name.strip().lower() == "auto":
        return engines.default_engine(kind, gguf=source == "gguf")
    return engines.canonical(name)


def load_method(ref: str | None, **kw: Any) -> DraftingMethod | None:
    """--draft REF as a drafting method (a separate draft checkpoint), or None without --draft.

    Raises:
        PlannerError: the draft cannot be read (same forms as the target).
    """
    if not ref:
        return None
    return DraftModel(load_spec(ref, **kw), ref)
