"""A draft model's acceptance prior that moves with what the published spread moves with.

Why: one alpha per family pair hides the spread users see. In the published sweeps alpha follows
the draft's own size (0.5B vs 1.5B Qwen2.5 drafts: 0.86 vs 0.92 for a 14B and a 72B target alike),
drops a little for a base draft of an instruct target, and barely moves with the draft's
quantisation down to 4 bits. Workload and sampling temperature have no controlled published
measurement for separate drafts, so they widen the interval instead of moving its centre, except where
the engine keeps a sampled draft token only when the target's sample equals it (llama.cpp, mlx-lm:
`sampled_alpha`), which lowers acceptance by a stated model.

Mechanism (catalogs/acceptance.json holds every number with its source):
  1. each catalogs/pairs entry's alpha is normalised to the reference conditions (draft at or above
     the saturation size, matching instruct/base style, FP16 draft, chat, greedy) by removing the
     adjustments its own conditions imply: a_ref = a - shift(entry);
  2. the family pair's normalised values are pooled: the median of each publication's median (one sweep's
     many rows share a machine, a tool and prompts: one draw, not many), else every same-family value;
  3. the query's shift is added back: a = median(a_ref) + shift(query), and the interval is
     a +/- half_width * sqrt(1 + 1/n) (a prediction interval for one new measurement from n),
     widened on the side each thin adjustment names.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..core import memo
from ..core.constants import PRIOR_CROSS_FAMILY, PRIOR_CROSS_FAMILY_SOURCE, catalog_dir
from ..core.errors import ConfigError
from ..core.jsonio import read_json
from ..core.spec import ModelSpec
from ..engines.base import SampledRule
from . import acceptance as acc
from .model import Acceptance

WORKLOADS = ("chat", "code", "reasoning")


@dataclass(frozen=True)
class Conditions:
    """What a draft's acceptance depends on; None = not known (no adjustment for it)."""

    draft_params: int | None = None
    target_instruct: bool | None = None
    draft_instruct: bool | None = None
    draft_quant: str | None = None  # planner dtype name: fp16, q8_0, q4_k, int4 ...
    workload: str | None = None  # chat | code | reasoning (None: chat, the catalogued prompts)
    temperature: float | None = None  # None: greedy or engine default, as the catalogued entries
    rule: SampledRule | None = None  # Engine.sampled_acceptance (None: rejection)


@dataclass(frozen=True)
class Shift:
    """The adjustments one set of conditions implies: centre delta, extra width each side, why."""

    delta: float = 0.0
    widen_low: float = 0.0
    widen_high: float = 0.0
    notes: tuple[str, ...] = ()


def adjustments() -> Mapping[str, Any]:
    """catalogs/acceptance.json, validated for the keys this module reads.

    Raises:
        ConfigError: the file is missing a section.
    """
    return _adjustments(str(catalog_dir() / "acceptance.json"))


def shift(c: Conditions, table: Mapping[str, Any] | None = None) -> Shift:
    """Sum of the catalogued adjustments for conditions `c` (each one a hand-checkable term)."""
    t = adjustments() if table is None else table
    parts = [_size_term(c, t["draft_size"]), _style_term(c, t["style_mismatch"]),
             _quant_term(c, t["draft_quant"]), _workload_term(c, t["workload"]),
             _temperature_term(c, t["temperature"])]
    return Shift(delta=sum(p.delta for p in parts), widen_low=sum(p.widen_low for p in parts),
                 widen_high=sum(p.widen_high for p in parts), notes=tuple(n for p in parts for n in p.notes))


def prior(target_family: str | None, draft_family: str | None, c: Conditions, *,
          pairs: Sequence[acc.PairEntry] | None = None, table: Mapping[str, Any] | None = None) -> Acceptance:
    """The acceptance prior for a family pair under conditions `c`, labelled with every term used.

    Example:
        >>> prior("qwen2.5", "qwen2.5", Conditions(draft_params=494_032_768)).alpha < \\
        ...     prior("qwen2.5", "qwen2.5", Conditions(draft_params=1_543_714_304)).alpha
        True
    """
    if pairs is None and table is None:  # the bundled catalogs: one prior per value, shared by every machine
        return _catalog_prior(target_family, draft_family, c, str(catalog_dir()))
    return _prior(target_family, draft_family, c, acc.load_pairs() if pairs is None else tuple(pairs),
                  adjustments() if table is None else table)


