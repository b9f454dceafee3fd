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

from .constants import is_debug
from .errors import PlannerError

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
    typer.echo(f"warning: {msg}", err=True)


@app.command()
def memory(
    model: ModelArg,
    draft: DraftOpt = None,
    context: ContextOpt = "4096",
    batch: BatchOpt = 1,
    engine: EngineOpt = "transformers",
    kv_dtype: KvDtypeOpt = None,
    weights_dtype: WeightsDtypeOpt = None,
    group_size: GroupSizeOpt = 128,
    revision: RevisionOpt = None,
    overhead: OverheadOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Memory ledger of a target (and optional draft): weights, KV cache, activations, overhead.

    Examples:
      planner memory llama-3.1-8b --context 8k
      planner memory Qwen/Qwen2.5-7B-Instruct --draft Qwen/Qwen2.5-0.5B-Instruct --engine vllm --json
      planner memory ./my-model --kv-dtype q8_0 --engine llama.cpp
    """
    from . import memory as mem
    from . import report
    from .sources import load_spec
    from .units import parse_bytes, parse_tokens

    settings = mem.Settings(context=parse_tokens(context), batch=batch, engine=engine, kv_dtype=kv_dtype,
                            weights_dtype=weights_dtype, group_size=group_size,
                            overhead_bytes=parse_bytes(overhead, what="--overhead") if overhead else None)
    target = load_spec(model, revision=revision)
    dspec = load_spec(draft) if draft else None
    warnings = [f"{s.id}: {w}" for s in (target, dspec) if s for w in s.warnings]
    ledger = mem.ledger(target, settings, dspec)
    if as_json:
        emit(report.ledger_json(ledger, warnings))
        return
    for w in warnings:
        warn(w)
    typer.echo(report.ledger_table(ledger))


@app.command("catalog")
def catalog_cmd(as_json: JsonOpt = False) -> None:
    """List the bundled models (usable offline by id or alias).

    Examples:
      planner catalog
      planner catalog --json
    """
    from tabulate import tabulate

    from .sources import catalog

    rows = [{"id": e["id"], "aliases": e.get("aliases", []), "family": e.get("family"),
             "source": e.get("source")} for e in catalog.entries()]
    if as_json:
        emit(rows)
        return
    typer.echo(tabulate([[r["id"], ", ".join(r["aliases"]), r["family"]] for r in rows],
                        headers=["id", "aliases", "family"]))


def main(argv: list[str] | None = None) -> None:
    """Console entry point: maps PlannerError to one stderr line and exit 2."""
    import click

    try:
        rc = app(args=argv, standalone_mode=False)
    except PlannerError as e:
        if is_debug():
            raise
        typer.echo(f"error: {e}", err=True)
        sys.exit(2)
    except click.exceptions.UsageError as e:
        e.show()
        sys.exit(2)
    except click.exceptions.Abort:
        typer.echo("aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
