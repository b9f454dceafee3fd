"""Confidence-stopped drafting (llama.cpp --draft-p-min): what a round drafts, accepts and costs.

Why: llama-server does not draft a fixed K. common_speculative_gen_draft (common/speculative.cpp)
drafts greedily, keeps each token, and stops after the first one whose draft probability is under
p_min, or at n_max; a draft shorter than n_min is dropped and the round decodes one token. Rounds
are long where the draft is sure (and right) and short where it is not, so the speed-up is not a
fixed-K one, and long rounds reach the verify sizes where a backend switches kernels (Metal: mul_mm
past 8 tokens, speed/kernel_model.Matrix).

Mechanism: the draft's top-1 probability p of each token is Beta distributed with mean alpha (the
per-token acceptance the priors give) and concentration KAPPA, and a draft token is accepted with
probability p (a calibrated draft: the target agrees with it as often as the draft believes):

  q      = P(p >= p_min) = 1 - I(p_min; a, b),            a = KAPPA alpha, b = KAPPA (1 - alpha)
  A_hi   = E[p | p >= p_min] = alpha (1 - I(p_min; a + 1, b)) / q       (a sure token's acceptance)
  A_lo   = (alpha - q A_hi) / (1 - q)                                    (the token that stops drafting)
  P(L=l) = q^(l-1) (1 - q) for l < n_max, q^(n_max-1) for l = n_max     (drafted tokens per round)
  E[accepted | L=l] = sum_{i<l} A_hi^i + A_hi^(l-1) a_last,   a_last = A_lo (l < n_max) or alpha (l = n_max)
  tokens = sum_l P(l) (1 + E[accepted | l]) over l >= n_min, + P(l) x 1 below n_min (the draft is dropped)
  time   = sum_l P(l) (l t_d + t_v(l + 1) + t_o) over l >= n_min, + P(l) (l t_d + t_v(1)) below n_min
  S      = tokens x t_v(1) / time

p_min = 0 drafts n_max every round and gives the fixed-K speed-up (model.speedup) exactly.
KAPPA: catalogs/acceptance.json `confidence`, with its calibration.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..core.constants import catalog_dir
from ..core.errors import ConfigError, UsageError
from ..core.jsonio import read_json


@dataclass(frozen=True)
class Adaptive:
    """llama.cpp's confidence-stopped drafting: stop after a draft token under p_min; drop drafts under n_min."""

    p_min: float
    n_min: int = 0
    kappa: float | None = None  # None: the catalogued concentration (catalogs/acceptance.json)
    persistence: float | None = None  # None: the catalogued persistence of sureness (catalogs/acceptance.json)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.p_min) and 0.0 <= self.p_min < 1.0):
            raise UsageError(f"Cannot use --draft-p-min {self.p_min}: expected a probability in [0, 1).")
        if self.persistence is not None and not (0.0 <= self.persistence < 1.0):
            raise UsageError(f"Cannot use a confidence persistence of {self.persistence}: expected [0, 1).")
        if self.n_min < 0:
            raise UsageError(f"Cannot use --draft-min {self.n_min}: expected 0 or more tokens.")

    def describe(self) -> str:
        return f"draft-p-min {self.p_min:g}" + (f", draft-min {self.n_min}" if self.n_min else "")


EVERY_ROUND = Adaptive(0.0)  # no confidence stop: every round drafts K (llama.cpp --spec-draft-p-min 0)


def concentration(policy: Adaptive) -> float:
    """The policy's kappa, else the catalogued one (catalogs/acceptance.json `confidence`)."""
    return policy.kappa if policy.kappa is not None else catalogued_kappa(str(catalog_dir() / "acceptance.json"))


def persistence(policy: Adaptive) -> float:
    """The policy's rho, else the catalogued one (catalogs/acceptance.json `confidence.persistence`, 0 if absent)."""
    if policy.persistence is not None:
        return policy.persistence
    return catalogued_persistence(str(catalog_dir() / "acceptance.json"))


@lru_cache(maxsize=2)
def catalogued_persistence(path: str) -> float:
    data = read_json(path, what="acceptance adjustments catalog")
    raw = (data.get("confidence") or {}).get("persistence", 0.0)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not (0.0 <= raw < 1.0):
        raise ConfigError(f"Cannot read '{path}': confidence.persistence = {raw!r} (expected a number in [0, 1)).",
                          path, key="confidence")
    return float(raw)


