"""The bench: measured vs predicted on tiny models, acceptance conventions, the CLI schema."""

from __future__ import annotations

import json
import shutil

import pytest

torch = pytest.importorskip("torch", reason="the bench needs torch (extra 'probe')")
transformers = pytest.importorskip("transformers", reason="the bench loads transformers models")

from planner.bench.decode import HFStepper  # noqa: E402
from planner.bench.runner import acceptance_summary, run_pair  # noqa: E402
from planner.cli import main  # noqa: E402

from .conftest import FIXTURES  # noqa: E402

TOKENIZER = FIXTURES / "tokenizers" / "all-MiniLM-L6-v2"


def tiny(seed: int, layers: int, vocab: int = 30522):
    cfg = transformers.LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(cfg).eval().float()


def test_run_pair_draft_equals_target():
    m = tiny(0, 2, vocab=128)
    prompts = [[5, 6, 7, 8], [9, 10, 11]]
    r = run_pair(lambda: HFStepper(m), lambda: HFStepper(m), prompts, k=3, tokens=12, repeats=1, warmup=0,
                 cost_repeats=2)
    assert r.greedy_identical is True
    assert r.acceptance["accepted_per_drafted"] == 1.0 and r.acceptance["per_position"] == [1.0, 1.0, 1.0]
    assert r.baseline_tokens_per_s > 0 and r.speculative_tokens_per_s > 0
    assert len(r.costs.verify_s) == 4 and all(t > 0 for t in r.costs.verify_s)
    # every draft accepted: E(3) = 4 tokens per round; predicted = E t_v(1) / (3 t_d + t_v(4) + t_o)
    c = r.costs
    assert r.predicted_speedup == pytest.approx(4 * c.verify_s[0] / (3 * c.draft_s + c.verify_s[3] + c.overhead_s))


def test_acceptance_summary_conventions():
    from planner.bench.decode import StepRecord

    recs = [StepRecord(4, a, 0.0, 0.0) for a in (4, 2, 0, 4, 1)] + [StepRecord(2, 2, 0.0, 0.0)]
    s = acceptance_summary(recs, 4)
    assert s["histogram"] == [1, 1, 1, 0, 2]
    assert s["accepted_per_drafted"] == pytest.approx(13 / 22)
    assert s["mean_accepted_length"] == pytest.approx((13 + 6) / 6)
    # a_1 = 4/5 rounds accepted >= 1; a_2 = 3/4; a_3 = 2/3; a_4 = 2/2
    assert s["per_position"] == pytest.approx([4 / 5, 3 / 4, 2 / 3, 1.0])


def test_cli_bench_json(tmp_path, capsys):
    dirs = []
    for name, seed, layers in (("target", 0, 3), ("draft", 0, 3)):
        d = tmp_path / name
        tiny(seed, layers).save_pretrained(d, safe_serialization=True)
        for name_ in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(TOKENIZER / name_, d / name_)
        dirs.append(str(d))
    with pytest.raises(SystemExit) as e:
        main(["bench", dirs[0], "--draft", dirs[1], "--k", "2", "--tokens", "6", "--max-prompts", "2",
              "--repeats", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    for key in ("baseline_tokens_per_s", "speculative_tokens_per_s", "measured_speedup", "predicted_speedup",
                "k", "acceptance", "greedy_identical"):
        assert key in out
    assert out["k"] == 2 and out["greedy_identical"] is True
    assert out["acceptance"]["accepted_per_drafted"] == 1.0  # same weights: every draft accepted
    assert e.value.code in (0, 1)
