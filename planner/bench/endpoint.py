"""Driving a running server with a bounded prompt set and reading what its engine counted.

Why its own module: the loop (which requests, how many at once, what is kept of each reply) is one
idea, apart from the HTTP exchange (http_endpoint.py), the engines' field names (engine_counters.py)
and the prediction it is compared with (commands/_bench_endpoint.py). No torch: a live server does
the decoding.

Per engine:
* llama.cpp: POST /completion with `n_predict`, `ignore_eos` (every request decodes the same number
  of tokens) and `cache_prompt: false`; the reply's `timings` give decode tokens/s, prefill time
  (time to first token, server side) and the draft counts. A server started with --metrics also
  counts rounds and accepted drafts per position on /metrics (llamacpp:spec_decode_num_drafts_total,
  ..._num_accepted_tokens_per_pos_total{position}: tools/server/server-task.cpp:1555-1565, 1598,
  1606-1613 at 0c1e570), read before and after when it answers. The baseline is the same request with
  `"speculative.n_max": 0` where the server honours it; builds that compile the per-request
  speculative fields out (tools/server/server-schema.cpp:197-211 at 0c1e570: `#if 0`) still draft,
  which the reply's `draft_n` shows, and the baseline is then null with that reason
  (--baseline-endpoint measures it from a second server without a draft).
* vLLM / SGLang: POST /v1/completions (OpenAI), wall time per request; /metrics read before and
  after the run for the speculative counters and the time-to-first-token histogram.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from ..core import constants
from ..core.errors import EndpointError
from ..engines import llamacpp, sglang, vllm
from . import engine_counters as ec
from .http_endpoint import Endpoint, exchange, exchange_json

LLAMA, VLLM, SGLANG = llamacpp.NAME, vllm.NAME, sglang.NAME
ENGINES = (LLAMA, VLLM, SGLANG)


@dataclass(frozen=True)
class Request:
    """One prompt to send: its kind (workload), text or token ids."""

    kind: str
    prompt: str | tuple[int, ...]


@dataclass(frozen=True)
class Sample:
    """What one reply said: decode tokens and seconds, time to first token, drafts (None: not counted)."""

    kind: str
    tokens: int
    decode_s: float
    ttft_s: float | None
    drafted: int | None = None
    accepted: int | None = None


@dataclass(frozen=True)
class Measured:
    """A run against one server: per-sequence decode speed, prefill, and the engine's draft counts."""

    tokens_per_s: float  # decode tokens / decode seconds, summed over requests (one sequence's speed)
    throughput_tokens_per_s: float  # every request's tokens / the run's wall time (all sequences)
    ttft_s: float | None
    requests: int
    tokens: int
    drafted: float | None = None
    accepted: float | None = None
    rounds: float | None = None
    per_position: tuple[float, ...] = ()  # a_k = accepted at position k / rounds (vLLM)
    by_kind: dict[str, float] = field(default_factory=dict)  # accepted / drafted per workload kind
    rate_gauge: float | None = None  # SGLang: the last batch's accepted / drafted
    length_gauge: float | None = None  # SGLang: the last batch's tokens per round (bonus included)
    gauge_note: str | None = None  # SGLang: the figures are the last batch's gauges
    samples: tuple[Sample, ...] = ()

    @property
    def acceptance_rate(self) -> float | None:
        """accepted / drafted over the run (None: the engine counted no drafts)."""
        if self.drafted is None or self.accepted is None or self.drafted <= 0:
            return self.rate_gauge
        return self.accepted / self.drafted


def run(ep: Endpoint, engine: str, requests: Sequence[Request], *, tokens: int, concurrency: int,
        temperature: float, timeout_s: float, baseline: bool = False,
        progress: Callable[[str], None] = lambda _m: None) -> Measured:
    """Send every request (`concurrency` at a time) and summarise the replies.

    Args:
        ep: the server; engine: llama.cpp | vllm | sglang.
        requests: the prompts, in order (the caller bounds their number).
        tokens: new tokens per request; temperature: sampling temperature of every request.
        baseline: llama.cpp only: ask the server not to draft (`speculative.n_max = 0`).
        progress: called with one line per finished request (the CLI prints it on stderr).

    Raises:
        EndpointError: the server is down, slow or answers something else (one line).
    """
    if not 1 <= len(requests) <= constants.ENDPOINT_MAX_REQUESTS:
        raise EndpointError(f"Cannot bench '{ep.url}' with {len(requests)} requests (expected 1.."
                            f"{constants.ENDPOINT_MAX_REQUESTS}).")
    model = _model_name(ep, timeout_s) if engine != LLAMA else None
    before = _metrics(ep, timeout_s) if engine != LLAMA else _optional_metrics(ep, timeout_s)
    done: list[Sample] = []

    def one(r: Request) -> Sample:
        s = (_llama(ep, r, tokens, temperature, timeout_s, baseline) if engine == LLAMA
             else _openai(ep, r, model, tokens, temperature, timeout_s))
        done.append(s)
        progress(f"{'baseline ' if baseline else ''}request {len(done)}/{len(requests)}: {s.tokens} tokens in "
                 f"{s.decode_s:.2f} s")
        return s

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        samples = tuple(pool.map(one, requests))
    wall = time.perf_counter() - start
    if engine == LLAMA:
        m = _summary(samples, wall)
        after = _optional_metrics(ep, timeout_s) if before is not None and not baseline else None
        if before is None or after is None:
            return m
        d = ec.counters_delta(ec.spec_counters(before, "llamacpp:"), ec.spec_counters(after, "llamacpp:"))
        if not d.drafts:
            return m
        return replace(m, rounds=d.drafts, per_position=tuple(a / d.drafts for a in d.accepted_per_pos))
    if before is None:  # vLLM / SGLang read /metrics with _metrics, which raises rather than return None
        raise EndpointError(f"Cannot read '{ep.url}/metrics' before the run (expected the counters).")
    after = _metrics(ep, timeout_s)
    return _with_metrics(samples, wall, engine, before, after)


