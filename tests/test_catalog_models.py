"""The bundled model catalog (catalogs/models/*.json): schema, uniqueness, loading, and sizes.

Why: `recommend`, `pair` and `fit` must work offline on popular families, so every entry has
to load through the same path as a real config.json (planner.sources.load_spec) and size to
numbers that agree with independently published ones: safetensors totals measured by third
parties, model-card parameter counts, and KV bytes per token worked out by hand from the
config values (2 [K and V] x layers x kv_heads x head_dim x 2 B for bf16).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from planner import engines
from planner.cli import main
from planner.core.constants import catalog_dir
from planner.fits.memory import Settings, kv_per_token, model_ledger
from planner.sources import load_spec

MODELS_DIR = catalog_dir() / "models"
VOCAB_TYPES = {"BPE", "SPM", "UGM", "WPM"}
VERIFICATION_GRADES = ("A", "B", "D")
REQUIRED = {"id": str, "aliases": list, "family": str, "instruct": bool, "source": str, "verification": str,
            "config": dict}
TOKENIZER_INT_OR_NULL = ("bos_id", "eos_id", "pad_id")
TOKENIZER_BOOL_OR_NULL = ("add_bos", "add_eos", "chat_template")

def _entries() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(MODELS_DIR.glob("*.json")):
        data = json.loads(path.read_text())
        assert isinstance(data, dict) and isinstance(data.get("models"), list), path
        out.extend((path.name, e) for e in data["models"])
    return out


ENTRIES = _entries()
BY_ID = {e["id"]: e for _, e in ENTRIES}


def _param(item: tuple[str, dict], *, loading: bool = False):
    e = item[1]
    return pytest.param(e, id=e["id"])


def test_catalog_is_not_trivially_small():
    # The brief's minimum list alone has more than 60 models; a broken glob or an emptied file shows here.
    assert len(ENTRIES) >= 60
    families = {e["family"] for _, e in ENTRIES}
    assert {"qwen2.5", "qwen3", "llama3", "gemma2", "gemma3", "smollm2", "mistral", "gpt-oss"} <= families


@pytest.mark.parametrize("entry", [_param(x) for x in ENTRIES])
def test_entry_schema(entry):
    for key, typ in REQUIRED.items():
        assert isinstance(entry.get(key), typ), f"{entry.get('id')}: '{key}' must be {typ.__name__}"
    assert entry["source"].strip(), "source must name where the config was found"
    assert entry["verification"].startswith(VERIFICATION_GRADES), entry["verification"]
    assert entry["aliases"] and all(isinstance(a, str) and a == a.strip().lower() for a in entry["aliases"])
    assert "/" in entry["id"], "ids are Hugging Face repo ids (org/name)"
    cfg = entry["config"]
    assert isinstance(cfg.get("model_type"), str) and cfg["model_type"]
    if "checkpoint" in entry:
        ck = entry["checkpoint"]
        assert isinstance(ck["total_size"], int) and ck["total_size"] > 0 and ck["source"].strip()
    if "generation_config" in entry:
        assert isinstance(entry["generation_config"], dict)
    if "notes" in entry:
        assert isinstance(entry["notes"], str)


@pytest.mark.parametrize("entry", [_param(x) for x in ENTRIES])
def test_tokenizer_facts(entry):
    tok = entry.get("tokenizer")
    if tok is None:
        # Allowed only when the entry says why (the true token count could not be sourced).
        assert "Tokenizer facts withheld" in entry.get("notes", ""), f"{entry['id']}: no tokenizer facts, no reason"
        return
    assert tok["vocab_type"] in VOCAB_TYPES
    assert isinstance(tok["family"], str) and tok["family"]
    assert isinstance(tok["source"], str) and tok["source"].strip()
    n = tok["vocab_size"]
    assert isinstance(n, int) and not isinstance(n, bool) and n > 0
    for k in TOKENIZER_INT_OR_NULL:
        v = tok[k]
        assert v is None or (isinstance(v, int) and not isinstance(v, bool) and 0 <= v < n), (k, v)
    for k in TOKENIZER_BOOL_OR_NULL:
        assert tok[k] is None or isinstance(tok[k], bool), (k, tok[k])
    # A tokenizer cannot produce more ids than the embedding has rows (Qwen pads 151665 -> 151936/152064).
    text = entry["config"].get("text_config") or entry["config"]
    if isinstance(text.get("vocab_size"), int):
        assert n <= text["vocab_size"], f"{entry['id']}: {n} token ids > {text['vocab_size']} embedding rows"


def test_tokenizer_family_tags_are_consistent():
    """Equal tags promise identical id -> token tables, so sizes and vocab types must agree."""
    seen: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for _, e in ENTRIES:
        tok = e.get("tokenizer")
        if tok:
            seen[tok["family"]].add((tok["vocab_type"], tok["vocab_size"]))
    clashes = {fam: sorted(v) for fam, v in seen.items() if len(v) > 1}
    assert not clashes, clashes


def test_ids_and_aliases_are_unique():
    """catalog.find() keys entries by id, bare name and alias: any collision would shadow an entry."""
    owner: dict[str, str] = {}
    for _, e in ENTRIES:
        keys = {e["id"].lower(), e["id"].split("/")[-1].lower(), *e["aliases"]}
        for k in keys:
            assert k not in owner, f"'{k}' names both {owner[k]} and {e['id']}"
            owner[k] = e["id"]


@pytest.mark.parametrize("entry", [_param(x, loading=True) for x in ENTRIES])
def test_entry_loads_and_sizes(entry):
    spec = load_spec(entry["aliases"][0])
    assert spec.id == entry["id"] and spec.source == "catalog"
    assert spec.family == entry["family"] and spec.instruct == entry["instruct"]
    led = model_ledger(spec, Settings(context=4096, resolved_engine=engines.get("vllm")))
    assert led.weights_bytes > 0 and spec.params_total > 0
    assert 0 < spec.params_active <= spec.params_total
    assert led.kv_cache_bytes > 0, "every model keeps some cache (KV or recurrent state) at 4096 tokens"
    assert spec.provenance.get("config_source") == entry["source"]


# --- independently published parameter counts ---------------------------------------------------
# (alias, expected params_total, relative tolerance, where the number comes from)
EXACT_COUNTS = [
    # safetensors tensor totals printed by a model_inspector report over the real checkpoints
    ("qwen2.5-3b-instruct", 3_085_938_688, "model_inspector report (find_string id 62693603738)"),
    ("qwen2.5-1.5b-instruct", 1_543_714_304, "model_inspector report (find_string id 62511519683)"),
    ("llama-3.2-3b-instruct", 3_212_749_824, "model_inspector report (find_string id 62488854160)"),
    ("smollm2-135m", 134_515_008, "transformers dump 'Total Parameters: 134,515,008' (find_string id 32455597214)"),
    # keras-hub preset metadata (keras-team/keras-hub @71453d08, via shared/reference/models.json)
    ("llama-3.1-8b", 8_030_261_248, "keras-hub llama3.1_8b"),
    ("mixtral-8x7b-v0.1", 46_702_792_704, "keras-hub mixtral_8_7b_en"),
    ("gpt-oss-20b", 20_914_757_184, "keras-hub gpt_oss_20b_en (de-quantized)"),
    ("qwen2.5-0.5b-instruct", 494_032_768, "keras-hub qwen2.5_0.5b_en (same shapes as -Instruct)"),
]
CARD_COUNTS = [
    ("qwen2.5-14b", 14.7e9, "Qwen2.5-14B(-Instruct) model card: 'Number of Parameters: 14.7B'"),
    ("qwen2.5-7b-instruct", 7.61e9, "Qwen2.5-7B model card: 7.61B"),
    ("qwen2.5-72b-instruct", 72.7e9, "Qwen2.5-72B-Instruct model card: 72.7B"),
    ("qwen3-14b", 14.8e9, "Qwen3-14B model card: 14.8B"),
    ("qwen3-32b", 32.8e9, "Qwen3-32B model card: 32.8B"),
    ("qwen3-235b-a22b", 235e9, "Qwen3-235B-A22B model card: 235B total"),
    ("llama-3.3-70b-instruct", 70.6e9, "Llama 3.3 70B: 70.6B (HF safetensors total)"),
    ("gemma-2-27b-it", 27.2e9, "gemma-2-27b-it: 27.2B (HF safetensors total)"),
    ("phi-4", 14.7e9, "phi-4 model card: 14B, HF safetensors total 14.7B"),
]


@pytest.mark.parametrize(("alias", "expected", "source"), EXACT_COUNTS)
def test_params_match_measured_totals(alias, expected, source):
    assert load_spec(alias).params_total == expected, source


@pytest.mark.parametrize(("alias", "expected", "source"), CARD_COUNTS)
def test_params_within_one_percent_of_published(alias, expected, source):
    got = load_spec(alias).params_total
    assert abs(got - expected) / expected < 0.01, f"{alias}: {got:,} vs {expected:,.0f} ({source})"


def test_qwen3_235b_active_params_match_card():
    # Model card: "235B in total and 22B activated" (8 of 128 experts per token).
    spec = load_spec("qwen3-235b-a22b")
    assert abs(spec.params_active - 22e9) / 22e9 < 0.02


# --- KV bytes per token, worked out by hand from each config -------------------------------------

def _hand_kv(cfg: dict, layers: int | None = None) -> int:
    """2 (K and V) x layers x kv_heads x head_dim x 2 bytes (bf16); head_dim defaults to hidden/heads."""
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    return 2 * (layers or cfg["num_hidden_layers"]) * cfg["num_key_value_heads"] * head_dim * 2


@pytest.mark.parametrize(("alias", "by_hand"), [
    ("qwen2.5-7b-instruct", 2 * 28 * 4 * 128 * 2),  # 57,344
    ("qwen2.5-14b", 2 * 48 * 8 * 128 * 2),  # 196,608
    ("llama-3.3-70b-instruct", 2 * 80 * 8 * 128 * 2),  # 327,680
    ("qwen3-235b-a22b", 2 * 94 * 4 * 128 * 2),  # 192,512
    ("mistral-small-24b", 2 * 40 * 8 * 128 * 2),  # 163,840: head_dim 128 is explicit (5120/32 would be 160)
    ("phi-4", 2 * 40 * 10 * 128 * 2),  # 204,800
    ("smollm2-1.7b", 2 * 24 * 32 * 64 * 2),  # 196,608: no GQA
    ("llama-3.2-1b", 2 * 16 * 8 * 64 * 2),  # 32,768
])
def test_kv_bytes_per_token_by_hand(alias, by_hand):
    spec = load_spec(alias)
    entry = BY_ID[spec.id]
    assert _hand_kv(entry["config"]) == by_hand  # the literal above was read off the config values
    assert kv_per_token(spec, Settings(resolved_engine=engines.get("vllm"))) == by_hand


def test_gemma2_27b_kv_counts_global_layers_only():
    # 46 layers alternate sliding(4096)/global: the 23 global layers grow with context.
    spec = load_spec("gemma-2-27b-it")
    assert kv_per_token(spec, Settings(resolved_engine=engines.get("vllm"))) == _hand_kv(BY_ID[spec.id]["config"], layers=23) == 188_416


def test_qwen3_5_small_hybrid_kv_matches_published_worked_example():
    # id 68870418900 computes 2 x 6 full-attention layers x 2 KV heads x 256 x 2 B = 12,288 B/token.
    assert kv_per_token(load_spec("qwen3.5-0.8b"), Settings(resolved_engine=engines.get("vllm"))) == 12_288


def test_checkpoint_sizes_match_resident_weights_where_stored_once():
    # safetensors index total_size == resident bf16 bytes for untied/plainly stored checkpoints.
    for alias in ("llama-3.1-8b", "qwen2.5-7b", "mistral-7b-v0.1"):
        spec = load_spec(alias)
        assert spec.weights.resident_bytes == BY_ID[spec.id]["checkpoint"]["total_size"], alias


def test_instruct_and_base_share_shapes():
    """Instruct variants sized from different sources must agree with their base on every weight."""
    for base, inst in [("qwen2.5-3b", "qwen2.5-3b-instruct"), ("llama-3.2-3b", "llama-3.2-3b-instruct"),
                       ("qwen2.5-0.5b", "qwen2.5-0.5b-instruct"), ("llama-3.1-8b", "llama-3.1-8b-instruct"),
                       ("smollm2-135m", "smollm2-135m-instruct"), ("qwen2.5-1.5b", "qwen2.5-1.5b-instruct")]:
        b, i = load_spec(base), load_spec(inst)
        assert b.weights.resident_bytes == i.weights.resident_bytes, (base, inst)
        assert kv_per_token(b, Settings()) == kv_per_token(i, Settings()), (base, inst)


@pytest.mark.parametrize("alias", ["qwen2.5-1.5b-instruct", "gemma-3-270m", "mistral-small-24b"])
def test_cli_memory_json_works_offline_on_catalog_alias(alias, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["memory", alias, "--json"])
    assert exit_info.value.code == 0
    data = json.loads(capsys.readouterr().out)
    (m,) = data["models"]
    assert m["id"] == BY_ID[load_spec(alias).id]["id"]
    assert m["weights_bytes"] > 0 and m["kv_cache_bytes"] > 0


def test_catalog_dir_is_the_bundled_one():
    bundled = Path(__file__).resolve().parents[1] / "catalogs" / "models"
    assert bundled == MODELS_DIR
