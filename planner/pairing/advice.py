"""Advice: what a pair's lineage, sizes, MoE routing, context and vocabularies mean for speed.

Its own module because advice is judgement over facts the other modules establish (same
tokenizer, family, sizes, the heterogeneous-vocabulary fallbacks) and never changes an engine's
verdict; each item carries a severity and a code the report and the JSON schema name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..core.constants import (
    PAIR_DRAFT_RATIO_MAX,
    PAIR_DRAFT_RATIO_TYPICAL,
    PAIR_DRAFT_RATIO_WARN,
    PAIR_DRAFT_TYPICAL_PARAMS,
)
from ..core.spec import ModelSpec
from ..engines.base import Side, Verdict
from .heterogeneous import Heterogeneous

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Advice:
    severity: str  # error | warning | info
    code: str  # family, instruct, chat_template, draft_size, moe, context, vocabulary, heterogeneous
    message: str


def _norm_family(f: str | None) -> str:
    return "".join(ch for ch in (f or "").lower() if ch.isalnum())


def family_match(target: ModelSpec, draft: ModelSpec, same_tokenizer: bool | None) -> bool:
    """Same family tag, or the same architecture with the same tokenizer (one lineage)."""
    if target.family and draft.family and _norm_family(target.family) == _norm_family(draft.family):
        return True
    return bool(same_tokenizer) and target.model_type == draft.model_type


def _b(n: int) -> str:
    return f"{n / 1e9:.2f}B"


def size_advice(target: ModelSpec, draft: ModelSpec) -> list[Advice]:
    """The draft's size against the target's (active) parameters and against typical drafts."""
    out = []
    t_act, d_act = target.params_active, draft.params_active
    ratio = d_act / t_act if t_act else float("inf")
    basis = "active " if target.moe else ""
    if d_act >= t_act:
        out.append(Advice("error", "draft_size", f"draft ({_b(d_act)} active) is not smaller than the target's "
                          f"{basis}parameters ({_b(t_act)}): a draft step costs as much as a target step, so "
                          f"speculation cannot be faster"))
    elif ratio > PAIR_DRAFT_RATIO_MAX:
        out.append(Advice("error", "draft_size", f"draft larger than useful: {_b(d_act)} is {ratio:.0%} of the "
                          f"target's {basis}{_b(t_act)}; even perfect acceptance caps the speed-up below 2x"))
    elif ratio > PAIR_DRAFT_RATIO_WARN:
        out.append(Advice("warning", "draft_size", f"draft is {ratio:.0%} of the target's {basis}parameters "
                          f"({_b(d_act)} of {_b(t_act)}); useful drafts are well under a tenth, and each draft "
                          f"step here costs about {ratio:.0%} of a target step"))
    elif ratio > PAIR_DRAFT_RATIO_TYPICAL:
        out.append(Advice("info", "draft_size", f"draft is {ratio:.0%} of the target's {basis}parameters "
                          f"({_b(d_act)} of {_b(t_act)}): above the usual tenth, gains shrink as the draft grows "
                          f"(Llama-3.1-8B + 3.2-1B at 15% still gave 1.71x in llama.cpp #5877)"))
    else:
        out.append(Advice("info", "draft_size", f"draft is {ratio:.1%} of the target's {basis}parameters "
                          f"({_b(d_act)} of {_b(t_act)}): within the usual range (under a tenth)"))
    lo, hi = PAIR_DRAFT_TYPICAL_PARAMS
    total = draft.params_total
    if total > hi:
        out.append(Advice("warning", "draft_size", f"draft has {_b(total)} parameters; drafts are typically "
                          f"{_b(lo)}-{_b(hi)}: a smaller one of the same family usually drafts faster"))
    elif total < lo:
        out.append(Advice("info", "draft_size", f"draft has {_b(total)} parameters, below the usual "
                          f"{_b(lo)}-{_b(hi)}: cheap steps, but acceptance is often low (SmolLM2-1.7B + 135M "
                          f"ran 30% slower in vLLM, issue #15025)"))
    return out


def moe_advice(target: ModelSpec, k_hint: int = 4) -> list[Advice]:
    """For a MoE target: size against active parameters; verification touches more experts."""
    moe = target.moe
    if moe is None:
        return []
    # Verifying K+1 tokens routes each to top_k experts: up to min(E, (K+1)*top_k) experts per layer are
    # read, against top_k for one decode step, so verification costs more than on a dense model.
    touched = min(moe.experts, (k_hint + 1) * moe.experts_per_token)
    return [Advice("warning", "moe", f"MoE target: a decode step reads {_b(target.params_active)} active of "
                   f"{_b(target.params_total)} parameters, so size the draft against the active count; verifying "
                   f"K+1 tokens touches up to {touched} of {moe.experts} experts per layer (K={k_hint}, top-"
                   f"{moe.experts_per_token}) instead of {moe.experts_per_token}, which erodes the gain")]


def context_advice(target: ModelSpec, draft: ModelSpec, context: int | None) -> list[Advice]:
    """The draft's max context against the deployment context (default: the target's max)."""
    want = context or target.max_context
    what = "deployment context" if context else "target's max context"
    if draft.max_context >= want:
        return [Advice("info", "context", f"draft max context {draft.max_context} >= {what} {want}")]
    return [Advice("warning" if context else "info", "context",
                   f"draft max context {draft.max_context} < {what} {want}: past {draft.max_context} tokens the "
                   f"draft runs beyond its trained positions (acceptance falls) or the engine caps the draft's "
                   f"context (llama.cpp -cd, vLLM draft max_model_len)")]


def lineage_advice(t: Side, d: Side, fam: bool, same: bool | None) -> list[Advice]:
    """Family, instruct/base, chat template, and equal vocab sizes hiding different tokenizers."""
    out = []
    tfam, dfam = t.spec.family or t.spec.model_type, d.spec.family or d.spec.model_type
    if fam:
        out.append(Advice("info", "family", f"same family/lineage ({tfam})"))
    else:
        out.append(Advice("warning", "family", f"different families ({tfam} vs {dfam}): drafts from another "
                          f"lineage predict the target worse; prefer a small model of the target's family"))
    ti, di = t.spec.instruct, d.spec.instruct
    if ti and di is False:
        out.append(Advice("warning", "instruct", "instruct target with a base draft: the draft has not learnt the "
                          "chat format, so acceptance drops on chat prompts; use the draft's instruct variant"))
    elif ti is False and di:
        out.append(Advice("warning", "instruct", "base target with an instruct draft: the draft is tuned to "
                          "answer in chat style; use the base variant for completion workloads"))
    tf, df = t.fp, d.fp
    if tf and df and tf.chat_template_hash and df.chat_template_hash and tf.chat_template_hash != df.chat_template_hash:
        out.append(Advice("warning", "chat_template", "chat templates differ: a prompt formatted for the target "
                          "looks foreign to the draft, lowering acceptance on chat traffic"))
    elif tf and df and tf.has_chat_template and df.has_chat_template is False:
        out.append(Advice("warning", "chat_template", "the target has a chat template and the draft none "
                          "(a base model): acceptance drops on chat prompts"))
    if same is False and t.spec.vocab == d.spec.vocab:
        out.append(Advice("error", "vocabulary", "same config vocab_size but different tokenizers: vLLM, "
                          "transformers and mlx-lm accept this pair, yet each draft id means another string to "
                          "the target and nearly every draft is rejected"))
    return out


def hetero_advice(h: Heterogeneous, same: bool | None, verdicts: Mapping[str, Verdict]) -> Advice:
    """Who refuses the plain algorithm, the overlap, and what the fallbacks (SLEM / TLI) cost."""
    refused = [e for e, v in verdicts.items() if not v.compatible]
    ov = f"vocabulary overlap {h.overlap.of_draft:.1%} of the draft's rows" if h.overlap else "overlap unknown"
    est = h.tli_acceptance
    cost = ""
    if est is not None and est.value is not None:
        cost = f"; published TLI acceptance suggests about {est.value:.0%} ({est.detail})"
    elif est is not None and est.upper is not None:
        cost = f"; {est.detail}"
    ref = h.homogeneous_reference
    if ref is not None and cost:
        cost += (f", against ~{float(ref['acceptance']):.0%} for a same-vocabulary pair ({ref['draft']} -> "
                 f"{str(ref['target']).split(' ')[0]})")
    who = f"{', '.join(refused)} refuse the plain algorithm" if refused else "the tokenizers differ"
    sev = "warning" if same is not False or (h.overlap and h.overlap.of_draft >= 0.9) else "error"
    return Advice(sev, "heterogeneous", f"{who}: {ov}; SLEM (greedy) or TLI (sampling; vLLM: greedy drafting "
                  f"only) apply{cost}")

