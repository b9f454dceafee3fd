"""What each serving engine counts about its own speculative decoding, read from its replies.

Why its own module: the engines' field and metric names are facts of their source trees, cited here
once, and parsing them is pure (testable without a server). Three sources:

* llama-server's per-request `timings` object (llama.cpp tools/server/server-common.cpp:84-104 at
  0c1e570, the copy vendored in llama-cpp-python 0.3.36): `predicted_n`, `predicted_ms`,
  `predicted_per_second` (decode only), `prompt_n`, `prompt_ms`, and, only when the slot drafted,
  `draft_n` and `draft_n_accepted` (lines 100-101). The reply puts it under "timings"
  (tools/server/server-task.cpp:357).
* vLLM's Prometheus counters (vllm/v1/spec_decode/metrics.py:151,158,165,176 at 016a858):
  `vllm:spec_decode_num_drafts`, `..._num_draft_tokens`, `..._num_accepted_tokens` and
  `..._num_accepted_tokens_per_pos` with a `position` label (0-based, line 174); prometheus_client
  exposes a counter with the `_total` suffix. Per-position acceptance a_k = accepted_at_pos[k] / drafts.
* llama-server's own /metrics when started with --metrics: the same counters under "llamacpp:"
  (tools/server/server-task.cpp:1555-1565, the prefix at 1598, per position at 1606-1613, 0c1e570).
* SGLang's gauges `sglang:spec_accept_length` and `sglang:spec_accept_rate`
  (python/sglang/srt/metrics/collector.py at 00ae9c1, SchedulerMetricsCollector: Gauge with
  multiprocess_mode="mostrecent"): the most recent batch's mean accepted length and accepted/drafted,
  not cumulative counts, so a run's figure is the last batch's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import EndpointError

# name{label="value",...} value [timestamp]   (Prometheus text exposition format 0.0.4)
_SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)(?:\s+\S+)?$')
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
MAX_METRIC_LINES = 200_000


@dataclass(frozen=True)
class RequestCounters:
    """One completion as llama-server timed it: decode tokens and seconds, prefill seconds, drafts."""

    tokens: int
    decode_s: float
    prompt_s: float
    drafted: int | None  # None: the reply carried no draft counts (the slot did not draft)
    accepted: int | None


@dataclass(frozen=True)
class SpecCounters:
    """Cumulative speculative-decoding counts of a server (a difference of two /metrics reads)."""

    drafts: float | None  # verification rounds
    drafted: float | None
    accepted: float | None
    accepted_per_pos: tuple[float, ...] = ()
    accept_rate_gauge: float | None = None  # SGLang: the last batch's accepted / drafted
    accept_length_gauge: float | None = None  # SGLang: the last batch's mean accepted length (bonus included)


def llama_timings(reply: Mapping[str, Any], where: str) -> RequestCounters:
    """The `timings` of one llama-server /completion reply.

    Raises:
        EndpointError: no timings object, or a field missing or not a finite non-negative number.

    Example:
        >>> llama_timings({"timings": {"predicted_n": 8, "predicted_ms": 100.0, "prompt_ms": 5.0,
        ...                            "draft_n": 6, "draft_n_accepted": 3}}, "t").accepted
        3
    """
    t = reply.get("timings")
    if not isinstance(t, dict):
        raise EndpointError(f"Cannot bench '{where}': the reply has no 'timings' object (expected llama-server's "
                            f"/completion reply). Check --engine and the URL.")

    def num(key: str, optional: bool = False) -> float | None:
        v = t.get(key)
        if v is None and optional:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise EndpointError(f"Cannot bench '{where}': timings.{key} is {v!r} (expected a non-negative "
                                f"number). Check that the server is llama-server.")
        return float(v)

    drafted, accepted = num("draft_n", True), num("draft_n_accepted", True)
    tokens, decode_ms = num("predicted_n"), num("predicted_ms")
    assert tokens is not None and decode_ms is not None  # required fields: num raised otherwise
    return RequestCounters(tokens=int(tokens), decode_s=decode_ms / 1e3,
                           prompt_s=(num("prompt_ms", True) or 0.0) / 1e3,
                           drafted=None if drafted is None else int(drafted),
                           accepted=None if accepted is None else int(accepted))


def parse_metrics(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Prometheus text -> {(name, sorted labels): value}; comments and malformed lines are skipped.

    Example:
        >>> parse_metrics('# HELP x\\nvllm:spec_decode_num_drafts_total{model_name="m"} 12.0\\n')
        {('vllm:spec_decode_num_drafts_total', (('model_name', 'm'),)): 12.0}
    """
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for i, line in enumerate(text.splitlines()):
        if i >= MAX_METRIC_LINES:
            break
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        labels = tuple(sorted(_LABEL.findall(m.group(2) or "")))
        out[(m.group(1), labels)] = value
    return out


