"""Which acceptance a plan takes, and where it came from: measured by a probe > --acceptance > the method's
prior (published pairs of the two families > family default), capped by a vocabulary translation's published
acceptance; `--acceptance` text parsed into one `Acceptance`.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import UsageError
from ..core.spec import ModelSpec
from ..drafting import DraftingMethod
from ..speed import acceptance as acc


def acceptance_for(target: ModelSpec, method: DraftingMethod, *, given: acc.Acceptance | None,
                   measured: acc.Acceptance | None, tli: float | None) -> acc.Acceptance:
    """Measured > given > the method's prior (published pairs of the two families > family default);
    a vocabulary translation (TLI) caps it at the published acceptance for that overlap."""
    a = measured or given or method.acceptance_prior(target)
    if tli is not None and tli < a.alpha:
        lo = max(0.0, min(a.low, tli - 0.1))  # one published pair per overlap: +/- 0.1 around it
        a = acc.Acceptance(alpha=tli, low=lo, high=max(tli, min(a.high, tli + 0.1)),
                           given=f"{a.given}; capped by TLI at this vocabulary overlap",
                           source=f"{a.source}; published TLI acceptance (catalogs/heterogeneous_vocab.json)")
    return a


ACCEPTANCE_MAX_K = 32  # the --max-k bound (commands/_options.py MaxKOpt)


def parse_acceptance(text: str) -> acc.Acceptance:
    """--acceptance: `0.7` (alpha), `0.6-0.8` (interval), or `CONVENTION=VALUE[@K]`
    (greedy_match=0.8, accepted_per_drafted=0.72@5, tau=2.8@4).

    Raises:
        UsageError: unparseable text.
    """
    t = text.strip()
    convention, k = acc.ALPHA, None
    if "=" in t:
        convention, t = (x.strip() for x in t.split("=", 1))
    if "@" in t:
        t, ks = t.split("@", 1)
        try:
            k = int(ks)
        except ValueError as e:
            raise UsageError(f"Cannot use --acceptance '{text}': K after '@' must be an integer.") from e
        if not 1 <= k <= ACCEPTANCE_MAX_K:  # a rate measured at K drafted tokens: K is a count, as --max-k
            raise UsageError(f"Cannot use --acceptance '{text}': K after '@' must be 1 to {ACCEPTANCE_MAX_K} "
                             f"(the tokens drafted per round when it was measured; got {k}).")
    try:
        if "-" in t[1:]:
            lo_s, hi_s = t.split("-", 1)
            lo, hi = float(lo_s), float(hi_s)
        else:
            lo = hi = float(t)
    except ValueError as e:
        raise UsageError(f"Cannot use --acceptance '{text}': expected 0.7, 0.6-0.8 or CONVENTION=VALUE[@K] "
                         f"(conventions: {', '.join(acc.CONVENTIONS)}).") from e
    return acc.acceptance((lo + hi) / 2, convention, k=k, low=lo, high=hi, source="given (--acceptance)")


def profile_acceptance_source(a: Any, origin: str | None) -> str:
    """Where a profile's acceptance came from, naming the file: `planner probe` (teacher-forced) or a live
    server (`planner bench --endpoint`, whose MeasuredAcceptance.source says which)."""
    how = a.source if a.source and a.source != "measured" else f"measured by probe ({a.prompts} prompts)"
    return f"profile '{origin}': {how}" if origin else how
