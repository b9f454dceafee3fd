"""benchmarks/sample_split.py: a published row is in-sample when a constant on its path cites its source.

Why: the benchmark's headline must keep rows the model was fitted on apart from rows it has never seen.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
_spec = importlib.util.spec_from_file_location("sample_split", REPO / "benchmarks" / "sample_split.py")
split = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(split)


def test_normalise_keeps_the_page():
    assert split.normalise("see https://www.github.com/ggml-org/llama.cpp/pull/10455/files?x=1 (Q4)") == \
        "github.com/ggml-org/llama.cpp/pull/10455"
    assert split.normalise("arXiv 2503.01840") == ""


def test_a_cited_source_is_in_sample_and_an_uncited_one_is_not():
    # catalogs/pairs rows feed the acceptance priors; PR #10455 is a calibration baseline's source
    assert split.in_sample("anything", "catalogs/pairs/mlx.json")
    assert split.in_sample("https://github.com/ggml-org/llama.cpp/pull/10455", "research draft")
    assert "github.com/ggml-org/llama.cpp/pull/10455" in split.cited_urls()
    assert not split.in_sample("https://example.org/never-cited-anywhere", "research draft")
