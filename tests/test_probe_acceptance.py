"""Real weights: acceptance and curves on two tiny transformers Llama models built in the test.

Models: LlamaConfig hidden 64, 2 layers, saved with save_pretrained(safe_serialization=True), plus a
byte-level tokenizer (tokenizers library) saved beside them. Nothing is downloaded.
"""

from __future__ import annotations

import json
import math

import pytest

from planner.cli import main
from planner.core.errors import IncompatiblePair, UsageError

torch = pytest.importorskip("torch", reason="the probe needs torch (extra 'probe')")
transformers = pytest.importorskip("transformers", reason="real-weights acceptance loads transformers models (extra 'real')")
pytestmark = pytest.mark.torch

from planner.probe.acceptance import Prompt, load_prompts, measure_acceptance, position_values  # noqa: E402
from planner.probe.device import cpu_threads  # noqa: E402
from planner.probe.real import check_local_model, load_causal_lm  # noqa: E402
from planner.probe.timing import Deadline  # noqa: E402

EOS = 256


def byte_tokenizer(reverse: bool = False):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    if reverse:
        alphabet = alphabet[::-1]
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    vocab["<eos>"] = EOS
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>")


def tiny_llama(path, seed: int, *, reverse_tokenizer: bool = False):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=300, max_position_embeddings=1024, eos_token_id=EOS,
                      bos_token_id=None, pad_token_id=None)
    LlamaForCausalLM(cfg).save_pretrained(path, safe_serialization=True)
    byte_tokenizer(reverse_tokenizer).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-llamas")
    return {"target": tiny_llama(root / "target", 0), "draft": tiny_llama(root / "draft", 1),
            "other_tok": tiny_llama(root / "other-tok", 1, reverse_tokenizer=True)}


@pytest.fixture(autouse=True)
def _one_thread():
    with cpu_threads(1):
        yield


def load(path):
    return load_causal_lm(path, device="cpu", dtype="F32")


PROMPTS = (Prompt("chat", "Hello there, how are you?"), Prompt("code", "def add(a, b):\n"),
           Prompt("math", "2 + 2 ="))


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_draft_equal_to_target_gives_alpha_one(models, temperature):
    from transformers import AutoTokenizer

    m = load(models["target"])
    tok = AutoTokenizer.from_pretrained(models["target"])
    acc = measure_acceptance(m, m, tok, PROMPTS, temperature=temperature, max_new_tokens=10, k_max=4,
                             device="cpu", seed=0, deadline=Deadline(60), draft_tokenizer=tok)
    assert acc.alpha == pytest.approx(1.0, abs=1e-9)
    assert acc.greedy_match == 1.0
    assert acc.per_position == pytest.approx((1.0,) * 4, abs=1e-9)
    assert acc.prompts == 3 and acc.positions >= 3
    assert set(acc.by_kind) == {"chat", "code", "math"}
    assert acc.alpha_std == pytest.approx(0.0, abs=1e-9)


def test_greedy_acceptance_matches_transformers_generate(models):
    """T = 0: alpha = greedy match = the share of positions where the argmaxes agree along the target's
    greedy continuation, recomputed here with transformers' own generate()."""
    from transformers import AutoTokenizer

    t, d = load(models["target"]), load(models["draft"])
    tok = AutoTokenizer.from_pretrained(models["target"])
    acc = measure_acceptance(t, d, tok, PROMPTS, temperature=0.0, max_new_tokens=12, k_max=3, device="cpu",
                             seed=0, deadline=Deadline(60))
    agree = total = 0
    for p in PROMPTS:
        ids = torch.tensor([tok(p.text)["input_ids"]])
        out = t.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False,
                         eos_token_id=EOS, pad_token_id=EOS)
        n = ids.shape[1]
        with torch.no_grad():
            lt, ld = t(out).logits[0, n - 1:out.shape[1] - 1], d(out).logits[0, n - 1:out.shape[1] - 1]
        agree += int((lt.argmax(-1) == ld.argmax(-1)).sum())
        total += out.shape[1] - n
    assert acc.positions == total
    assert acc.greedy_match == pytest.approx(agree / total)
    assert acc.alpha == pytest.approx(acc.greedy_match)
    assert 0.0 <= acc.alpha < 1.0


def test_position_values_against_a_hand_computation():
    g = torch.Generator().manual_seed(0)
    p, q = torch.randn(6, 50, generator=g), torch.randn(6, 52, generator=g)  # draft vocab padded by 2
    alpha, match = position_values(p, q, 0.7)
    for i in range(6):
        ep = [math.exp(x / 0.7) for x in p[i].tolist()]
        eq = [math.exp(x / 0.7) for x in q[i, :50].tolist()]
        sp, sq = sum(ep), sum(eq)
        assert alpha[i] == pytest.approx(sum(min(a / sp, b / sq) for a, b in zip(ep, eq, strict=True)))
        assert match[i] == float(p[i].argmax() == q[i, :50].argmax())


def test_tokenizer_mismatch_is_refused(models):
    from transformers import AutoTokenizer

    t, d = load(models["target"]), load(models["other_tok"])
    with pytest.raises(IncompatiblePair, match="tokenizer encodes prompt 0"):
        measure_acceptance(t, d, AutoTokenizer.from_pretrained(models["target"]), PROMPTS, temperature=1.0,
                           max_new_tokens=4, k_max=2, device="cpu", seed=0, deadline=Deadline(60),
                           draft_tokenizer=AutoTokenizer.from_pretrained(models["other_tok"]))


def test_local_safetensors_only(tmp_path):
    with pytest.raises(UsageError, match="not a directory"):
        check_local_model(tmp_path / "absent")
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x02")
    with pytest.raises(UsageError, match="never loaded"):
        check_local_model(tmp_path)


def test_cli_real_curves_and_acceptance(models, tmp_path, capsys):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("The weather today is\nfor i in range(10):\n")
    with pytest.raises(SystemExit) as e:
        main(["probe", str(models["target"]), "--draft", str(models["target"]), "--real", "--device", "cpu",
              "--max-k", "3", "--context", "40", "--budget-s", "30", "--new-tokens", "8", "--prompts", str(prompts),
              "--threads", "1", "--repeats", "3", "--json"])
    cap = capsys.readouterr()
    assert e.value.code == 0, cap.err
    data = json.loads(cap.out)
    assert data["backend"] == "transformers (cpu)" and data["target"]["method"] == "real"
    assert len(data["target"]["verify_s"]) == 4 and all(t > 0 for t in data["target"]["verify_s"])
    assert data["draft"]["step_s"] > 0
    acc = data["acceptance"]
    assert acc["alpha"] == pytest.approx(1.0, abs=1e-9) and acc["greedy_match"] == 1.0
    assert acc["prompts"] == 2 and acc["by_kind"] == {"custom": pytest.approx(1.0, abs=1e-9)}


def test_bundled_prompts_are_varied():
    ps = load_prompts()
    assert {p.kind for p in ps} == {"chat", "code", "math", "prose"}
    assert len(ps) >= 8