def _sum(samples: Mapping[tuple[str, tuple], float], name: str) -> float | None:
    """A metric summed over its label sets (engines, ranks); None when the server does not export it."""
    vals = [v for (n, _), v in samples.items() if n == name and math.isfinite(v)]
    return sum(vals) if vals else None


def _last(samples: Mapping[tuple[str, tuple], float], name: str) -> float | None:
    vals = [v for (n, _), v in samples.items() if n == name and math.isfinite(v)]
    return sum(vals) / len(vals) if vals else None


def vllm_counters(samples: Mapping[tuple[str, tuple], float]) -> SpecCounters:
    """vLLM's spec-decode counters (with or without the `_total` suffix)."""
    return spec_counters(samples, "vllm:")


def spec_counters(samples: Mapping[tuple[str, tuple], float], prefix: str) -> SpecCounters:
    """The spec-decode counters vLLM ("vllm:") and llama-server ("llamacpp:", with --metrics) share:
    spec_decode_num_drafts, _num_draft_tokens, _num_accepted_tokens, _num_accepted_tokens_per_pos{position}."""

    def get(name: str) -> float | None:
        v = _sum(samples, prefix + name + "_total")
        return v if v is not None else _sum(samples, prefix + name)

    per_pos_names = (f"{prefix}spec_decode_num_accepted_tokens_per_pos_total",
                     f"{prefix}spec_decode_num_accepted_tokens_per_pos")
    pos: dict[int, float] = {}
    for (n, labels), v in samples.items():
        if n in per_pos_names:
            p = dict(labels).get("position", "")
            if p.isdigit() and int(p) < 256:
                pos[int(p)] = pos.get(int(p), 0.0) + v
    per_pos = tuple(pos.get(i, 0.0) for i in range(max(pos) + 1)) if pos else ()
    return SpecCounters(drafts=get("spec_decode_num_drafts"), drafted=get("spec_decode_num_draft_tokens"),
                        accepted=get("spec_decode_num_accepted_tokens"), accepted_per_pos=per_pos)


def sglang_counters(samples: Mapping[tuple[str, tuple], float]) -> SpecCounters:
    """SGLang's last-batch gauges (no cumulative draft counts are exported)."""
    return SpecCounters(drafts=None, drafted=None, accepted=None,
                        accept_rate_gauge=_last(samples, "sglang:spec_accept_rate"),
                        accept_length_gauge=_last(samples, "sglang:spec_accept_length"))


def counters_delta(before: SpecCounters, after: SpecCounters) -> SpecCounters:
    """What a run added: after - before for the cumulative counts; the gauges as read after."""

    def d(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else max(0.0, a - b)

    n = max(len(before.accepted_per_pos), len(after.accepted_per_pos))
    pb = before.accepted_per_pos + (0.0,) * (n - len(before.accepted_per_pos))
    pa = after.accepted_per_pos + (0.0,) * (n - len(after.accepted_per_pos))
    return SpecCounters(drafts=d(after.drafts, before.drafts), drafted=d(after.drafted, before.drafted),
                        accepted=d(after.accepted, before.accepted),
                        accepted_per_pos=tuple(max(0.0, a - b) for a, b in zip(pa, pb, strict=True)),
                        accept_rate_gauge=after.accept_rate_gauge, accept_length_gauge=after.accept_length_gauge)


def histogram_mean(before: Mapping, after: Mapping, name: str) -> float | None:
    """Mean of the observations a run added to a Prometheus histogram (delta _sum / delta _count)."""
    s = [_sum(x, name + "_sum") for x in (before, after)]
    c = [_sum(x, name + "_count") for x in (before, after)]
    if None in s or None in c or c[1] - c[0] <= 0:  # type: ignore[operator]
        return None
    return (s[1] - s[0]) / (c[1] - c[0])  # type: ignore[operator]
