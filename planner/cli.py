"""The `planner` command line (typer). Faces only: parse, call, render, exit 0/1/2.

Exit codes (linter convention): 0 = fits / compatible / faster; 1 = computed and
the answer is "no"; 2 = bad input (any PlannerError, or a usage error), one line
on stderr. Data goes to stdout, messages to stderr. The app and what commands share
live in planner/commands/ (_common.py, _options.py); this module only runs it.

Start-up: a run imports only the module of the command it names (each command module
imports what it needs at its top); help, no command or an unknown one imports them all,
so the listing and the error name every command. Heavy packages (torch, huggingface_hub,
tokenizers, tabulate) are imported inside the functions that need them.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
from typing import Annotated

import typer
import typer.main

from .commands import _fastparse as fastparse
from .commands._common import app
from .core.atomic import forget_inputs
from .core.constants import is_debug
from .core.errors import PlannerError, one_line
from .core.errors import UsageError as PlannerUsage
from .core.version import __version__

__all__ = ["app", "main"]

# One module per command, named like the command (`machines` is a sub-app); help lists them in this order.
COMMAND_MODULES = ("memory", "catalog", "fit", "machines", "probe", "pair", "recommend", "check", "report", "bench")


def _click_exceptions() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """Usage/Abort exception classes of the click typer runs on (vendored `typer._click` or click).

    Only the first that imports: a typer that vendors click never raises the separate package's
    exceptions, and importing click for nothing costs ~5 ms at start-up.
    """
    usage, abort = [], []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        usage += [mod.UsageError] if hasattr(mod, "UsageError") else []
        abort += [mod.Abort] if hasattr(mod, "Abort") else []
        break
    abort.append(typer.Abort)
    return tuple(usage), tuple(abort)


def _modules_for(argv: list[str]) -> tuple[str, ...]:
    """The command modules a run needs: the one its command names, else all of them.

    The command is the first argument: the root's options are --help and --version (main() answers
    `planner --version` before this), and `planner --help memory` (like no command, or an unknown
    one) prints the root help or error, which lists every command.
    """
    first = argv[0] if argv else None
    return (first,) if first in COMMAND_MODULES else COMMAND_MODULES


def _register(names: tuple[str, ...] = COMMAND_MODULES) -> None:
    """Import command modules: each adds its commands to `app` (one module per face)."""
    for name in names:
        importlib.import_module(f"{__package__}.commands.{name}")

    # main() may run many times in one process (tests), importing modules in any order: help keeps this order.
    def rank(info) -> int:
        module = getattr(info.callback, "__module__", "").rpartition(".")[2]
        return COMMAND_MODULES.index(module) if module in COMMAND_MODULES else len(COMMAND_MODULES)

    app.registered_commands.sort(key=rank)


def _version_line() -> str:
    """What `--version` prints: the distribution name and planner/core/version.py's version."""
    return f"spec-planner {__version__}"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(_version_line())
        raise typer.Exit(0)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                                 help="Print 'spec-planner <version>' and exit.")] = False) -> None:
    """The root's only option besides --help (listed in root help); `_print_version` answers it eagerly.

    main() answers a leading --version before importing any command module; this callback answers it
    anywhere else on the root. The root itself does nothing: every answer comes from a command.
    """


def main(argv: list[str] | None = None) -> None:
    """Console entry point (`planner`, `spec-planner`): maps PlannerError to one stderr line and exit 2.

    Ctrl-C anywhere, start-up (imports, registering commands) included, ends quietly with 130.
    """
    try:
        _main(argv)
    except KeyboardInterrupt:
        sys.exit(130)


def _completion_error() -> str | None:
    """Why the shell-completion request in the environment cannot be answered, else None.

    click reads `COMP_CWORD` with a bare int() (shell_completion.py BashComplete.get_completion_args),
    so a non-numeric value from a broken rc file ended as a ValueError; it is one line here instead.
    """
    if not any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return None
    cword = os.environ.get("COMP_CWORD")
    if cword is not None and not (cword.isascii() and cword.isdigit() and len(cword) < 6):
        return f"Cannot complete: COMP_CWORD is {one_line(cword)[:40]!r} (expected the index of the word, e.g. 2)."
    return None