def _llama(ep: Endpoint, r: Request, tokens: int, temperature: float, timeout_s: float, baseline: bool) -> Sample:
    body: dict[str, Any] = {"prompt": list(r.prompt) if isinstance(r.prompt, tuple) else r.prompt,
                            "n_predict": tokens, "ignore_eos": True, "cache_prompt": False,
                            "temperature": temperature, "seed": 1234}
    if baseline:
        body["speculative.n_max"] = 0
    c = ec.llama_timings(exchange_json(ep, "POST", "/completion", body, timeout_s=timeout_s), f"{ep.url}/completion")
    return Sample(r.kind, c.tokens, c.decode_s, c.prompt_s, c.drafted, c.accepted)


def _openai(ep: Endpoint, r: Request, model: str | None, tokens: int, temperature: float, timeout_s: float) -> Sample:
    body = {"model": model, "prompt": list(r.prompt) if isinstance(r.prompt, tuple) else r.prompt,
            "max_tokens": tokens, "min_tokens": tokens, "ignore_eos": True, "temperature": temperature}
    t0 = time.perf_counter()
    doc = exchange_json(ep, "POST", "/v1/completions", body, timeout_s=timeout_s)
    wall = time.perf_counter() - t0
    usage = doc.get("usage")
    n = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise EndpointError(f"Cannot bench '{ep.url}/v1/completions': the reply has no usage.completion_tokens "
                            f"(expected an OpenAI completion). Check --engine and the URL.")
    return Sample(r.kind, n, wall, None)


def _model_name(ep: Endpoint, timeout_s: float) -> str:
    """The served model's id (vLLM and SGLang refuse a completion naming another)."""
    doc = exchange_json(ep, "GET", "/v1/models", timeout_s=timeout_s)
    data = doc.get("data")
    if not isinstance(data, list) or not data or not isinstance(data[0], dict) or not isinstance(data[0].get("id"), str):
        raise EndpointError(f"Cannot bench '{ep.url}/v1/models': no model listed (expected an OpenAI model list). "
                            f"Check the URL.")
    return data[0]["id"][:4096]


def _metrics(ep: Endpoint, timeout_s: float) -> dict:
    raw = exchange(ep, "GET", "/metrics", timeout_s=timeout_s, max_bytes=constants.ENDPOINT_METRICS_MAX_BYTES)
    return ec.parse_metrics(raw.decode("utf-8", "replace"))


def _optional_metrics(ep: Endpoint, timeout_s: float) -> dict | None:
    """llama-server's /metrics when it was started with --metrics (else it answers 501: None)."""
    try:
        return _metrics(ep, timeout_s)
    except EndpointError:
        return None


def _summary(samples: Sequence[Sample], wall_s: float) -> Measured:
    """llama.cpp: sums of the per-request timings (token-weighted decode speed, mean prefill)."""
    toks = sum(s.tokens for s in samples)
    dec = sum(s.decode_s for s in samples)
    ttft = [s.ttft_s for s in samples if s.ttft_s is not None]
    drafted = [s for s in samples if s.drafted is not None]
    kinds: dict[str, list[int]] = {}
    for s in drafted:
        k = kinds.setdefault(s.kind, [0, 0])
        k[0] += s.accepted or 0
        k[1] += s.drafted or 0
    return Measured(tokens_per_s=toks / dec if dec > 0 else math.nan, throughput_tokens_per_s=toks / wall_s,
                    ttft_s=sum(ttft) / len(ttft) if ttft else None, requests=len(samples), tokens=toks,
                    drafted=float(sum(s.drafted or 0 for s in drafted)) if drafted else None,
                    accepted=float(sum(s.accepted or 0 for s in drafted)) if drafted else None,
                    by_kind={k: a / d for k, (a, d) in sorted(kinds.items()) if d > 0}, samples=tuple(samples))


def _with_metrics(samples: Sequence[Sample], wall_s: float, engine: str, before: dict, after: dict) -> Measured:
    """vLLM / SGLang: wall-clock decode speed less the mean time to first token, counters from /metrics."""
    prefix = "vllm:" if engine == VLLM else "sglang:"
    ttft = ec.histogram_mean(before, after, prefix + "time_to_first_token_seconds")
    toks = sum(s.tokens for s in samples)
    dec = sum(max(1e-9, s.decode_s - (ttft or 0.0)) for s in samples)
    decode_toks = sum(max(0, s.tokens - 1) for s in samples) if ttft is not None else toks  # the first is prefill's
    base = Measured(tokens_per_s=decode_toks / dec, throughput_tokens_per_s=toks / wall_s, ttft_s=ttft,
                    requests=len(samples), tokens=toks, samples=tuple(samples))
    if engine == VLLM:
        d = ec.counters_delta(ec.vllm_counters(before), ec.vllm_counters(after))
        per = tuple(a / d.drafts for a in d.accepted_per_pos) if d.drafts else ()
        return replace(base, drafted=d.drafted, accepted=d.accepted, rounds=d.drafts, per_position=per)
    g = ec.sglang_counters(after)
    if g.accept_rate_gauge is None:
        return base
    return replace(base, rate_gauge=g.accept_rate_gauge, length_gauge=g.accept_length_gauge,
                   gauge_note="SGLang exports the last batch's acceptance gauges (sglang:spec_accept_rate, "
                              "sglang:spec_accept_length), not cumulative counts: low confidence for a whole run")


