"""Acceptance rates: every published or measured convention converted to Leviathan's alpha.

Why: engines and papers report acceptance four different ways, and they are not
interchangeable. llama.cpp's "accept %" and vLLM's "draft acceptance rate" fall
with K at a constant alpha; vLLM's and Spec-Bench's mean acceptance length
includes the bonus token. The speed model needs alpha, so every number is
converted here, by code, and the `Acceptance` it yields says which convention
was given and where the number came from.

Conventions (docs/speed.md "Acceptance"):
  alpha                 mean over positions of sum_x min(p(x), q(x)) = 1 - TV(p, q)   (Leviathan et al. 2023)
  greedy_match          P(argmax q = argmax p): alpha of greedy (temperature 0) verification
  accepted_per_drafted  accepted / drafted at K = alpha (1 - alpha**K) / ((1 - alpha) K)
  tau                   mean tokens per round = E(K) = (1 - alpha**(K+1)) / (1 - alpha), bonus included

Priors for pairs nobody has measured come from catalogs/pairs/*.json (published
measurements, each stored raw with its convention) via `prior_for`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core import memo
from ..core.constants import (
    PRIOR_CROSS_FAMILY,
    PRIOR_CROSS_FAMILY_SOURCE,
    PRIOR_MIN_HALF_WIDTH,
    PRIOR_SAME_FAMILY,
    PRIOR_SAME_FAMILY_SOURCE,
    catalog_dir,
)
from ..core.errors import ConfigError, UsageError
from ..core.jsonio import is_finite_number, read_json
from .model import Acceptance
from .rounds import alpha_for_expected, bisect_increasing, expected_accepted

ALPHA, GREEDY_MATCH, ACCEPTED_PER_DRAFTED, TAU = "alpha", "greedy_match", "accepted_per_drafted", "tau"
CONVENTIONS = (ALPHA, GREEDY_MATCH, ACCEPTED_PER_DRAFTED, TAU)
_NEEDS_K = frozenset({ACCEPTED_PER_DRAFTED, TAU})
_Z95 = 1.959963984540054  # two-sided 95% normal quantile, for Wilson intervals


# --- conversions (each monotone, so an interval converts end by end) -----------------

def accepted_per_drafted(alpha: float, k: int) -> float:
    """accepted / drafted when every round drafts K tokens.

    # r(K) = E[accepted drafts] / K = (sum_{j=1..K} a**j) / K = a (1 - a**K) / ((1 - a) K)
    # (E(K) - 1 accepted drafts per round; falls with K at constant a: 0.70 -> 0.34 from K=1 to K=6)
    """
    return (expected_accepted(alpha, k) - 1.0) / k


def alpha_from_accepted_per_drafted(rate: float, k: int) -> float:
    """Invert `accepted_per_drafted` (monotone in alpha on [0, 1]) by bisection.

    Raises:
        UsageError: rate outside [0, 1] or K < 1.
    """
    _check_k(k, ACCEPTED_PER_DRAFTED)
    _check_unit(rate, ACCEPTED_PER_DRAFTED)
    if k == 1:
        return rate  # r(1) = alpha
    return bisect_increasing(lambda a: accepted_per_drafted(a, k), rate)


def alpha_from_tau(tau: float, k: int) -> float:
    """Invert tau = E(K) (bonus token included; 1 <= tau <= K+1) by bisection.

    Raises:
        UsageError: tau outside [1, K+1] or K < 1.
    """
    _check_k(k, TAU)
    return alpha_for_expected(tau, k)


@memo.cached(maxsize=4096)  # pure: a fleet report converts the same catalogued numbers per target x machine
def to_alpha(value: float, convention: str, k: int | None = None) -> float:
    """Convert one number in `convention` to alpha.

    greedy_match is returned as is: under greedy verification a draft token is accepted
    exactly when it is the target's argmax, so the match rate IS alpha at temperature 0
    (it is not the sampled alpha at temperature > 0).

    Raises:
        UsageError: unknown convention, K missing where needed, value out of range.
    """
    if convention in (ALPHA, GREEDY_MATCH):
        return _check_unit(value, convention)
    if convention == ACCEPTED_PER_DRAFTED:
        return alpha_from_accepted_per_drafted(value, _require_k(k, convention))
    if convention == TAU:
        return alpha_from_tau(value, _require_k(k, convention))
    raise UsageError(f"Cannot convert acceptance convention '{convention}': expected one of "
                     f"{', '.join(CONVENTIONS)}.")


def acceptance(value: float, convention: str, *, k: int | None = None, low: float | None = None,
               high: float | None = None, source: str = "given") -> Acceptance:
    """An `Acceptance` from a number in any convention, with an optional raw interval.

    Args:
        value: the number as reported (0.721, not 72.1%).
        convention: one of CONVENTIONS.
        k: drafted tokens per round; required for accepted_per_drafted and tau.
        low, high: the interval in the same convention (default: the value itself).
        source: where the number comes from.

    Returns:
        Acceptance with alpha, low, high converted end by end (all conversions are monotone).

    Raises:
        UsageError: bad convention, K or range.

    Example:
        >>> round(acceptance(0.378, "accepted_per_drafted", k=6).alpha, 3)
        0.727
    """
    lo = value if low is None else low
    hi = value if high is None else high
    if not lo <= value <= hi:
        raise UsageError(f"Cannot use interval [{lo}, {hi}] for {convention} = {value}: it must contain the value.")
    kt = f" at K={k}" if convention in _NEEDS_K else ""
    given = f"{convention} = {value:g}{kt}" + (f" [{lo:g}, {hi:g}]" if (lo, hi) != (value, value) else "")
    return Acceptance(alpha=to_alpha(value, convention, k), low=to_alpha(lo, convention, k),
                      high=to_alpha(hi, convention, k), given=given, source=source)


def from_histogram(counts: Sequence[int], *, source: str = "measured") -> Acceptance:
    """alpha from a histogram of accepted drafts per round (counts[j] = rounds with j of K accepted,
    K = len(counts) - 1), with a 95% Wilson interval.

    # each round is a run of Bernoulli(a) trials that stops at the first rejection or after K:
    # j < K accepted: j successes + 1 failure; j = K: K successes. MLE: a = S / (S + F),
    # S = sum_j j n_j, F = sum_{j<K} n_j  (truncated geometric likelihood a**S (1-a)**F)

    Raises:
        UsageError: fewer than 2 bins, negative counts, or no trials.
    """
    if len(counts) < 2 or any((not isinstance(c, int)) or c < 0 for c in counts):
        raise UsageError(f"Cannot fit acceptance from histogram {list(counts)}: expected K+1 >= 2 "
                         f"non-negative integer counts (counts[j] = rounds with j drafts accepted).")
    k = len(counts) - 1
    successes = sum(j * n for j, n in enumerate(counts))
    failures = sum(counts[:k])
    trials = successes + failures
    if trials == 0:
        raise UsageError("Cannot fit acceptance from an empty histogram: no drafted token was judged.")
    a = successes / trials
    lo, hi = _wilson(successes, trials)
    return Acceptance(alpha=a, low=min(lo, a), high=max(hi, a),
                      given=f"histogram of {sum(counts)} rounds at K={k} ({successes} accepted, "
                            f"{failures} rejected)", source=source)


def per_position_from_histogram(counts: Sequence[int]) -> tuple[float, ...]:
    """Per-position acceptance a_i = P(draft i accepted | drafts 1..i-1 accepted) from the same histogram.

    # a_i = N(>= i) / N(>= i-1), N(>= i) = rounds with at least i drafts accepted
    Positions no round reached are left out (no extrapolation).
    """
    k = len(counts) - 1
    at_least = [sum(counts[i:]) for i in range(k + 1)]
    return tuple(at_least[i] / at_least[i - 1] for i in range(1, k + 1) if at_least[i - 1] > 0)


# --- the pairs catalog and priors -------------------------------------------------------

@dataclass(frozen=True)
class PairEntry:
    """One published measurement of a target/draft pair (catalogs/pairs/*.json; schema in docs/speed.md)."""

    id: str
    target: str
    draft: str
    target_family: str
    draft_family: str
    engine: str
    hardware: str
    k: int | None
    temperature: float | None
    acceptance_value: float | None
    acceptance_convention: str | None
    baseline_tok_s: float | None
    spec_tok_s: float | None
    speedup: float | None
    outcome: str
    source: str
    notes: str = ""
    file: str = ""

    @property
    def measured_speedup(self) -> float | None:
        """The published speed-up, else spec / baseline tokens per second when both are given."""
        if self.speedup is not None:
            return self.speedup
        if self.spec_tok_s and self.baseline_tok_s:
            return self.spec_tok_s / self.baseline_tok_s
        return None


@memo.cached(maxsize=4096)  # a frozen entry's conversion: once per entry, not once per target x machine
def entry_acceptance(entry: PairEntry) -> Acceptance | None:
    """The entry's acceptance converted to alpha by code (None when it published none).

    Raises:
        ConfigError: the stored number cannot be converted (names the entry and file).
    """
    if entry.acceptance_value is None or entry.acceptance_convention is None:
        return None
    try:
        acc = acceptance(entry.acceptance_value, entry.acceptance_convention, k=entry.k, source=entry.source)
    except UsageError as e:
        raise ConfigError(f"Cannot convert acceptance of pair '{entry.id}' from '{entry.file}': {e}",
                          entry.file, key="acceptance") from e
    return acc


def load_pairs(directory: str | Path | None = None) -> tuple[PairEntry, ...]:
    """Every entry of catalogs/pairs/*.json (or `directory`), validated.

    Raises:
        ConfigError: a file is not a list of well-formed entries, or an id repeats.
    """
    return _load_pairs(str(Path(directory) if directory is not None else catalog_dir() / "pairs"))


def prior_for(target_family: str | None, draft_family: str | None, *,
              pairs: Sequence[PairEntry] | None = None) -> Acceptance:
    """An acceptance prior for a target/draft family pair, labelled with where it came from.

    Order: (1) catalog entries for exactly this family pair, converted to alpha; (2) for a
    same-family pair with no entry, every same-family entry in the catalog pooled, labelled
    a family default; (3) an assumed constant with a wide interval (cross-family pairs need a
    vocabulary translation and accept far less). Intervals span the converted values, widened
    to at least +/- PRIOR_MIN_HALF_WIDTH (workload spread around a published point).

    Returns:
        Acceptance (alpha = median of the converted values).

    Example:
        >>> prior_for("llama3", "llama3").source.startswith("catalog")
        True
    """
    entries = load_pairs() if pairs is None else tuple(pairs)
    tf, df = _norm(target_family), _norm(draft_family)
    exact = [e for e in entries if _norm(e.target_family) == tf and _norm(e.draft_family) == df]
    pooled = _converted(exact)
    if pooled and tf and df:
        return _summarise(pooled, f"catalog: {len(pooled)} published {target_family} + {draft_family} measurement(s)")
    if tf and tf == df:
        same = _converted([e for e in entries if _norm(e.target_family) == _norm(e.draft_family)])
        if same:
            return _summarise(same, f"family default: no {target_family} pair in the catalog; pooled "
                                    f"{len(same)} same-family measurements")
        a, lo, hi = PRIOR_SAME_FAMILY
        return Acceptance(a, lo, hi, given="assumed same-family default", source=PRIOR_SAME_FAMILY_SOURCE)
    a, lo, hi = PRIOR_CROSS_FAMILY
    what = "unknown family" if not (tf and df) else f"cross-family {target_family} + {draft_family}"
    return Acceptance(a, lo, hi, given=f"assumed default ({what})", source=PRIOR_CROSS_FAMILY_SOURCE)


# --- helpers ----------------------------------------------------------------------------

# Fine-tunes keep their base model's tokenizer and drafting behaviour is closest to that lineage:
# Qwen2.5-Coder-32B and a Qwen2.5 0.5B draft are a same-family pair (catalog family tags add a suffix).
_LINEAGE_SUFFIX = re.compile(r"-(coder|math|instruct|chat|base|it|vl)$")
# Distillations named after their teacher keep the student base's tokenizer: DeepSeek-R1-Distill-Qwen-*
# are Qwen2.5 checkpoints (vocab 151,936 ids, Qwen2.5 merges), R1-Distill-Llama-* are Llama 3.x.
_LINEAGE_ALIAS = {"deepseek-r1-distill-qwen": "qwen2.5", "deepseek-r1-distill-llama": "llama3"}


def lineage(name: str | None) -> str:
    """A family tag reduced to its lineage: 'qwen2.5-coder' -> 'qwen2.5', 'deepseek-r1-distill-qwen' -> 'qwen2.5'."""
    key = (name or "").strip().lower()
    while _LINEAGE_SUFFIX.search(key):
        key = _LINEAGE_SUFFIX.sub("", key)
    return _LINEAGE_ALIAS.get(key, key)


_norm = lineage


def _converted(entries: Sequence[PairEntry]) -> list[tuple[float, PairEntry]]:
    out = []
    for e in entries:
        acc = entry_acceptance(e)
        if acc is not None:
            out.append((acc.alpha, e))
    return out


def _summarise(values: list[tuple[float, PairEntry]], label: str) -> Acceptance:
    alphas = sorted(a for a, _ in values)
    mid = len(alphas) // 2
    median = alphas[mid] if len(alphas) % 2 else (alphas[mid - 1] + alphas[mid]) / 2.0
    # fewer measurements, wider: one published number is one workload on one machine
    half = PRIOR_MIN_HALF_WIDTH * (3 if len(alphas) == 1 else 2 if len(alphas) <= 3 else 1)
    lo = max(0.0, min(alphas[0], median - half))
    hi = min(1.0, max(alphas[-1], median + half))
    given = "; ".join(f"{e.id}: {e.acceptance_convention} = {e.acceptance_value:g}"
                      + (f" at K={e.k}" if e.acceptance_convention in _NEEDS_K else "") for _, e in values)
    sources = "; ".join(sorted({e.source for _, e in values}))
    return Acceptance(alpha=median, low=lo, high=hi, given=given, source=f"{label} ({sources})")


def _wilson(successes: int, trials: int) -> tuple[float, float]:
    # Wilson score interval: (p + z^2/2n -/+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)
    z, n = _Z95, trials
    p = successes / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - half) / (1 + z * z / n)), min(1.0, (centre + half) / (1 + z * z / n))


def _check_unit(value: float, what: str) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and 0.0 <= value <= 1.0):
        raise UsageError(f"Cannot use {what} = {value}: expected a fraction in [0, 1] (0.72, not 72%).")
    return float(value)


def _check_k(k: int, what: str) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise UsageError(f"Cannot convert {what} at K = {k}: expected K >= 1 drafted tokens per round.")
    return k


def _require_k(k: int | None, what: str) -> int:
    if k is None:
        raise UsageError(f"Cannot convert {what} without K: it depends on the tokens drafted per round. "
                         f"Give k=.")
    return _check_k(k, what)


_REQUIRED = {"id": str, "target": str, "draft": str, "target_family": str, "draft_family": str,
             "engine": str, "hardware": str, "source": str, "outcome": str}
OUTCOMES = ("faster", "slower", "no gain")


@lru_cache(maxsize=4)
def _load_pairs(directory: str) -> tuple[PairEntry, ...]:
    entries: list[PairEntry] = []
    seen: dict[str, str] = {}
    for path in sorted(Path(directory).glob("*.json")):
        data = read_json(path, what="pairs catalog")
        items = data.get("pairs") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ConfigError(f"Cannot read pairs catalog '{path}': expected a list of pair entries "
                              f"(or {{\"pairs\": [...]}}), got {type(items).__name__}.", path)
        for i, item in enumerate(items):
            entry = _parse_entry(item, path, i)
            if entry.id in seen:
                raise ConfigError(f"Cannot read pairs catalog '{path}': id '{entry.id}' repeats "
                                  f"(also in '{seen[entry.id]}'). Give each entry a unique id.", path, key="id")
            seen[entry.id] = str(path)
            entries.append(entry)
    return tuple(entries)


def _parse_entry(item: Any, path: Path, i: int) -> PairEntry:
    where = f"entry {i} of pairs catalog '{path}'"
    if not isinstance(item, Mapping):
        raise ConfigError(f"Cannot read {where}: expected an object, got {type(item).__name__}.", path)
    for key, typ in _REQUIRED.items():
        if not isinstance(item.get(key), typ) or not item[key].strip():
            raise ConfigError(f"Cannot read {where}: '{key}' must be a non-empty string.", path, key=key)
    if item["outcome"] not in OUTCOMES:
        raise ConfigError(f"Cannot read {where}: outcome '{item['outcome']}' (expected one of "
                          f"{', '.join(OUTCOMES)}).", path, key="outcome")
    k, temp = item.get("k"), item.get("temperature")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
        raise ConfigError(f"Cannot read {where}: k must be a positive integer or null, got {k!r}.", path, key="k")
    if temp is not None and not (is_finite_number(temp) and temp >= 0):
        raise ConfigError(f"Cannot read {where}: temperature must be >= 0 or null, got {temp!r}.", path,
                          key="temperature")
    value, convention = _parse_acceptance(item.get("acceptance"), where, path, k)
    result = item.get("result")
    if not isinstance(result, Mapping):
        raise ConfigError(f"Cannot read {where}: 'result' must be an object with baseline_tok_s, spec_tok_s, "
                          f"speedup (numbers or null).", path, key="result")
    nums = {key: result.get(key) for key in ("baseline_tok_s", "spec_tok_s", "speedup")}
    for key, v in nums.items():
        if v is not None and not (is_finite_number(v) and v > 0):
            raise ConfigError(f"Cannot read {where}: result.{key} must be a positive number or null, got {v!r}.",
                              path, key=f"result.{key}")
    return PairEntry(id=item["id"], target=item["target"], draft=item["draft"], target_family=item["target_family"],
                     draft_family=item["draft_family"], engine=item["engine"], hardware=item["hardware"], k=k,
                     temperature=temp, acceptance_value=value, acceptance_convention=convention,
                     baseline_tok_s=nums["baseline_tok_s"], spec_tok_s=nums["spec_tok_s"], speedup=nums["speedup"],
                     outcome=item["outcome"], source=item["source"], notes=str(item.get("notes", "")),
                     file=str(path))


def _parse_acceptance(acc: Any, where: str, path: Path, k: int | None) -> tuple[float | None, str | None]:
    if acc is None:
        return None, None
    if not isinstance(acc, Mapping) or acc.get("convention") not in CONVENTIONS or not is_finite_number(acc.get("value")):
        raise ConfigError(f"Cannot read {where}: acceptance must be null or {{\"value\": number, \"convention\": "
                          f"one of {', '.join(CONVENTIONS)}}}, got {acc!r}.", path, key="acceptance")
    if acc["convention"] in _NEEDS_K and k is None:
        raise ConfigError(f"Cannot read {where}: convention '{acc['convention']}' needs k (tokens drafted per "
                          f"round) to convert to alpha; store k or set acceptance to null.", path, key="k")
    return float(acc["value"]), acc["convention"]
