"""The reference speculative decoder is lossless: greedy identity and a chi-square test for sampling."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the bench needs torch (extra 'probe')")

from planner.bench.decode import (  # noqa: E402
    HFStepper,
    accept_sampling,
    speculative_decode,
    target_decode,
)

# chi-square critical value at p = 0.001 for 15 degrees of freedom (16 outcomes), from standard tables
CHI2_CRIT_15_DF_P001 = 37.697


def tiny_llama(seed: int, layers: int = 2):
    transformers = pytest.importorskip("transformers", reason="the bench loads transformers models (extra 'real')")
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(cfg).eval().float()


@pytest.mark.parametrize("k", [1, 3, 5])
def test_greedy_identical_to_target(k):
    target, draft = tiny_llama(0, 3), tiny_llama(1, 1)
    prompt = [3, 17, 42, 5, 9]
    ref = target_decode(HFStepper(target), prompt, max_new_tokens=24).tokens
    got = speculative_decode(HFStepper(target), HFStepper(draft), prompt, k=k, max_new_tokens=24)
    assert got.tokens == ref
    assert sum(r.accepted for r in got.records) <= sum(r.drafted for r in got.records)


def test_draft_equal_to_target_accepts_everything():
    target = tiny_llama(0)
    res = speculative_decode(HFStepper(target), HFStepper(target), [1, 2, 3], k=4, max_new_tokens=20)
    assert all(r.accepted == r.drafted for r in res.records)
    assert res.tokens == target_decode(HFStepper(target), [1, 2, 3], max_new_tokens=20).tokens


class MarkovStepper:
    """A 'model' whose next-token distribution depends on the last token only: exact probabilities known."""

    def __init__(self, table):
        self.table = table  # [V, V] row-stochastic
        self.seq: list[int] = []

    def forward(self, tokens):
        self.seq.extend(tokens)
        return torch.log(self.table[torch.tensor(self.seq[-len(tokens):])])

    def rollback(self, n):
        if n:
            del self.seq[-n:]

    def length(self):
        return len(self.seq)


P = torch.tensor([[0.1, 0.6, 0.2, 0.1], [0.5, 0.1, 0.1, 0.3], [0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1]])
Q = torch.tensor([[0.4, 0.2, 0.2, 0.2], [0.1, 0.1, 0.7, 0.1], [0.6, 0.2, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25]])


def broken_rule(p, q, drafted, generator):
    """A classic bug: on rejection, resample from p instead of norm(max(0, p - q))."""
    for i, d in enumerate(drafted):
        if torch.rand((), generator=generator).item() < min(1.0, (p[i, d] / q[i, d]).item()):
            continue
        return i, int(torch.multinomial(p[i], 1, generator=generator).item())
    return len(drafted), int(torch.multinomial(p[len(drafted)], 1, generator=generator).item())


def chi_square_first_two(rule, trials=4000, k=2):
    g = torch.Generator().manual_seed(1234)
    counts = torch.zeros(4, 4)
    for _ in range(trials):
        res = speculative_decode(MarkovStepper(P), MarkovStepper(Q), [0], k=k, max_new_tokens=2,
                                 temperature=1.0, generator=g, accept_rule=rule)
        counts[res.tokens[0], res.tokens[1]] += 1
    expected = trials * P[0].unsqueeze(1) * P  # P(t1 | 0) * P(t2 | t1)
    return float(((counts - expected) ** 2 / expected).sum())


def test_speculative_sampling_matches_target_distribution():
    assert chi_square_first_two(accept_sampling) < CHI2_CRIT_15_DF_P001


def test_broken_acceptance_rule_is_detected():
    assert chi_square_first_two(broken_rule) > 3 * CHI2_CRIT_15_DF_P001
