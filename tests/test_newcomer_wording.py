"""Small things a newcomer trips on (#31 item 14): glued notes, a non-existent model named in advice,
"1 sequences", a refusal printed twice, and a plan recommended for a gain inside the noise."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from planner import engines
from planner.cli import main
from planner.plan import recommend as R
from planner.plan.request import Target, Where, Workload
from planner.render.blocks import crossover_text
from tests.gguf_dir import gguf_test_dir


def run(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    got = capsys.readouterr()
    return e.value.code, got.out, got.err


def test_fit_notes_are_joined_as_notes(capsys):
    code, out, _ = run(["fit", "qwen2.5-32b-instruct", "--draft", "qwen2.5-0.5b-instruct", "--machine", "rtx-4090",
                        "--context", "32k", "--weights-dtype", "int4", "--json"], capsys)
    assert code == 1  # does not fit as asked: the combination's launch carries the notes
    note = json.loads(out)["combinations"][0]["launch"]["note"]
    # each note ends where the next begins: "...at load; K=3 here: ..." (once "...at load K=3: ...")
    assert "; K=3 here: planner recommend chooses K" in note and "load K=" not in note


def test_one_sequence_is_singular():
    assert crossover_text(1, 8) == "1 sequence" and crossover_text(4, 8) == "4 sequences"


def test_pair_advice_names_a_model_that_exists(capsys):
    code, out, _ = run(["pair", "qwen2.5-14b-instruct", "qwen2.5-1.5b-instruct", "--json"], capsys)
    assert code in (0, 1)
    text = json.dumps(json.loads(out)["advice"])
    assert "Llama-3.2-1B -> Llama-3.1-8B" in text and "Llama-3.2-8B" not in text


def test_a_refused_draft_is_named_once(capsys):
    d = gguf_test_dir()
    t, c = d / "gemma-3-270m-q4_k_m.gguf", d / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not (t.exists() and c.exists()):
        pytest.skip("the real GGUF files are not here (scripts/fetch_ggufs.py)")
    code, out, _ = run(["recommend", str(t), "--candidates", str(c), "--machine", "rtx-4090", "--json"], capsys)
    assert code == 0
    (why,) = [r for r in json.loads(out)["recommendation"]["reasons"] if "no candidate draft" in r]
    assert why.count("vocab_type") == 1  # its plans at two KV types share one refusal


def test_a_gain_inside_the_noise_is_not_recommended():
    rec = R.recommend(Target(_spec(), "Qwen/Qwen2.5-7B-Instruct", candidates=None),
                      Where(_machine(), engines.get("vllm")),
                      Workload(batch=1, context=4096))
    best = next(o for o in rec.plans if o.usable)
    launch = engines.LaunchInput(target="Qwen/Qwen2.5-7B-Instruct", draft=None, k=0, context=4096)
    under = R._choose([replace(best, speedup=R.MIN_GAIN - 0.01)], True, launch, engines.get("vllm"))
    over = R._choose([replace(best, speedup=R.MIN_GAIN + 0.01)], True, launch, engines.get("vllm"))
    assert under.draft is None and "inside the noise" in under.reasons[0]
    assert over.draft == best.draft


def _spec():
    from planner.sources import load_spec
    return load_spec("qwen2.5-7b-instruct")


def _machine():
    from planner.fits.machine_lookup import get_machine
    return get_machine("rtx-4090")


def test_install_hints_pin_torch_as_the_readme_does(monkeypatch):
    """A missing torch names the README's pinned CPU build (an unpinned one pulls a multi-GB CUDA build), and
    the real-weights extra comes in one hint with it (#31 item 10)."""
    import re
    from pathlib import Path

    from planner.core.constants import REAL_EXTRA_HINT, TORCH_PIN
    from planner.core.errors import TorchUnavailable
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert re.search(r"pip install (torch==[\d.]+)", readme).group(1) == TORCH_PIN  # one pin, never drifting
    assert f"'pip install {TORCH_PIN}'" in str(TorchUnavailable("probe"))
    assert REAL_EXTRA_HINT.startswith(f"pip install {TORCH_PIN} && ") and "spec-planner[real]" in REAL_EXTRA_HINT


@pytest.mark.torch
def test_bench_checks_the_pair_before_loading_a_model(capsys):
    """bench compares the tokenizers from their files first (#31 item 10: once found after 89 s)."""
    import time

    pytest.importorskip("torch", reason="the probe path needs torch (pip install torch==2.13.0)")
    d = gguf_test_dir()
    t, c = d / "gemma-3-270m-q4_k_m.gguf", d / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not (t.exists() and c.exists()):
        pytest.skip("the real GGUF files are not here (scripts/fetch_ggufs.py)")
    start = time.monotonic()
    code, _, err = run(["bench", str(t), "--draft", str(c), "--tokens", "8"], capsys)
    assert code != 0 and "the tokenizers differ" in err and "vocab" in err
    assert time.monotonic() - start < 30  # headers and tokenizer facts only: no model was loaded
