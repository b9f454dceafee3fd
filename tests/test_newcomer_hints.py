"""What a newcomer types wrong gets a hint (issue #31 item 14): an engine typo, a Hub-id typo, the README's engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner import engines
from planner.core.errors import ModelNotFound, OfflineError, UsageError
from planner.sources import hub, resolve

from .cli_run import run_cli as run

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("typo", "meant"), [("vlm", "vllm"), ("sglan", "sglang"), ("llama.ccp", "llama.cpp"),
                                             ("transformer", "transformers")])
def test_an_engine_typo_names_the_engine(typo, meant, capsys):
    with pytest.raises(UsageError, match=rf"did you mean '{meant}'\?"):
        engines.canonical(typo)
    code, out, err = run(["recommend", "qwen2.5-7b-instruct", "--engine", typo], capsys)
    assert code == 2 and out == "" and f"did you mean '{meant}'?" in err and len(err.splitlines()) == 1


def test_a_far_name_gets_no_guess():
    with pytest.raises(UsageError) as e:
        engines.canonical("xyz")
    assert "did you mean" not in str(e.value)


def test_a_hub_id_typo_names_the_catalogued_id_offline(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, _, err = run(["memory", "meta-llama/Llama-3.1-8B-Instruc"], capsys)
    assert code == 2 and "Did you mean: meta-llama/Llama-3.1-8B-Instruct" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("error", [ModelNotFound("Cannot find model 'x' on the Hub (404).", "x"),
                                   OfflineError("Cannot reach the Hub.")])
def test_a_hub_id_typo_names_the_catalogued_id_when_the_hub_answers_no(error, monkeypatch):
    def refuse(ref, revision):
        raise error
    monkeypatch.setattr(hub, "fetch_from_hub", refuse)
    monkeypatch.setattr(hub, "cached_snapshot", lambda ref, revision: None)
    monkeypatch.setattr(resolve, "_fallback", lambda ref, revision: None)
    with pytest.raises(type(error), match=r"Did you mean: meta-llama/Llama-3\.1-8B-Instruct"):
        resolve.locate("meta-llama/Llama-3.1-8B-Instruc")


def test_the_readme_names_every_engine():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in ("llama.cpp", "vLLM", "SGLang", "transformers", "mlx-lm"):
        assert f" {name} " in readme.split("## Quick start")[0]
    assert len(engines.names()) == 5


def test_fits_budget_line_states_the_margin_in_units(capsys):
    code, out, _ = run(["fit", "llama-3.1-8b-instruct", "--machine", "rtx-4090", "--engine", "llama.cpp"], capsys)
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("budget:"))
    assert engines.get("llama.cpp").device_margin_bytes == 2**30
    assert "- 1.00 GiB llama.cpp margin" in line and "1073741824" not in line