@memo.cached(maxsize=4096)
def _catalog_prior(target_family: str | None, draft_family: str | None, c: Conditions, directory: str) -> Acceptance:
    """`prior` on the catalogs in `directory` (part of the key: SPEC_PLANNER_CATALOG may move them)."""
    return _prior(target_family, draft_family, c, acc.load_pairs(), adjustments())


def _prior(target_family: str | None, draft_family: str | None, c: Conditions,
           entries: Sequence[acc.PairEntry], t: Mapping[str, Any]) -> Acceptance:
    tf, df = acc.lineage(target_family), acc.lineage(draft_family)
    exact = [e for e in entries if acc.lineage(e.target_family) == tf and acc.lineage(e.draft_family) == df]
    pool, extra = _normalised(exact, t), 0.0
    label = f"{len(pool)} published {target_family} + {draft_family}"
    if not (tf and df and pool) and tf and tf == df:
        same = [e for e in entries if acc.lineage(e.target_family) == acc.lineage(e.draft_family)]
        pool, extra = _normalised(same, t), float(t["interval"]["no_pair_widen"])
        label = f"family default: no {target_family} pair measured; {len(pool)} same-family"
    if not (tf and df and pool):
        a, lo, hi = PRIOR_CROSS_FAMILY
        what = "unknown family" if not (tf and df) else f"cross-family {target_family} + {draft_family}"
        return Acceptance(a, lo, hi, given=f"assumed default ({what})", source=PRIOR_CROSS_FAMILY_SOURCE)
    return matched_sampling(_summarise(pool, shift(c, t), float(t["interval"]["half_width"]) + extra, label), c, t)


def conditions_for(target: ModelSpec, draft: ModelSpec, *, draft_quant: str | None = None,
                   workload: str | None = None, temperature: float | None = None,
                   rule: SampledRule | None = None) -> Conditions:
    """The conditions of a planned pair, from the specs as loaded (size from the header, instruct/base as
    the source decided it: ModelSpec.instruct, the same flag pairing/advice.py warns on)."""
    return Conditions(draft_params=draft.params_total or None, target_instruct=_spec_style(target),
                      draft_instruct=_spec_style(draft), draft_quant=draft_quant, workload=workload,
                      temperature=temperature, rule=rule)


def conditions_of(entry: acc.PairEntry) -> Conditions:
    """The conditions of a catalogued entry, parsed from its published model names."""
    return Conditions(draft_params=params_from_name(entry.draft), target_instruct=instruct_style(entry.target),
                      draft_instruct=instruct_style(entry.draft), draft_quant=quant_from_name(entry.draft),
                      temperature=entry.temperature)


# --- name parsing (published names: 'Qwen2.5-0.5B-Instruct Q8_0 (GGUF)', 'double7/vicuna-68m') ---

_SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", re.IGNORECASE)
_INSTRUCT = re.compile(r"instruct|-chat\b|-it\b|r1-distill|\bchat\b|vicuna", re.IGNORECASE)
_BASE = re.compile(r"\bbase\b|-base\b", re.IGNORECASE)
_QUANTS = (("q8_0", r"q8_0|8-?bit"), ("q6_k", r"q6_k"), ("q5_k", r"q5_k"), ("q5_0", r"q5_0"),
           ("q4_k", r"q4_k|iq4"), ("q4_0", r"q4_0"), ("int4", r"4-?bit"), ("q3_k", r"q3_k"), ("q2_k", r"q2_k"),
           ("fp16", r"f16|fp16|bf16"))


def params_from_name(name: str) -> int | None:
    """'Qwen2.5-0.5B-Instruct' -> 500_000_000, 'vicuna-68m' -> 68_000_000; the first size named (later
    ones are asides: 'Qwen3-0.6B (also 1.7B, 4B)')."""
    found = _SIZE.findall(name.split("/")[-1] if "/" in name else name)
    if not found:
        return None
    value, unit = found[0]
    return int(float(value) * (1e9 if unit.lower() == "b" else 1e6))


def instruct_style(name: str) -> bool | None:
    """True for instruct/chat tunes, False for a name that says base, None when the name says neither."""
    if _BASE.search(name):
        return False
    return True if _INSTRUCT.search(name) else None


