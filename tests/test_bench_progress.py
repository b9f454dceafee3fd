"""bench reports progress on stderr (one line each, rate-limited) and names every missing package at once
(#31 item 10).

Why: an n-gram bench once ran 650 s with no output, and missing packages surfaced one per run. The
rate limit and the count are checked with a fake clock; the run's own count from a real tiny pair.
"""

from __future__ import annotations

import pytest

from planner.bench import deps
from planner.bench.progress import MIN_INTERVAL_S, Progress
from planner.core.constants import REAL_EXTRA_HINT
from planner.core.errors import UsageError


def test_lines_are_rate_limited_and_the_last_is_always_printed():
    lines: list[str] = []
    ticks = iter(range(0, 1000))  # one second per call: 100 decodes over 100 s
    p = Progress(100, lines.append, clock=lambda: float(next(ticks)))
    for _ in range(100):
        p.step("baseline")
    # a line when >= MIN_INTERVAL_S passed since the last one: every 5th decode of 100 s, 20 lines
    assert len(lines) == 100 // MIN_INTERVAL_S
    assert lines[-1] == "progress: 100/100 decodes (baseline), 100 s"
    assert all(ln.startswith("progress: ") and "\n" not in ln for ln in lines)


def test_a_fast_run_prints_only_its_last_line():
    lines: list[str] = []
    p = Progress(6, lines.append, clock=lambda: 0.0)
    for what in ("baseline", "speculative") * 3:
        p.step(what)
    assert lines == ["progress: 6/6 decodes (speculative), 0 s"]


def test_every_missing_package_is_named_in_one_error():
    with pytest.raises(UsageError) as e:
        deps.require(("torch", "transformers", "tokenizers"), find=lambda name: None if name != "tokenizers" else 1)
    msg = str(e.value)
    assert "torch, transformers are not installed" in msg and REAL_EXTRA_HINT in msg and "\n" not in msg
    deps.require(("torch",), find=lambda name: object())  # all present: no error
    assert deps.missing(("a", "b"), find=lambda name: None) == ["a", "b"]


@pytest.mark.torch
def test_run_pair_reports_each_decode(capsys):
    transformers = pytest.importorskip("transformers", reason="a real decode needs transformers (extra 'real')")
    torch = pytest.importorskip("torch", reason="a real decode needs torch (extra 'real')")
    from planner.bench.decode import HFStepper
    from planner.bench.runner import run_pair

    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    torch.manual_seed(0)
    m = transformers.LlamaForCausalLM(cfg).eval().float()
    seen: list[str] = []
    prompts = [[5, 6, 7], [8, 9]]
    run_pair(lambda: HFStepper(m), lambda: HFStepper(m), prompts, k=2, tokens=4, repeats=2, warmup=1,
             cost_repeats=1, progress=seen.append)
    # 2 prompts x (1 warm-up + 2 repeats) x (baseline, speculative)
    assert len(seen) == 2 * 3 * 2
    assert seen[:2] == ["baseline", "baseline"] and seen[2:4] == ["speculative", "speculative"]