@lru_cache(maxsize=2)
def catalogued_kappa(path: str) -> float:
    data = read_json(path, what="acceptance adjustments catalog")
    try:
        kappa = float(data["confidence"]["kappa"])
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"Cannot read '{path}': confidence.kappa: {e!r} (expected a positive number).", path,
                          key="confidence") from e
    if not (math.isfinite(kappa) and kappa > 0):
        raise ConfigError(f"Cannot read '{path}': confidence.kappa = {kappa} (expected a positive number).", path,
                          key="confidence")
    return kappa


def split(alpha: float, p_min: float, kappa: float) -> tuple[float, float, float]:
    """(q, A_hi, A_lo): the share of sure draft tokens and the acceptance of sure and unsure ones."""
    if p_min <= 0.0 or alpha <= 0.0:
        return 1.0, alpha, 0.0
    if alpha >= 1.0:
        return 1.0, 1.0, 0.0
    a, b = kappa * alpha, kappa * (1.0 - alpha)
    q = 1.0 - regularized_beta(p_min, a, b)
    if q <= 0.0:
        return 0.0, 0.0, alpha
    a_hi = min(1.0, alpha * (1.0 - regularized_beta(p_min, a + 1.0, b)) / q)
    a_lo = (alpha - q * a_hi) / (1.0 - q) if q < 1.0 else 0.0
    return q, a_hi, max(0.0, a_lo)


def round_profile(alpha: float, n_max: int, policy: Adaptive) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(P(L = l), E[accepted | L = l]) for l = 1..n_max.

    Sureness persists (`persistence` rho): a round's first token is sure with the stationary share q, each
    next one with s = q + rho (1 - q) after a sure one, so P(L = 1) = 1 - q, P(L = l) = q s^(l-2) (1 - s) and
    P(L = n_max) = q s^(n_max - 2); the token at n_max is accepted at s A_hi + (1 - s) A_lo. rho = 0 is the
    independent law (q^(l-1) (1 - q), the last token at alpha) exactly."""
    q, a_hi, a_lo = split(alpha, policy.p_min, concentration(policy))
    s = q + persistence(policy) * (1.0 - q)
    probs, accepted = [], []
    for length in range(1, n_max + 1):
        last = length == n_max
        reach = 1.0 if length == 1 else q * s ** (length - 2)  # P(the first length - 1 tokens are sure)
        go_on = q if length == 1 else s  # P(token `length` is sure, given the ones before are)
        probs.append(reach * (1.0 if last else 1.0 - go_on))
        a_last = (go_on * a_hi + (1.0 - go_on) * a_lo) if last else a_lo
        accepted.append(sum(a_hi ** i for i in range(1, length)) + a_hi ** (length - 1) * a_last)
    return tuple(probs), tuple(accepted)


def speedup(n_max: int, verify_s: Sequence[float], draft_s: float, alpha: float, overhead_s: float,
            policy: Adaptive) -> float:
    """S of confidence-stopped drafting with at most n_max drafts (module docstring)."""
    probs, accepted = round_profile(alpha, n_max, policy)
    tokens = time = 0.0
    for length, (p, acc) in enumerate(zip(probs, accepted, strict=True), start=1):
        if length < policy.n_min:
            tokens += p
            time += p * (length * draft_s + verify_s[0])
        else:
            tokens += p * (1.0 + acc)
            time += p * (length * draft_s + verify_s[length] + overhead_s)
    return tokens * verify_s[0] / time


def mean_drafted(alpha: float, n_max: int, policy: Adaptive) -> float:
    probs, _ = round_profile(alpha, n_max, policy)
    return sum(i * p for i, p in enumerate(probs, start=1))


# --- the regularized incomplete beta function I(x; a, b) -------------------------------------------

@lru_cache(maxsize=4096)
def regularized_beta(x: float, a: float, b: float) -> float:
    """I(x; a, b) by the continued fraction (Numerical Recipes betacf), with the symmetry I = 1 - I(1-x; b, a)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(x, a, b) / a
    return 1.0 - front * _betacf(1.0 - x, b, a) / b


def _betacf(x: float, a: float, b: float) -> float:
    tiny, eps = 1e-300, 1e-14
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h
