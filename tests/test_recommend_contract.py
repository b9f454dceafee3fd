"""`planner recommend`'s command-line contract: --draft like every other command, --head for an uncatalogued
EAGLE-3 head, llama.cpp's n-gram drafters as distinct choices, and no draft-model note where none is wanted.

Why: these were found mapping real deployments; a draft dropped without a word, or a note about draft models
under `--method mtp`, misleads the user. Each test checks a value the CLI computes against what the flags ask.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from planner import engines
from planner.commands._methods import parse_methods
from planner.core.errors import UsageError
from planner.drafting import NgramLookup, ngram_variants, self_drafting
from planner.engines import llamacpp_launch
from planner.sources import load_spec

from .cli_run import run_cli as run

SCOUT = Path(__file__).parent / "fixtures" / "heads" / "llama4-scout-eagle3"
BASE = ["--machine", "rtx-4090", "--engine", "vllm", "--json"]


def _json(args, capsys):
    code, out, err = run(["recommend", *args], capsys)
    assert code == 0, err
    return json.loads(out)


def test_draft_names_the_one_draft_as_candidates_does(capsys):
    one = _json(["qwen2.5-7b-instruct", "--draft", "qwen2.5-0.5b-instruct", *BASE], capsys)
    many = _json(["qwen2.5-7b-instruct", "--candidates", "qwen2.5-0.5b-instruct", *BASE], capsys)
    assert one["plans"] == many["plans"] and one["recommendation"] == many["recommendation"]
    assert {p["draft"] for p in one["plans"] if p["method"] == "draft_model"} == {"Qwen/Qwen2.5-0.5B-Instruct"}


def test_draft_with_a_method_that_drops_it_is_refused(capsys):
    code, out, err = run(["recommend", "qwen2.5-7b-instruct", "--draft", "qwen2.5-0.5b-instruct", "--method", "mtp",
                          *BASE], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "draft_model" in err


def test_head_plans_an_uncatalogued_eagle3_head(capsys):
    data = _json(["llama-3.1-8b-instruct", "--method", "eagle3", "--head", str(SCOUT), *BASE], capsys)
    heads = [p for p in data["plans"] if p["method"] == "eagle3" and p["draft"] == SCOUT.name]
    assert heads, [p["draft"] for p in data["plans"]]


def test_head_without_eagle3_is_refused(capsys):
    code, _, err = run(["recommend", "llama-3.1-8b-instruct", "--method", "mtp", "--head", str(SCOUT), *BASE], capsys)
    assert code == 2 and "eagle3" in err


@pytest.mark.parametrize("method", ["mtp", "ngram"])
def test_no_draft_model_note_when_only_self_drafting_is_asked(method, capsys):
    # Qwen3.5-35B-A3B's vocabulary matches no catalog tokenizer family, so a draft-model search finds nothing
    plain = _json(["qwen3.5-35b-a3b", "--machine", "h100-sxm", "--engine", "llama.cpp", "--json"], capsys)
    assert any("no catalog draft shares" in n for n in plain["notes"])
    asked = _json(["qwen3.5-35b-a3b", "--machine", "h100-sxm", "--engine", "llama.cpp", "--method", method, "--json"],
                  capsys)
    assert not any("no catalog draft shares" in n for n in asked["notes"])


def test_ngram_variants_are_llamacpp_spec_types():
    # common/speculative.cpp:42-46 @ 001d906 names exactly these n-gram spec types
    assert set(ngram_variants()) == {"ngram_simple", "ngram_map_k", "ngram_map_k4v", "ngram_mod", "ngram_cache"}
    assert parse_methods("ngram-mod,ngram_map_k") == ("ngram_mod", "ngram_map_k")
    with pytest.raises(UsageError, match="ngram_foo"):
        parse_methods("ngram-foo")


@pytest.mark.parametrize("variant, key, length", [
    ("ngram-simple", "--spec-ngram-simple-size-n", "--spec-ngram-simple-size-m"),
    ("ngram-map-k", "--spec-ngram-map-k-size-n", "--spec-ngram-map-k-size-m"),
    ("ngram-mod", "--spec-ngram-mod-n-match", "--spec-ngram-mod-n-max"),
])
def test_each_variant_launches_with_its_own_flags(variant, key, length, capsys):
    data = _json(["llama-3.1-8b-instruct", "--machine", "rtx-4090", "--engine", "llama.cpp", "--method", variant,
                  "--workload", "code", "--json"], capsys)
    rec = data["recommendation"]
    argv = shlex.split(rec["launch"]["command"])
    assert argv[argv.index("--spec-type") + 1] == variant
    assert argv[argv.index(length) + 1] == str(rec["k"])  # the plan's K is the variant's draft length
    assert argv[argv.index(key) + 1] == "4"  # NGRAM_MAX: the key n-gram matched


def test_ngram_cache_has_no_key_flag():
    assert llamacpp_launch._ngram_flags("ngram-cache", 4, 7) == " --spec-type ngram-cache --spec-draft-n-max 7"


def test_a_variant_is_refused_where_the_engine_lacks_it():
    target = load_spec("llama-3.1-8b-instruct")
    runs, left = self_drafting(target, engines.get("vllm"), kinds=("ngram_mod",))
    assert runs == [] and left == ["ngram-mod: vllm has no n-gram drafter 'ngram-mod' (its own: none)"]
    runs, _ = self_drafting(target, engines.get("llama.cpp"), kinds=("ngram_mod",))
    assert [m.label for m in runs] == ["ngram-mod (chat)"]
    c = NgramLookup(variant="ngram-mod").compatibility(target, engines.get("vllm"))
    assert not c.runs and c.verdict.failed_rule == "ngram_variant"