def _spec_style(spec: ModelSpec) -> bool | None:
    return None if spec.instruct is None else bool(spec.instruct)


def quant_from_name(name: str) -> str | None:
    low = name.lower()
    return next((q for q, pat in _QUANTS if re.search(pat, low)), None)


# --- the terms ------------------------------------------------------------------------------

def _size_term(c: Conditions, t: Mapping[str, Any]) -> Shift:
    # delta = -per_decade * log10(saturation / draft_params) below the saturation size, 0 above
    sat, slope = float(t["saturation_params"]), float(t["per_decade"])
    if not c.draft_params or c.draft_params >= sat:
        return Shift()
    d = -slope * math.log10(sat / c.draft_params)
    return Shift(delta=d, notes=(f"draft {c.draft_params / 1e9:.2g}B under {sat / 1e9:g}B: {d:+.3f}",))


def _style_term(c: Conditions, t: Mapping[str, Any]) -> Shift:
    if c.target_instruct is None or c.draft_instruct is None or c.target_instruct == c.draft_instruct:
        return Shift()
    return Shift(delta=float(t["delta"]), widen_low=float(t["widen_low"]), widen_high=float(t["widen_high"]),
                 notes=(f"instruct/base mismatch: {float(t['delta']):+.2f}, thin evidence (one pair)",))


def _quant_term(c: Conditions, t: Mapping[str, Any]) -> Shift:
    q = (c.draft_quant or "").lower()
    d, w = float(t["delta"].get(q, 0.0)), float(t["widen_low"].get(q, 0.0))
    if not (d or w):
        return Shift()
    return Shift(delta=d, widen_low=w, notes=(f"draft at {q}: {d:+.3f}, low side -{w:.3f}",))


def _workload_term(c: Conditions, t: Mapping[str, Any]) -> Shift:
    w = t.get(c.workload or "chat")
    if not w or not (w["delta"] or w["widen_low"] or w["widen_high"]):
        return Shift()
    return Shift(delta=float(w["delta"]), widen_low=float(w["widen_low"]), widen_high=float(w["widen_high"]),
                 notes=(f"workload {c.workload}: no same-pair published acceptance, interval widened",))


def _temperature_term(c: Conditions, t: Mapping[str, Any]) -> Shift:
    if c.temperature is None or c.temperature <= float(t["greedy_max"]):
        return Shift()
    s = t["sampling"]
    return Shift(delta=float(s["delta"]), widen_low=float(s["widen_low"]), widen_high=float(s["widen_high"]),
                 notes=(f"sampling at temperature {c.temperature:g}: low side widened",))


# a sampled draft token is kept with probability E[c^m]: m = 3 where both models sample and the tokens must be
# equal ("match": mlx-lm), m = 2 where the draft proposes its top token and the target's sample must equal it
# ("target": llama.cpp); lossless rejection sampling ("rejection") keeps the greedy alpha
SAMPLED_MOMENT = {"match": 3, "target": 2}


def sampled_alpha(alpha: float, temperature: float, kappa: float, full_at: float, moment: int) -> float:
    """alpha where a drafted token is kept only when the target's sample equals it.

    Why: greedy verification keeps a token when the argmaxes agree (alpha); sampled, the target's own draw
    must land on the drafted token. Take the draft's top-1 probability c ~ Beta(kappa alpha, kappa (1 - alpha))
    (the law speed/adaptive.py prices --draft-p-min with), a calibrated draft (the argmaxes agree with
    probability c) and a target about as sure (p_top ~ c): the target's sample hits the draft's top token with
    probability ~ c * c (moment 2); when the draft samples too, its own draw is its top token with probability
    ~ c, so ~ c^3 (moment 3). E[c^m] = prod_j (k alpha + j) / (k + j), j < m. Greedy (T = 0) keeps alpha; the
    drop grows linearly with the temperature to its full size at `full_at` (assumed).

    Example:
        >>> round(sampled_alpha(0.8, 1.0, 1.5, 1.0, 3), 4)  # 0.8 x 2.2 x 3.2 / (2.5 x 3.5)
        0.6437
    """
    moment_value = 1.0
    for j in range(moment):
        moment_value *= (kappa * alpha + j) / (kappa + j)
    return alpha - min(1.0, max(0.0, temperature) / full_at) * (alpha - moment_value)


