"""Drafters that are not a second model, as Steppers the bench decodes with: n-gram lookup and early exit.

Why Steppers: the bench's decode loop (decode.py) and its cost measurement (runner.py) already
speak `forward(tokens) -> logits` and `rollback(n)`; a drafter that honours them is measured by the
same loop, against the same baseline, with the same speed-model prediction beside it.

NgramStepper is prompt lookup (Saxena 2023; transformers PromptLookupCandidateGenerator, vLLM
`ngram`): the next token is the one that followed the most recent earlier occurrence of the last
n tokens (n from `max_ngram` down to `min_ngram`); with no match it proposes the last token again,
which the target rejects unless it repeats (a miss costs the verify rows, as an engine that drafts
a constant K would pay). Its logits are one-hot, so it drafts greedily only.

EarlyExitStepper is self-speculation (LayerSkip; transformers EarlyExitCandidateGenerator): the
target's own first L decoder layers, its final norm and lm_head, with a cache of its own for those
L layers; the layers are swapped in for the forward and restored after, as transformers does.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import UsageError


class NgramStepper:
    """Prompt lookup over every token fed so far (the prompt and the committed output)."""

    def __init__(self, vocab: int, *, max_ngram: int = 3, min_ngram: int = 1) -> None:
        if not 1 <= min_ngram <= max_ngram:
            raise UsageError(f"Cannot look up n-grams of {min_ngram}..{max_ngram} tokens (expected 1 <= min <= max).")
        self.vocab, self.max_ngram, self.min_ngram = vocab, max_ngram, min_ngram
        self.history: list[int] = []

    def propose(self) -> int:
        """The token after the latest earlier match of the longest matching suffix (else the last token)."""
        h = self.history
        for n in range(min(self.max_ngram, len(h) - 1), self.min_ngram - 1, -1):
            tail = h[-n:]
            for start in range(len(h) - n - 1, -1, -1):  # latest occurrence first, never the tail itself
                if h[start:start + n] == tail:
                    return h[start + n]
        return h[-1] if h else 0

    def forward(self, tokens: list[int]) -> Any:
        import torch

        out = torch.zeros((len(tokens), self.vocab))
        for i, t in enumerate(tokens):
            self.history.append(int(t))
            out[i, self.propose()] = 1.0
        return out

    def rollback(self, n: int) -> None:
        if n > 0:
            del self.history[-n:]

    def length(self) -> int:
        return len(self.history)


def decoder_layers(model: Any) -> tuple[Any, str]:
    """(the module holding the decoder's layer list, its attribute name) of a transformers causal LM.

    Raises:
        UsageError: the model keeps no `layers` list where Llama-style models do.
    """
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if inner is None or layers is None:
        raise UsageError(f"Cannot run early exit on {type(model).__name__}: no model.layers list (expected a "
                         f"Llama-style decoder).")
    return inner, "layers"


class EarlyExitStepper:
    """The target's first `layer` decoder layers + its head, with their own cache."""

    def __init__(self, model: Any, layer: int) -> None:
        from transformers import DynamicCache

        inner, attr = decoder_layers(model)
        n = len(getattr(inner, attr))
        if not 1 <= layer < n:
            raise UsageError(f"Cannot exit early at layer {layer}: the model has {n} layers (expected 1..{n - 1}).")
        import inspect

        self.model, self.inner, self.attr, self.layer = model, inner, attr, layer
        self.cache = DynamicCache()
        self.device = next(model.parameters()).device
        # transformers >= 5.3x names the argument `cache` (as HFStepper does)
        self.cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

    def forward(self, tokens: list[int]) -> Any:
        import torch
        from torch import nn

        full = getattr(self.inner, self.attr)
        setattr(self.inner, self.attr, nn.ModuleList(list(full)[: self.layer]))
        try:
            ids = torch.tensor([tokens], device=self.device)
            with torch.inference_mode():
                out = self.model(input_ids=ids, use_cache=True, **{self.cache_arg: self.cache})
        finally:
            setattr(self.inner, self.attr, full)
        return out.logits[0]

    def rollback(self, n: int) -> None:
        if n > 0:
            self.cache.crop(-n)

    def length(self) -> int:
        return int(self.cache.get_seq_length())


def generate_speedup(model: Any, prompts: list[list[int]], *, method: str, k: int, tokens: int,
                     exit_layer: int | None = None, repeats: int = 3, clock: Any = None) -> tuple[float, bool]:
    """The same method through transformers' own `generate` (prompt_lookup_num_tokens / assistant_early_exit):
    (baseline seconds / method seconds, greedy outputs identical), median over `repeats` after one warm-up.

    Why: the reference decoder is the bench's model of the algorithm; transformers' candidate generators
    (generation/candidate_generator.py:1017 prompt lookup, :1157 early exit) are what a user runs.
    """
    import statistics
    import time

    import torch

    clock = clock or time.perf_counter
    extra: dict[str, Any] = ({"prompt_lookup_num_tokens": k} if method == "ngram" else
                             {"assistant_early_exit": exit_layer})
    gc = model.generation_config
    saved = (gc.num_assistant_tokens, gc.num_assistant_tokens_schedule, gc.assistant_confidence_threshold)
    # a constant K per round, as the plan assumes (configuration_utils.py:638-640 defaults 20 / 0.4)
    gc.num_assistant_tokens, gc.num_assistant_tokens_schedule, gc.assistant_confidence_threshold = k, "constant", 0.0

    def run(kw: dict[str, Any]) -> tuple[float, list[list[int]]]:
        t, outs = 0.0, []
        for p in prompts:
            ids = torch.tensor([p], device=next(model.parameters()).device)
            t0 = clock()
            with torch.inference_mode():
                out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=tokens,
                                     min_new_tokens=tokens, pad_token_id=gc.eos_token_id if gc.pad_token_id is None
                                     else gc.pad_token_id, **kw)
            t += clock() - t0
            outs.append(out[0, len(p):].tolist())
        return t, outs

    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # generate() warns about min_new_tokens on every call: stderr keeps to ours
    try:
        base_t, spec_t = [], []
        for i in range(repeats + 1):
            tb, base_out = run({})
            ts, spec_out = run(extra)
            if i:  # the first pair warms up
                base_t.append(tb)
                spec_t.append(ts)
    finally:
        gc.num_assistant_tokens, gc.num_assistant_tokens_schedule, gc.assistant_confidence_threshold = saved
        hf_logging.set_verbosity(verbosity)
    return statistics.median(base_t) / statistics.median(spec_t), base_out == spec_out
