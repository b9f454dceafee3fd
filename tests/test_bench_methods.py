"""The bench's drafters that are not a second model: n-gram lookup and early exit, on tiny and real weights.

Why: the planner predicts these methods with the same round-time algebra as a draft model; the
bench checks it against real decoding, here on the two real GGUF models (slow) and on tiny random
Llamas (fast), with the greedy output required to equal the target's own.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch", reason="the bench needs torch (extra 'probe')")
transformers = pytest.importorskip("transformers", reason="the bench loads transformers models")

from planner.bench.decode import HFStepper, speculative_decode, target_decode  # noqa: E402
from planner.bench.methods import EarlyExitStepper, NgramStepper  # noqa: E402
from planner.cli import main  # noqa: E402
from planner.core.errors import UsageError  # noqa: E402

from .conftest import FIXTURES  # noqa: E402
from .test_bench_runner import tiny  # noqa: E402
from .test_gguf_real import GEMMA, SMOLLM, real  # noqa: E402

CODE_EDIT = FIXTURES / "prompts" / "code_edit.json"  # answers that copy the prompt (CC0, written for these tests)


def test_ngram_lookup_copies_what_followed_the_latest_match():
    s = NgramStepper(vocab=20, max_ngram=2)
    s.forward([1, 2, 3, 9, 1, 2])  # "1 2" occurred before, followed by 3
    assert s.propose() == 3
    s.forward([3])  # "2 3" -> 9
    assert s.propose() == 9
    s.rollback(1)
    assert s.history == [1, 2, 3, 9, 1, 2] and s.length() == 6
    s2 = NgramStepper(vocab=20, max_ngram=3)
    s2.forward([4, 5, 6])  # nothing recurs: propose the last token again
    assert s2.propose() == 6
    logits = s2.forward([7])
    assert logits.shape == (1, 20) and int(logits[0].argmax()) == 7


def test_ngram_and_early_exit_keep_greedy_output_lossless():
    m = tiny(1, 4, vocab=64)
    prompt = [3, 4, 5, 6, 3, 4, 5, 6, 3, 4]
    ref = target_decode(HFStepper(m), prompt, max_new_tokens=16).tokens
    for draft in (NgramStepper(64), EarlyExitStepper(m, 1)):
        out = speculative_decode(HFStepper(m), draft, prompt, k=3, max_new_tokens=16)
        assert out.tokens == ref
        assert all(0 <= r.accepted <= r.drafted <= 3 for r in out.records)


def test_early_exit_restores_the_full_model():
    m = tiny(2, 4, vocab=64)
    n = len(m.model.layers)
    EarlyExitStepper(m, 2).forward([1, 2, 3])
    assert len(m.model.layers) == n
    with pytest.raises(UsageError, match=r"expected 1\.\.3"):
        EarlyExitStepper(m, 4)


def _bench(capsys, *argv: str) -> tuple[int, dict]:
    with pytest.raises(SystemExit) as e:
        main(["bench", *argv, "--json"])
    return e.value.code, json.loads(capsys.readouterr().out)


def test_bench_method_errors_are_exit_2(capsys):
    for argv in (["--method", "medusa"], ["--method", "draft_model"], ["--method", "ngram", "--temperature", "0.7"]):
        with pytest.raises(SystemExit) as e:
            main(["bench", str(real(SMOLLM)), *argv])
        assert e.value.code == 2 and capsys.readouterr().err.startswith("error: Cannot bench")


@pytest.mark.slow
@pytest.mark.parametrize(("model", "method", "extra"), [
    (SMOLLM, "ngram", ["--prompts", str(CODE_EDIT)]), (SMOLLM, "early_exit", []),
    (GEMMA, "early_exit", ["--exit-layer", "6"]), (GEMMA, "ngram", [])])
def test_bench_real_weights_prediction_within_20_percent(capsys, model, method, extra):
    code, r = _bench(capsys, str(real(model)), "--method", method, "--k", "3", "--tokens", "24", "--max-prompts", "2",
                     "--repeats", "1", "--clock", "thread", *extra)
    assert r["method"] == method and r["greedy_identical"] is True
    assert abs(r["error"]) <= 0.20, r
    assert (r["measured_speedup"] > 1.0) == (r["predicted_speedup"] > 1.0)  # the right sign
    assert code == (0 if r["measured_speedup"] > 1.0 else 1)
