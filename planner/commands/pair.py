"""`planner pair`: can each engine run DRAFT as TARGET's draft, and if not, what applies instead."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import engines
from ..core.units import parse_tokens
from ..pairing import pair as pairing
from ..render import width
from ..render.width import wrap
from ..sources import load_spec
from ..sources.tokenizer import fingerprint_for
from ._common import app, emit, say, warn
from ._options import JsonOpt, ModelArg, RevisionOpt, WideOpt

PairEngineOpt = Annotated[str | None, typer.Option(
    "--engine", "-e", help="llama.cpp | vllm | transformers | mlx-lm (default: all; exit 1 only if all refuse).")]
PairContextOpt = Annotated[str | None, typer.Option(
    "--context", "-c", help="Deployment context (e.g. 32k): checked against the draft's max context.")]
DraftArg = Annotated[str, typer.Argument(help="Draft model (same forms as the target).")]


@app.command("pair")
def pair_cmd(
    target: ModelArg,
    draft: DraftArg,
    engine: PairEngineOpt = None,
    context: PairContextOpt = None,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Tokenizer compatibility per engine (naming the rule that fails), fallbacks, family and size advice.

    Exit code 1 when the pair is incompatible for --engine (without --engine: for every engine),
    0 otherwise, 2 on bad input.

    \b
    Examples:
      planner pair qwen2.5-7b qwen2.5-0.5b
      planner pair meta-llama/Llama-3.1-8B meta-llama/Llama-3.2-1B-Instruct --engine vllm --json
      planner pair ./target-dir ./draft-dir --context 32k
    """
    width.set_wide(wide)
    names = (engines.canonical(engine),) if engine else engines.names()
    ctx = parse_tokens(context) if context else None
    tspec = load_spec(target, revision=revision)
    dspec = load_spec(draft)
    report = pairing.pair(tspec, dspec, target_tokenizer=fingerprint_for(tspec),
                          draft_tokenizer=fingerprint_for(dspec), context=ctx)
    if as_json:
        emit(pairing.to_json(report))
    else:
        for n in report.notes:
            warn(n)
        say(render(report, names))
    if report.incompatible(names):
        raise typer.Exit(code=1)


def render(report, engines: tuple[str, ...]) -> str:
    """The human view: one row per engine, then tokenizer facts, differences and advice."""
    rows = [[e, "yes" if v.compatible else "NO", v.failed_rule or "-", v.fallback or "-", v.confidence]
            for e in engines for v in (report.verdicts[e],)]
    lines = [f"target: {report.target}", f"draft:  {report.draft}", "",
             width.table(rows, ["engine", "compatible", "failed rule", "fallback", "confidence"], shrink=(3, 2),
                         floor=16, max_word=20), ""]
    for e in engines:
        lines += wrap(f"{e}: {report.verdicts[e].detail}")
    same = {True: "yes", False: "no", None: "unknown"}[report.same_tokenizer]
    ov = report.overlap
    ov_text = (f"{ov.of_draft:.1%} of the draft's {ov.draft_rows} rows ({ov.intersection} shared tokens, "
               f"{ov.basis})" if ov else "unknown")
    lines += ["", *wrap(f"same tokenizer: {same}; vocabulary overlap: {ov_text}; "
                        f"family match: {'yes' if report.family_match else 'no'}")]
    if report.differences:
        lines += ["differences:", *[x for d in report.differences for x in wrap(f"- {d}", indent="  ")]]
    if report.advice:
        lines += ["advice:", *[x for a in report.advice for x in wrap(f"[{a.severity}] {a.message}", indent="  ")]]
    return "\n".join(lines)
