"""catalogs/pairs: schema, sources, conversions done by code, and priors built from it."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from planner.core.constants import PRIOR_CROSS_FAMILY, PRIOR_MIN_HALF_WIDTH, PRIOR_SAME_FAMILY, catalog_dir
from planner.core.errors import ConfigError
from planner.speed.acceptance import (
    CONVENTIONS,
    OUTCOMES,
    entry_acceptance,
    load_pairs,
    prior_for,
)
from planner.speed.model import expected_accepted

DOCS = Path(__file__).resolve().parent.parent / "docs" / "speed.md"
ENGINES = {"llama.cpp", "vllm", "sglang", "transformers", "mlx", "tensorrt-llm"}
KEYS = {"id", "target", "draft", "target_family", "draft_family", "engine", "hardware", "k", "temperature",
        "acceptance", "result", "outcome", "source"}


@pytest.fixture(scope="module")
def pairs():
    return load_pairs()


def test_every_file_is_valid_json_with_documented_keys():
    files = sorted((catalog_dir() / "pairs").glob("*.json"))
    assert len(files) >= 4
    doc = DOCS.read_text()
    for f in files:
        items = json.loads(f.read_text())["pairs"]
        for item in items:
            assert set(item) >= KEYS, (f.name, item.get("id"))
            assert set(item) <= KEYS | {"notes"}, (f.name, item.get("id"))
            assert set(item["result"]) == {"baseline_tok_s", "spec_tok_s", "speedup"}
    for key in [*KEYS, "baseline_tok_s", "spec_tok_s", "speedup", *CONVENTIONS]:
        assert f"`{key}`" in doc, f"docs/speed.md does not document {key}"


def test_entries_are_sourced_and_named_consistently(pairs):
    assert len(pairs) >= 20
    assert len({p.id for p in pairs}) == len(pairs)
    for p in pairs:
        assert re.match(r"^(https://|arXiv \d{4}\.\d{4,5})", p.source), p.id
        assert p.engine in ENGINES, p.id
        assert p.target_family == p.target_family.lower() and p.draft_family == p.draft_family.lower()
        assert p.outcome in OUTCOMES


def test_outcome_agrees_with_the_numbers(pairs):
    for p in pairs:
        s = p.measured_speedup
        if s is None:
            continue
        expected = "faster" if s > 1.02 else "slower" if s < 0.98 else "no gain"
        assert p.outcome == expected, (p.id, s)
        if p.speedup and p.spec_tok_s and p.baseline_tok_s:
            assert p.speedup == pytest.approx(p.spec_tok_s / p.baseline_tok_s, rel=0.02), p.id


def test_every_stored_acceptance_converts_by_code(pairs):
    converted = [(p, entry_acceptance(p)) for p in pairs]
    with_acc = [(p, a) for p, a in converted if a is not None]
    assert len(with_acc) >= 5
    for p, a in with_acc:
        assert 0.0 <= a.alpha <= 1.0
        assert p.acceptance_convention in a.given and a.source == p.source


def test_llamacpp_5877_conversion_matches_its_raw_counts(pairs):
    # n_drafted 730, n_accept 526, n_predict 673 at K=5: 147 rounds, (526 + 147) / 147 tokens per round.
    # The accepted/drafted conversion and the tau read from the same counts must agree; 730 / 147 = 4.97
    # drafts per round (not exactly 5), which accounts for the 0.5% gap.
    p = next(p for p in pairs if p.id.startswith("llamacpp-5877"))
    a = entry_acceptance(p).alpha
    rounds = 673 - 526
    assert p.acceptance_value == pytest.approx(526 / 730, abs=1e-5)
    assert expected_accepted(a, 5) == pytest.approx((526 + rounds) / rounds, rel=0.01)


def test_prior_for_exact_pair_comes_from_catalog(pairs):
    acc = prior_for("llama3", "llama3", pairs=pairs)
    assert acc.source.startswith("catalog: 1 published llama3 + llama3")
    assert "llama.cpp/issues/5877" in acc.source
    # one measurement: three times the minimum half-width on each side (capped at 1.0)
    assert acc.low == pytest.approx(acc.alpha - 3 * PRIOR_MIN_HALF_WIDTH)
    assert acc.high == pytest.approx(min(1.0, acc.alpha + 3 * PRIOR_MIN_HALF_WIDTH))
    qwen = prior_for("qwen2.5", "qwen2.5", pairs=pairs)
    alphas = sorted(entry_acceptance(p).alpha for p in pairs if p.target_family == "qwen2.5"
                    and p.acceptance_value is not None)
    assert len(alphas) >= 3 and qwen.alpha == pytest.approx(statistics.median(alphas))
    assert qwen.low <= alphas[0] and qwen.high >= alphas[-1]


def test_prior_for_same_family_without_entries_is_a_labelled_family_default(pairs):
    acc = prior_for("olmo2", "olmo2", pairs=pairs)
    assert acc.source.startswith("family default: no olmo2 pair in the catalog")
    same = [entry_acceptance(p).alpha for p in pairs
            if p.target_family == p.draft_family and p.acceptance_value is not None]
    assert min(same) <= acc.alpha <= max(same)


def test_prior_for_cross_family_or_unknown_is_assumed_and_wide(pairs):
    for tf, df in (("qwen3", "llama3"), (None, "llama3"), (None, None)):
        acc = prior_for(tf, df, pairs=pairs)
        assert (acc.alpha, acc.low, acc.high) == PRIOR_CROSS_FAMILY
        assert acc.source.startswith("assumed") and acc.high - acc.low >= 0.5
    empty = prior_for("olmo2", "olmo2", pairs=[])
    assert (empty.alpha, empty.low, empty.high) == PRIOR_SAME_FAMILY and empty.source.startswith("assumed")


def test_same_family_constant_covers_the_bundled_measurements(pairs):
    # keeps PRIOR_SAME_FAMILY_SOURCE's claim about the bundled catalog true
    same = [entry_acceptance(p).alpha for p in pairs
            if p.target_family == p.draft_family and p.acceptance_value is not None]
    _, low, high = PRIOR_SAME_FAMILY
    assert low <= min(same) and max(same) <= high


# --- loader errors --------------------------------------------------------------------------------

def _entry(**over):
    base = {"id": "x", "target": "T", "draft": "D", "target_family": "fam", "draft_family": "fam",
            "engine": "vllm", "hardware": "h", "k": 4, "temperature": 0.0,
            "acceptance": {"value": 0.5, "convention": "accepted_per_drafted"},
            "result": {"baseline_tok_s": 10.0, "spec_tok_s": 15.0, "speedup": None},
            "outcome": "faster", "source": "https://example.org/x"}
    base.update(over)
    return base


def test_loader_reads_a_private_catalog(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"pairs": [_entry(id="a1"), _entry(id="a2", k=2)]}))
    got = load_pairs(tmp_path)
    assert [p.id for p in got] == ["a1", "a2"]
    acc = prior_for("fam", "fam", pairs=got)
    assert acc.source.startswith("catalog: 2 published fam + fam")


@pytest.mark.parametrize("bad", [
    {"pairs": "not a list"},
    [_entry(acceptance={"value": 0.5, "convention": "percent"})],
    [_entry(k=None)],                                  # accepted_per_drafted needs K
    [_entry(outcome="great")],
    [_entry(source="")],
    [_entry(result={"baseline_tok_s": -1, "spec_tok_s": None, "speedup": None})],
    [_entry(id="dup"), _entry(id="dup")],
    [_entry(temperature="hot")],
])
def test_loader_rejects_bad_entries(tmp_path, bad):
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ConfigError, match="Cannot read"):
        load_pairs(tmp_path)


def test_unconvertible_value_names_the_entry(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps([_entry(id="too-big", acceptance={"value": 1.7,
                                                                               "convention": "alpha"})]))
    (entry,) = load_pairs(tmp_path)
    with pytest.raises(ConfigError, match="too-big"):
        entry_acceptance(entry)


def test_fine_tunes_share_their_base_lineage(pairs):
    """Qwen2.5-Coder keeps the Qwen2.5 tokenizer: a Qwen2.5 draft gets the same-family prior, not cross-family."""
    coder = prior_for("qwen2.5-coder", "qwen2.5", pairs=pairs)
    base = prior_for("qwen2.5", "qwen2.5", pairs=pairs)
    assert (coder.alpha, coder.low, coder.high) == (base.alpha, base.low, base.high)
    assert not coder.given.startswith("assumed default (cross-family")
