"""The `planner` command line (typer). Faces only: parse, call, render, exit 0/1/2.

Exit codes (linter convention): 0 = fits / compatible / faster; 1 = computed and
the answer is "no"; 2 = bad input (any PlannerError, or a usage error), one line
on stderr. Data goes to stdout, messages to stderr. Heavy modules (torch,
huggingface_hub, tokenizers) are imported inside the commands that need them. The app and
what commands share live in planner/commands/ (_common.py, _options.py); this module only runs it.
"""

from __future__ import annotations

import sys

import typer

from .commands._common import app
from .core.constants import is_debug
from .core.errors import PlannerError

__all__ = ["app", "main"]


def _click_exceptions() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """Usage/Abort exception classes of the click typer runs on (vendored `typer._click` or click)."""
    import importlib

    usage, abort = [], []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        usage += [mod.UsageError] if hasattr(mod, "UsageError") else []
        abort += [mod.Abort] if hasattr(mod, "Abort") else []
    abort.append(typer.Abort)
    return tuple(usage), tuple(abort)


def _register() -> None:
    """Import command modules: each adds its commands to `app` (one module per face)."""
    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(f"{__package__}.commands.{name}")


COMMAND_MODULES = ("memory", "catalog", "fit", "machines", "probe", "pair", "recommend", "check", "report", "bench")


def main(argv: list[str] | None = None) -> None:
    """Console entry point: maps PlannerError to one stderr line and exit 2."""
    usage_errors, aborts = _click_exceptions()
    _register()
    try:
        rc = app(args=argv, standalone_mode=False)
    except PlannerError as e:
        if is_debug():
            raise
        typer.echo(f"error: {e}", err=True)
        sys.exit(2)
    except usage_errors as e:
        e.show()
        sys.exit(2)
    except aborts:
        typer.echo("aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
