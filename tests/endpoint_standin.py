"""A loopback stand-in for llama-server (/completion, /props) and vLLM (/v1/completions, /metrics).

It decodes nothing: each request sleeps for the time its tokens take at a known rate, and drafts
with a known per-token acceptance (each round drafts K; draft i is accepted with probability alpha
given the ones before it were, a seeded RNG). It records what it produced (tokens, seconds, drafts),
so a test compares `planner bench --endpoint` with the server's own truth. Bounded: 127.0.0.1 only,
at most `max_requests` answered, and it shuts itself down after `lifetime_s`.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Produced:
    """One answered completion: what the stand-in decoded, in how long, with how many drafts."""

    tokens: int
    decode_s: float
    drafted: int
    accepted: int
    rounds: int
    baseline: bool


@dataclass
class StandIn:
    """Serve `protocol` ("llama" or "vllm") on 127.0.0.1 until stopped, `max_requests` or `lifetime_s`."""

    protocol: str = "llama"
    spec_tokens_per_s: float = 400.0
    base_tokens_per_s: float = 250.0
    alpha: float = 0.7
    k: int = 4
    honour_n_max: bool = True  # llama: obey a per-request "speculative.n_max": 0
    speculate: bool = True  # False: a server launched without a draft
    metrics: bool = False  # llama: started with --metrics (else /metrics answers 501, as llama-server does)
    ttft_s: float = 0.004
    max_requests: int = 64
    lifetime_s: float = 60.0
    seed: int = 7
    produced: list[Produced] = field(default_factory=list)

    def __enter__(self) -> StandIn:
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()
        self._ttft = [0.0, 0]
        self._pp: dict[int, int] = {}  # draft position -> rounds that accepted it
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                return

            def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                owner._get(self)

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                owner._post(self, json.loads(self.rfile.read(min(n, 1 << 20)) or b"{}"))

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address) -> None:  # a client that timed out and left
                return

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self.lifetime_s, self._server.shutdown)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # --- what it decodes ---------------------------------------------------------------

    def _decode(self, n: int, draft: bool) -> Produced:
        """n tokens, in rounds of K drafts (fewer at the end) while drafting; the time at the known rate."""
        drafted = accepted = rounds = made = 0
        with self._lock:
            while draft and made < n:
                kk = min(self.k, n - made - 1)
                if kk <= 0:
                    made += 1
                    continue
                a = 0
                while a < kk and self._rng.random() < self.alpha:
                    a += 1
                for i in range(a):
                    self._pp[i] = self._pp.get(i, 0) + 1
                drafted, accepted, rounds, made = drafted + kk, accepted + a, rounds + 1, made + a + 1
        made = min(made, n) if draft else n
        secs = made / (self.spec_tokens_per_s if draft else self.base_tokens_per_s)
        time.sleep(secs + self.ttft_s)
        p = Produced(made, secs, drafted, accepted, rounds, not draft)
        with self._lock:
            if len(self.produced) >= self.max_requests:
                raise RuntimeError("stand-in: request budget spent")
            self.produced.append(p)
            self._ttft[0] += self.ttft_s
            self._ttft[1] += 1
        return p

    def _post(self, h: BaseHTTPRequestHandler, body: dict) -> None:
        if self.protocol == "llama" and h.path == "/completion":
            off = self.honour_n_max and body.get("speculative.n_max") == 0
            p = self._decode(int(body.get("n_predict", 16)), self.speculate and not off)
            t = {"prompt_n": 12, "prompt_ms": self.ttft_s * 1e3, "predicted_n": p.tokens,
                 "predicted_ms": p.decode_s * 1e3, "predicted_per_second": p.tokens / p.decode_s}
            if p.drafted:
                t |= {"draft_n": p.drafted, "draft_n_accepted": p.accepted}
            h._send(200, json.dumps({"content": "x" * p.tokens, "timings": t}).encode())
        elif self.protocol == "vllm" and h.path == "/v1/completions":
            p = self._decode(int(body.get("max_tokens", 16)), self.speculate)
            h._send(200, json.dumps({"choices": [{"text": "x"}], "usage": {"completion_tokens": p.tokens}}).encode())
        else:
            h._send(404, b'{"error": "not found"}')

    def _get(self, h: BaseHTTPRequestHandler) -> None:
        if self.protocol == "llama" and h.path == "/props":
            h._send(200, b'{"build_info": "b0000-standin"}')
        elif self.protocol == "vllm" and h.path == "/v1/models":
            h._send(200, b'{"data": [{"id": "standin-model"}]}')
        elif self.protocol == "vllm" and h.path == "/version":
            h._send(200, b'{"version": "0.0-standin"}')
        elif self.protocol == "vllm" and h.path == "/metrics":
            h._send(200, self._metrics("vllm:").encode(), "text/plain")
        elif self.protocol == "llama" and h.path == "/metrics":
            if self.metrics:
                h._send(200, self._metrics("llamacpp:").encode(), "text/plain")
            else:
                h._send(501, b'{"error": "This server does not support metrics endpoint."}')
        else:
            h._send(404, b'{"error": "not found"}')

    def _metrics(self, pre: str) -> str:
        """vLLM's names (vllm/v1/spec_decode/metrics.py), or llama-server's under "llamacpp:"
        (tools/server/server-task.cpp): cumulative counters and the TTFT histogram."""
        with self._lock:
            ps = list(self.produced)
            ttft_sum, ttft_n = self._ttft
            pp = dict(self._pp)
        lab = 'engine="0",model_name="standin-model"'
        lines = [f"# HELP {pre}spec_decode_num_drafts Number of spec decoding drafts.",
                 f"# TYPE {pre}spec_decode_num_drafts counter",
                 f"{pre}spec_decode_num_drafts_total{{{lab}}} {float(sum(p.rounds for p in ps))}",
                 f"{pre}spec_decode_num_draft_tokens_total{{{lab}}} {float(sum(p.drafted for p in ps))}",
                 f"{pre}spec_decode_num_accepted_tokens_total{{{lab}}} {float(sum(p.accepted for p in ps))}",
                 f"{pre}time_to_first_token_seconds_sum{{{lab}}} {ttft_sum}",
                 f"{pre}time_to_first_token_seconds_count{{{lab}}} {float(ttft_n)}"]
        for pos in range(self.k):  # accepted at position pos: rounds whose accepted run reached it
            lines.append(f'{pre}spec_decode_num_accepted_tokens_per_pos_total{{{lab},position="{pos}"}} '
                         f'{float(pp.get(pos, 0))}')
        return "\n".join(lines) + "\n"
