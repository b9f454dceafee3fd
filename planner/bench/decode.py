"""Speculative decoding with constant K, short enough to read in one sitting (gpt-fast is the bar).

Round (Leviathan et al. 2023, Chen et al. 2023): the draft proposes K tokens
d_1..d_K from q; the target scores [cur, d_1..d_K] in ONE forward, giving p_1..p_{K+1};
tokens are accepted left to right, the first rejection is replaced by a token from
norm(max(0, p - q)) (or argmax p when greedy), and if all K pass a bonus token comes
from p_{K+1}. Both KV caches are then rolled back to the committed sequence. The
output distribution is the target's own: that is what the lossless tests check.

Models are `Stepper`s: forward(tokens) appends to the model's cache and returns
logits for each new position; rollback(n) drops the last n cache entries.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


class Stepper(Protocol):
    def forward(self, tokens: list[int]) -> Any:  # -> logits [len(tokens), vocab]
        ...

    def rollback(self, n: int) -> None: ...

    def length(self) -> int: ...


@dataclass(frozen=True)
class StepRecord:
    """One round: tokens drafted and accepted (bonus/correction token not counted), wall times."""

    drafted: int
    accepted: int
    draft_s: float
    verify_s: float
    round_s: float = 0.0  # whole round: draft + verify + acceptance + rollback + bookkeeping


@dataclass
class DecodeResult:
    tokens: list[int]
    records: list[StepRecord] = field(default_factory=list)
    seconds: float = 0.0


def probs(logits: Any, temperature: float) -> Any:
    import torch

    # softmax(logits / T) in float32; T = 0 is greedy and handled by the callers
    return torch.softmax(logits.float() / max(temperature, 1e-6), dim=-1)


def accept_greedy(p_logits: Any, draft_tokens: list[int]) -> tuple[int, int]:
    """Greedy verification: accept while argmax p_i == d_i; then argmax at the first miss (or the bonus)."""
    best = p_logits.argmax(dim=-1).tolist()  # [K+1]
    n = 0
    while n < len(draft_tokens) and best[n] == draft_tokens[n]:
        n += 1
    return n, best[n]


def accept_sampling(p: Any, q: Any, draft_tokens: list[int], generator: Any) -> tuple[int, int]:
    """Modified rejection sampling: accept d_i with prob min(1, p_i(d_i) / q_i(d_i));
    on rejection sample from norm(max(0, p_i - q_i)); if all accepted, sample the bonus from p_{K+1}."""
    import torch

    for i, d in enumerate(draft_tokens):
        r = torch.rand((), generator=generator).item()
        if r < min(1.0, (p[i, d] / q[i, d]).item()):
            continue
        residual = torch.clamp(p[i] - q[i], min=0)
        total = residual.sum()
        residual = p[i] if total.item() <= 0 else residual / total
        return i, int(torch.multinomial(residual, 1, generator=generator).item())
    return len(draft_tokens), int(torch.multinomial(p[len(draft_tokens)], 1, generator=generator).item())


AcceptRule = Callable[[Any, Any, list[int], Any], tuple[int, int]]


def speculative_decode(target: Stepper, draft: Stepper, prompt: list[int], *, k: int, max_new_tokens: int,
                       temperature: float = 0.0, generator: Any = None, sync: Callable[[], None] = lambda: None,
                       accept_rule: AcceptRule = accept_sampling,
                       clock: Callable[[], float] = time.perf_counter) -> DecodeResult:
    """Generate `max_new_tokens` after `prompt` with K drafted tokens per round.

    Invariant between rounds: both caches hold the committed tokens except the last one, `cur`,
    which has not been fed yet (`pending` for the draft also holds d_K when all K were accepted).
    """
    import torch

    greedy = temperature <= 0
    out: list[int] = []
    if len(prompt) > 1:  # prefill is the same with or without a draft: not timed
        target.forward(prompt[:-1])
        draft.forward(prompt[:-1])
    sync()
    t0 = clock()
    cur, pending = prompt[-1], [prompt[-1]]
    records = []
    while len(out) < max_new_tokens:
        kk = min(k, max_new_tokens - len(out) - 1) if max_new_tokens - len(out) > 1 else 0
        sync()
        ta = clock()
        drafted, qs = [], []
        feed = pending
        for _ in range(kk):  # draft K tokens autoregressively
            logits = draft.forward(feed)[-1]
            if greedy:
                tok = int(logits.argmax().item())
            else:
                q = probs(logits, temperature)
                qs.append(q)
                tok = int(torch.multinomial(q, 1, generator=generator).item())
            drafted.append(tok)
            feed = [tok]
        sync()
        tb = clock()
        p_logits = target.forward([cur, *drafted])  # K+1 positions in one forward
        if greedy:
            n, nxt = accept_greedy(p_logits, drafted)
        else:
            p = probs(p_logits, temperature)
            q = torch.stack(qs) if qs else p[:0]
            n, nxt = accept_rule(p, q, drafted, generator)
        sync()
        tc = clock()
        # roll back: target keeps cur + d_1..d_n; draft fed pending + d_1..d_{K-1}
        target.rollback(len(drafted) - n)
        fed_draft = max(len(drafted) - 1, 0)
        if kk and n < len(drafted):
            draft.rollback(fed_draft - n)
            pending = [nxt]
        elif kk:
            pending = [drafted[-1], nxt]  # d_K was never fed to the draft
        else:
            draft.forward(pending)
            pending = [nxt]
        out.extend([*drafted[:n], nxt])
        cur = nxt
        records.append(StepRecord(drafted=len(drafted), accepted=n, draft_s=tb - ta, verify_s=tc - tb,
                                  round_s=clock() - ta))
    sync()
    return DecodeResult(tokens=out[:max_new_tokens], records=records, seconds=clock() - t0)


def target_decode(target: Stepper, prompt: list[int], *, max_new_tokens: int, temperature: float = 0.0,
                  generator: Any = None, sync: Callable[[], None] = lambda: None,
                  clock: Callable[[], float] = time.perf_counter) -> DecodeResult:
    """Plain autoregressive decoding with the target: the baseline (and the reference output).
    The prefill of prompt[:-1] is not timed, as in speculative_decode."""
    import torch

    if len(prompt) > 1:
        target.forward(prompt[:-1])
    sync()
    t0 = clock()
    out: list[int] = []
    feed = [prompt[-1]]
    while len(out) < max_new_tokens:
        logits = target.forward(feed)[-1]
        if temperature <= 0:
            tok = int(logits.argmax().item())
        else:
            tok = int(torch.multinomial(probs(logits, temperature), 1, generator=generator).item())
        out.append(tok)
        feed = [tok]
    sync()
    return DecodeResult(tokens=out, seconds=clock() - t0)


class HFStepper:
    """A transformers causal LM with a DynamicCache, as a Stepper (batch size 1)."""

    def __init__(self, model: Any) -> None:
        import inspect

        from transformers import DynamicCache

        self.model = model
        self.cache = DynamicCache()
        self.device = next(model.parameters()).device
        # transformers >= 5.3x names the argument `cache` (`past_key_values` is deprecated)
        params = inspect.signature(model.forward).parameters
        self.cache_arg = "cache" if "cache" in params else "past_key_values"

    def forward(self, tokens: list[int]) -> Any:
        import torch

        ids = torch.tensor([tokens], device=self.device)
        with torch.inference_mode():
            out = self.model(input_ids=ids, use_cache=True, **{self.cache_arg: self.cache})
        return out.logits[0]

    def rollback(self, n: int) -> None:
        if n > 0:
            self.cache.crop(-n)  # negative = number of tokens to drop (transformers 4.x and 5.x)

    def length(self) -> int:
        return int(self.cache.get_seq_length())

    def reset(self) -> None:
        from transformers import DynamicCache

        self.cache = DynamicCache()
