"""The `planner` command line (typer). Faces only: parse, call, render, exit 0/1/2.

Exit codes (linter convention): 0 = fits / compatible / faster; 1 = computed and
the answer is "no"; 2 = bad input (any PlannerError, or a usage error), one line
on stderr. Data goes to stdout, messages to stderr. The app and what commands share
live in planner/commands/ (_common.py, _options.py); this module only runs it.

Start-up: `--version`, the root's `--help` (planner/commands/_fasthelp.py) and a plainly well-formed
`memory` line (planner/commands/_fastcli.py) are answered without importing typer at all (issue #33:
typer and click are ~40% of a ledger's start-up); any other run imports typer and only the module of the command it names (each command module imports what it needs at
its top); help, no command or an unknown one imports them all, so the listing and the error name every
command. Heavy packages (torch, huggingface_hub, tokenizers, tabulate) are imported inside the functions
that need them.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from .commands import _fastcli
from .commands._echo import echo, plain_stream, version_line
from .core.atomic import forget_inputs
from .core.constants import is_debug
from .core.errors import PlannerError, one_line
from .core.errors import UsageError as PlannerUsage

__all__ = ["main"]  # and `app`, the typer app, built on first use (__getattr__ below)

# One module per command, named like the command (`machines` is a sub-app); help lists them in this order.
COMMAND_MODULES = ("memory", "catalog", "fit", "machines", "probe", "pair", "recommend", "check", "report", "bench")
# Commands whose plain argv runs without typer: the module holding its `FAST` (a _fastcli.FastCommand).
FAST_COMMANDS = {"memory": "_ledger"}


def __getattr__(name: str) -> Any:
    """`planner.cli.app`, the typer app, imported on first use (a fast-path run never builds it)."""
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _app() -> Any:
    from .commands._common import app

    return app


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
    import typer

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
    app = _app()
    for name in names:
        importlib.import_module(f"{__package__}.commands.{name}")

    # main() may run many times in one process (tests), importing modules in any order: help keeps this order.
    def rank(info) -> int:
        module = getattr(info.callback, "__module__", "").rpartition(".")[2]
        return COMMAND_MODULES.index(module) if module in COMMAND_MODULES else len(COMMAND_MODULES)

    app.registered_commands.sort(key=rank)


def main(argv: list[str] | None = None) -> None:
    """Console entry point (`planner`, `spec-planner`): maps PlannerError to one stderr line and exit 2.

    Ctrl-C anywhere, start-up (imports, registering commands) included, ends quietly with 130.
    """
    try:
        _main(argv)
    except KeyboardInterrupt:
        sys.exit(130)


def _completing() -> bool:
    """A shell-completion request is in the environment (click answers it, whatever the arguments)."""
    return any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ)


def _completion_error() -> str | None:
    """Why the shell-completion request in the environment cannot be answered, else None.

    click reads `COMP_CWORD` with a bare int() (shell_completion.py BashComplete.get_completion_args),
    so a non-numeric value from a broken rc file ended as a ValueError; it is one line here instead.
    """
    if not _completing():
        return None
    cword = os.environ.get("COMP_CWORD")
    if cword is not None and not (cword.isascii() and cword.isdigit() and len(cword) < 6):
        return f"Cannot complete: COMP_CWORD is {one_line(cword)[:40]!r} (expected the index of the word, e.g. 2)."
    return None


def _main(argv: list[str] | None) -> None:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["--version"]:  # answered before typer or any command module is imported
        echo(version_line())
        sys.exit(0)
    forget_inputs()  # a new run: only the files this run reads are protected from its outputs
    bad_completion = _completion_error()
    if bad_completion:
        echo(f"error: {bad_completion}", err=True)
        sys.exit(2)
    if args == ["--help"] and plain_stream(sys.stdout) and not _completing():
        from .commands._fasthelp import root_help  # the root's page without typer or any command module

        page = root_help()
        if page is not None:
            echo(page)
            sys.exit(0)
    fast = _fast_call(args)
    if fast is not None:
        _started()
        _guarded(fast)
        sys.exit(0)
    usage_errors, aborts = _click_exceptions()
    import typer.main

    from .commands import _fastparse as fastparse

    _register(_modules_for(args))
    # Always a group: the root callback (_common._root) makes get_command build one even with one command module.
    command = typer.main.get_command(_app())  # a group (the root has a callback), with the completion options
    fastparse.install(command)  # plain option values without importing pydantic (start-up)
    _started()

    def invoke() -> Any:
        _refuse_repeats(command, args)
        return command(args=args, standalone_mode=False)

    rc = _guarded(invoke, usage_errors, aborts)
    sys.exit(rc if isinstance(rc, int) else 0)


def _started() -> None:
    """Start-up is over: Ctrl-C is a KeyboardInterrupt again (exit 130), not planner/__init__.py's quiet exit."""
    with contextlib.suppress(ValueError):  # not the main thread: leave Python's handler
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _fast_call(args: list[str]) -> Callable[[], Any] | None:
    """The run of a command line _fastcli parses without typer (with its values bound), else None.

    Only on plain streams: click re-wraps an ASCII-encoded stdout or stderr (planner/commands/_output.py).
    """
    module = FAST_COMMANDS.get(args[0]) if args else None
    if module is None or not (plain_stream(sys.stdout) and plain_stream(sys.stderr)):
        return None
    face = importlib.import_module(f"{__package__}.commands.{module}")
    values = _fastcli.parse(args, face.FAST)
    if values is None:
        return None
    kwargs = {**face.DEFAULTS, **values}
    return lambda: face.FAST.run(**kwargs)


class _QuietFlush:
    """A stream whose flush and write ignore a closed pipe (click's PacifyFlushWrapper): exit 1 stays quiet."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        with contextlib.suppress(OSError):
            return self._stream.write(text)
        return 0

    def flush(self) -> None:
        with contextlib.suppress(OSError):
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _guarded(call: Callable[[], Any], usage_errors: tuple[type[BaseException], ...] = (),
             aborts: tuple[type[BaseException], ...] = ()) -> Any:
    """`call()`, every failure mapped to the CLI's contract: one stderr line and exit 2 (130 for Ctrl-C).

    The typer path passes click's usage and abort exceptions; the fast path raises none of them, and maps
    what typer's own main would have (typer/core.py `_main`): Ctrl-C is 130, an end of input "aborted",
    a closed stdout pipe a quiet exit 1.
    """
    try:
        return call()
    except PlannerError as e:
        if is_debug():
            raise
        echo(f"error: {e}", err=True)
        sys.exit(2)
    except usage_errors as e:
        echo(f"error: {usage_line(e)}", err=True)
        sys.exit(2)
    except aborts:
        echo("aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except SystemExit:
        raise
    except EOFError:  # as typer's main: an empty line, then its Abort
        echo("", err=True)
        echo("aborted", err=True)
        sys.exit(130)
    except OSError as e:
        if e.errno != errno.EPIPE:
            return _unexpected(e)
        sys.stdout, sys.stderr = _QuietFlush(sys.stdout), _QuietFlush(sys.stderr)  # type: ignore[assignment]
        sys.exit(1)
    except Exception as e:  # the last line of defence: a bug or an unmapped failure, still one line, exit 2
        return _unexpected(e)


def _unexpected(e: Exception) -> Any:
    if is_debug():
        raise e
    echo(f"error: {unexpected_line(e)}", err=True)
    sys.exit(2)


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