def _main(argv: list[str] | None) -> None:
    usage_errors, aborts = _click_exceptions()
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["--version"]:  # answered before any command module is imported
        typer.echo(_version_line())
        sys.exit(0)
    forget_inputs()  # a new run: only the files this run reads are protected from its outputs
    bad_completion = _completion_error()
    if bad_completion:
        typer.echo(f"error: {bad_completion}", err=True)
        sys.exit(2)
    _register(_modules_for(args))
    # Always a group: the root callback (_root) makes get_command build one even with one command module.
    command = typer.main.get_command(app)  # a group (the root has a callback), with the completion options
    fastparse.install(command)  # plain option values without importing pydantic (start-up)
    with contextlib.suppress(ValueError):  # start-up is over: Ctrl-C is a KeyboardInterrupt again (exit 130)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _refuse_repeats(command, args)
        rc = command(args=args, standalone_mode=False)
    except PlannerError as e:
        if is_debug():
            raise
        typer.echo(f"error: {e}", err=True)
        sys.exit(2)
    except usage_errors as e:
        typer.echo(f"error: {usage_line(e)}", err=True)
        sys.exit(2)
    except aborts:
        typer.echo("aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as e:  # the last line of defence: a bug or an unmapped failure, still one line, exit 2
        if is_debug():
            raise
        typer.echo(f"error: {unexpected_line(e)}", err=True)
        sys.exit(2)
    sys.exit(rc if isinstance(rc, int) else 0)


def _refuse_repeats(command, args: list[str]) -> None:
    """A one-value option given twice (`--machine A --machine B`) is refused, not silently the last one.

    Why: click keeps the last value of a repeated single-value option; a script that appends flags
    would then plan a machine nobody meant, and say nothing. Repeatable options (`multiple`) and
    flags are left alone; what follows `--` is an argument.
    """
    cmd, i = command, 0
    while i < len(args) and hasattr(cmd, "commands") and args[i] in cmd.commands:
        cmd, i = cmd.commands[args[i]], i + 1
    single = {}
    for param in getattr(cmd, "params", ()):
        if getattr(param, "param_type_name", "") == "option" and not (param.multiple or param.is_flag or param.count):
            for name in (*param.opts, *param.secondary_opts):
                single[name] = param.opts[0]
    seen: dict[str, int] = {}
    for tok in args[i:]:
        if tok == "--":
            break
        name = single.get(tok.split("=", 1)[0] if tok.startswith("--") else tok)
        if name is not None:
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                raise PlannerUsage(f"Cannot give {name} more than once: it takes one value (the last would be "
                                   f"used silently). Keep one {name}.")


def usage_line(e: BaseException) -> str:
    """click's usage error as one line: its message and where the help is (click prints three lines).

    Why: the contract of every exit 2 is one `error:` line, whatever the cause; a bad flag value (a
    5000-digit --seed) quotes the value, and a CI log must not take it as several messages.
    """
    fmt = getattr(e, "format_message", None)
    msg = one_line(fmt() if callable(fmt) else str(e))[:500].rstrip(".")
    ctx = getattr(e, "ctx", None)
    path = getattr(ctx, "command_path", None) or "planner"
    return f"{msg}. See '{path} --help'."


def unexpected_line(e: BaseException) -> str:
    """One printable line for an exception that is not a PlannerError: its type, its first line, the debug hint.

    Why: a traceback is not an answer a CI log can use, and a hostile input must not be able to print pages
    (or forge lines) through an unexpected exception; the full traceback is one variable away.
    """
    text = one_line(str(e).split("\n", 1)[0])[:300]
    return (f"Unexpected {type(e).__name__}{': ' + text if text else ''} (a planner bug: please report it). "
            f"Set SPEC_PLANNER_DEBUG=1 to see the traceback.")


if __name__ == "__main__":
    main()
