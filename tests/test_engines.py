"""The engine registry: one spelling per engine, and a new engine is one `Engine` value.

The toy engine below is registered from this test alone; memory, fit, pair, recommend and launch
pick it up with no other edit, which is the promise of planner/engines/ (docs/architecture.md).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from planner import engines
from planner.cli import main
from planner.core.errors import UsageError
from planner.core.spec import LayerSpec
from planner.engines import vllm
from planner.engines.base import Engine, LaunchInput, Side, Verdict
from planner.fits.machine_lookup import get_machine
from planner.fits.memory import Settings, ledger
from planner.pairing.pair import pair
from planner.plan.recommend import recommend
from planner.plan.request import Target, Where, Workload
from planner.sources import load_spec

BLOCK = 64  # the toy engine's cache block: every sequence's context rounds up to 64 tokens
TOY_OVERHEAD = 777 * 1024 * 1024


def _tokens(layer: LayerSpec, context: int, batch: int, chunk: int | None, windowed: bool) -> int:
    return batch * (-(-context // BLOCK) * BLOCK)


def _rule(t: Side, d: Side, same: bool | None) -> Verdict:
    ok = t.spec.vocab == d.spec.vocab
    return Verdict("toy", ok, None if ok else "vocab_size", None, f"toy compares vocab_size {t.spec.vocab}/{d.spec.vocab}")


def _launch(x: LaunchInput) -> dict[str, str]:
    return {"command": f"toy-serve {x.target} --draft {x.draft} --k {x.k}" if x.draft else f"toy-serve {x.target}"}


TOY = Engine(name="toy", aliases=("toy-engine",), summary="a test engine", overhead_bytes=TOY_OVERHEAD,
             overhead_source="toy context", forward_overhead_s=(1e-3, 0.0), forward_overhead_source="toy step",
             tokens_held=_tokens, prefill_chunk=lambda context, batch: 256, pair_rule=_rule, launch=_launch,
             kv_options=("auto",), gpu_utilization=0.8)


@pytest.fixture
def toy():
    engines.register(TOY)
    yield TOY
    engines.unregister("toy")


def test_canonical_names_and_aliases():
    assert [engines.canonical(n) for n in ("LLAMACPP", "ollama", "mlx-lm", "mlx_lm", "hf", "SGLang", "vllm")] == [
        "llama.cpp", "llama.cpp", "mlx", "mlx", "transformers", "sglang", "vllm"]
    with pytest.raises(UsageError, match="expected one of"):
        engines.canonical("tgi")


def test_defaults_per_machine_kind_are_defined_once():
    assert engines.default_engine("gpu") == "vllm"
    assert engines.default_engine("apple") == engines.default_engine("cpu") == "llama.cpp"
    assert engines.default_engine(None) == "transformers"
    assert engines.default_engine("gpu", gguf=True) == "llama.cpp"


def test_toy_engine_sizes_the_ledger(toy):
    spec = load_spec("llama-3.1-8b")
    led = ledger(spec, Settings(context=1000, resolved_engine=engines.get("toy-engine")))
    # 1000 tokens round up to 1024 (16 blocks of 64): 32 layers x 8 KV heads x 128 x (K + V) x 2 B per token
    assert led.models[0].kv_cache_bytes == 1024 * 32 * 8 * 128 * 2 * 2
    assert led.overhead_bytes == TOY_OVERHEAD and led.overhead_source == "toy context"


def test_toy_engine_in_pair_recommend_and_launch(toy):
    target, draft = load_spec("llama-3.1-8b-instruct"), load_spec("llama-3.2-1b-instruct")
    r = pair(target, draft)
    assert r.verdicts["toy"].compatible and "toy compares vocab_size 128256/128256" in r.verdicts["toy"].detail
    rec = recommend(Target(target, "meta-llama/Llama-3.1-8B-Instruct", candidates=None),
                    Where(get_machine("h100-sxm"), engines.get("toy")),
                    Workload(context=4096))
    assert rec.engine == "toy" and rec.plans
    best = rec.plans[0]
    assert best.launch["command"] == f"toy-serve meta-llama/Llama-3.1-8B-Instruct --draft {best.draft_ref} --k {best.k}"


def test_toy_engine_through_the_cli(toy, capsys):
    with pytest.raises(SystemExit) as e:
        main(["memory", "llama-3.1-8b", "--engine", "toy", "--context", "1000", "--json"])
    assert e.value.code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["engine"] == "toy" and data["overhead_bytes"] == TOY_OVERHEAD
    assert data["models"][0]["kv_cache_bytes"] == 1024 * 32 * 8 * 128 * 2 * 2


def test_engine_facts_are_read_from_the_engine_not_its_name(toy):
    """Swap one fact on a copy of vLLM: the budget follows the fact, whatever the name."""
    from planner.fits.budget import device_budget

    dev = get_machine("h100-sxm").devices[0]
    engines.register(replace(vllm.ENGINE, name="toy", aliases=(), gpu_utilization=0.5))
    assert device_budget(dev, engines.get("toy")).budget_bytes == dev.memory_bytes // 2
    assert device_budget(dev, engines.get("vllm")).budget_bytes == int(dev.memory_bytes * 0.92)  # vllm/config/cache.py:215