def matched_sampling(a: Acceptance, c: Conditions, t: Mapping[str, Any]) -> Acceptance:
    """The prior under an engine that keeps a sampled draft token only when the target's sample equals it
    (Engine.sampled_acceptance "match" or "target"); unchanged for greedy decoding and rejection sampling."""
    temp = t["temperature"]
    moment = SAMPLED_MOMENT.get(c.rule or "")
    if moment is None or c.temperature is None or c.temperature <= float(temp["greedy_max"]):
        return a
    kappa, full_at = float(t["confidence"]["kappa"]), float(temp["sampled_rule"]["full_at"])
    lo, mid, hi = (sampled_alpha(x, c.temperature, kappa, full_at, moment) for x in (a.low, a.alpha, a.high))
    who = "both models sample" if c.rule == "match" else "the target samples"
    return Acceptance(alpha=mid, low=lo, high=hi, source=a.source,
                      given=f"{a.given}; {who} at temperature {c.temperature:g} and a drafted token is kept only "
                            f"when the target's sample equals it: {a.alpha:.3f} -> {mid:.3f} (assumed model, "
                            f"catalogs/acceptance.json temperature.sampled_rule)")


# --- pooling ----------------------------------------------------------------------------------

def _normalised(entries: Sequence[acc.PairEntry], t: Mapping[str, Any]) -> list[tuple[float, acc.PairEntry]]:
    out = []
    for e in entries:
        a = acc.entry_acceptance(e)
        if a is not None:
            out.append((a.alpha - shift(conditions_of(e), t).delta, e))
    return out


def _summarise(pool: list[tuple[float, acc.PairEntry]], s: Shift, half_width: float, label: str) -> Acceptance:
    vals = sorted(a for a, _ in pool)
    by_pub: dict[str, list[float]] = {}
    for a, e in pool:
        by_pub.setdefault(source_key(e), []).append(a)
    median = statistics.median(statistics.median(v) for v in by_pub.values())
    centre = min(0.99, max(0.01, median + s.delta))
    # prediction interval for a measurement from a new source, n = independent publications pooled
    # (rows of one sweep share a machine, a tool and prompts): half * sqrt(1 + 1/n)
    pubs = sorted({source_key(e) for _, e in pool})
    half = half_width * math.sqrt(1.0 + 1.0 / len(pubs))
    lo, hi = max(0.0, centre - half - s.widen_low), min(1.0, centre + half + s.widen_high)
    terms = "; ".join(s.notes) if s.notes else "reference conditions"
    thin = " (thin evidence: one publication)" if len(pubs) == 1 else ""
    return Acceptance(alpha=centre, low=min(lo, centre), high=max(hi, centre),
                      given=f"median of {len(vals)} normalised alpha(s) from {len(pubs)} publication(s) "
                            f"{median:.3f}; {terms}{thin}",
                      source=f"catalog: {label} measurement(s), adjusted (catalogs/acceptance.json) "
                             f"({'; '.join(pubs[:3])}{' ...' if len(pubs) > 3 else ''})")


def source_key(entry: acc.PairEntry) -> str:
    """The publication an entry comes from: its source up to the first space, a GitHub address cut to
    owner/repo/kind/number, a paper to 'arXiv NNNN' (draftbench's 14B and 72B files are one publication: one machine, one tool)."""
    words = entry.source.split(" ")
    if words[0].startswith("https://github.com/"):
        return "/".join(words[0].split("/")[:7])  # https://github.com/owner/repo/issues/N
    return words[0] if words[0].startswith("http") else " ".join(words[:2]).rstrip(",;")  # 'arXiv 2607.17283'


_SECTIONS = ("draft_size", "style_mismatch", "draft_quant", "workload", "temperature", "interval", "confidence")


@lru_cache(maxsize=2)
def _adjustments(path: str) -> Mapping[str, Any]:
    data = read_json(path, what="acceptance adjustments catalog")
    missing = [k for k in _SECTIONS if not isinstance(data, Mapping) or not isinstance(data.get(k), Mapping)]
    if missing:
        raise ConfigError(f"Cannot read acceptance adjustments '{path}': missing section(s) {', '.join(missing)}. "
                          f"Restore the bundled catalog.", path, key=missing[0])
    return data
