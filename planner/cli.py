"""The `planner` command line (typer). Faces only: parse, call, render, exit 0/1/2.

Exit codes (linter convention): 0 = fits / compatible / faster; 1 = computed and
the answer is "no"; 2 = bad input (any PlannerError, or a usage error), one line
on stderr. Data goes to stdout, messages to stderr. Heavy modules (torch,
huggingface_hub, tokenizers) are imported inside the commands that need them.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from .core.constants import is_debug
from .core.errors import PlannerError, one_line

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Plan speculative decoding before you deploy: fit, compatibility, speed-up.")

ModelArg = Annotated[str, typer.Argument(help="Model: local dir, config.json, .gguf, HF id or catalog name.")]
DraftOpt = Annotated[str | None, typer.Option("--draft", "-d", help="Draft model (same forms as the target).")]
ContextOpt = Annotated[str, typer.Option("--context", "-c", help="Tokens per sequence (e.g. 8192 or 8k).")]
BatchOpt = Annotated[int, typer.Option("--batch", "-b", help="Concurrent sequences.", min=1)]
EngineOpt = Annotated[str, typer.Option("--engine", "-e",
                                        help="transformers | vllm | sglang | llama.cpp | mlx (cache layout).")]
KvDtypeOpt = Annotated[str | None, typer.Option("--kv-dtype",
                                                help="KV cache type: auto, f16, bf16, fp8, q8_0, q4_0, ...")]
WeightsDtypeOpt = Annotated[str | None, typer.Option(
    "--weights-dtype", help="Re-size weights as bf16, fp16, fp8, int8, int4 (GPTQ/AWQ), nf4, mxfp4, q8_0, q4_k...")]
GroupSizeOpt = Annotated[int, typer.Option("--group-size", help="Quantisation group size (int4, fp8 blocks).")]
RevisionOpt = Annotated[str | None, typer.Option("--revision", help="Hub revision: branch, tag or commit.")]
OverheadOpt = Annotated[str | None, typer.Option("--overhead", help="Runtime overhead per device, e.g. 1GiB.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (stable schema, bytes as integers).")]


def emit(data: Any) -> None:
    """JSON to stdout."""
    typer.echo(json.dumps(data, indent=2, sort_keys=False))


def warn(msg: str) -> None:
    typer.echo(f"warning: {one_line(msg)}", err=True)  # one line even when it quotes a hostile file


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
