"""The `planner recommend --json` schema (docs/recommend.md): a Recommendation and each of its plans as JSON.

Why apart from the face: the schema is a contract other tools parse (tests/test_drafting_methods.py CONTRACT);
the face (commands/recommend.py) only decides what to print.
"""

from __future__ import annotations

from typing import Any

from ..fits import memory
from ..plan.recommend import method_kind


def draft_weights_bytes(o: Any) -> int:
    """Weight bytes the method keeps resident beside the target (0: n-gram, early exit, plain decoding)."""
    p = o.problem
    if p is None or p.draft is None:
        return 0
    return memory.weights(p.draft, p.draft_settings or p.settings)[0]


def option_json(o: Any) -> dict[str, Any]:
    a = o.acceptance
    return {"method": method_kind(o), "draft": o.draft, "draft_ref": o.draft_ref,
            "draft_weights_bytes": draft_weights_bytes(o), "k": o.k, "kv_dtype": o.kv_dtype,
            "speedup": round(o.speedup, 4), "speedup_interval": [round(x, 4) for x in o.speedup_interval],
            "verdict": o.verdict, "fits": o.fits, "headroom_bytes": o.headroom_bytes, "compatible": o.compatible,
            "fallback": o.fallback, "reasons": list(o.reasons),
            "acceptance": None if a is None else {"alpha": a.alpha, "low": a.low, "high": a.high, "given": a.given,
                                                  "source": a.source,
                                                  **({"decay": {"depth": a.decay.depth, "factor": a.decay.factor,
                                                                "source": a.decay.source}} if a.decay else {})},
            "costs_source": o.costs_source,
            "baseline_tokens_per_s": round(o.baseline_tokens_per_s, 3) if o.baseline_tokens_per_s else None,
            **({"per_batch": [batch_json(p) for p in o.per_batch], "crossover_batch": o.crossover_batch}
               if o.per_batch else {}),
            "break_even_alpha": o.prediction.break_even_alpha if o.prediction else None,
            "speedup_by_k": [round(x, 4) for x in o.prediction.speedup_by_k] if o.prediction else [],
            # how K drafts: every round (null), or stopping after the first draft token under p_min (llama.cpp)
            "drafting_stop": ({"p_min": o.stop.p_min, "n_min": o.stop.n_min}
                              if getattr(o, "stop", None) is not None and o.stop.p_min > 0 else None),
            "launch": o.launch}


def batch_json(p: Any) -> dict[str, Any]:
    return {"batch": p.batch, "k": p.k, "speedup": round(p.speedup, 4),
            "speedup_interval": [round(x, 4) for x in p.speedup_interval], "verdict": p.verdict,
            "tokens_per_s_per_seq": round(p.tokens_per_s_per_seq, 3), "tokens_per_s": round(p.tokens_per_s, 3),
            "baseline_tokens_per_s": round(p.baseline_tokens_per_s, 3), "fits": p.fits,
            "headroom_bytes": p.headroom_bytes}


def recommendation_json(rec: Any) -> dict[str, Any]:
    """The `planner recommend --json` schema (docs/recommend.md)."""
    c = rec.choice
    return {"target": rec.target, "machine": rec.machine, "engine": rec.engine, "context": rec.context,
            "batch": rec.batch, "baseline_fits": rec.baseline_fits,
            "baseline_headroom_bytes": rec.baseline_headroom_bytes,
            "tokenizer_family": rec.tokenizer_family, "tokenizer_match": rec.tokenizer_match,
            "plans": [option_json(o) for o in rec.plans],
            "recommendation": {"method": method_kind(c), "draft": c.draft,
                               "draft_weights_bytes": draft_weights_bytes(c),
                               "k": c.k if c.draft else None, "kv_dtype": c.kv_dtype,
                               "speedup": round(c.speedup, 4), "speedup_interval": list(c.speedup_interval),
                               "verdict": c.verdict, "reasons": list(c.reasons), "launch": c.launch,
                               "fits": c.fits, "headroom_bytes": c.headroom_bytes,
                               "baseline_tokens_per_s": round(c.baseline_tokens_per_s, 3)
                               if c.baseline_tokens_per_s else None},
            "notes": list(rec.notes)}
