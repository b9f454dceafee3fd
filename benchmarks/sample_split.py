"""Which published measurements are in-sample: a row is in-sample when a constant on its path cites its source.

Why: the speed model's shares, per-step costs, kernel curves and acceptance priors were each set from
published rows; a measurement from a source any of them cites cannot test the model honestly. Rather than
keep a hand list, the references are read from where the constants live:

  - every URL in planner/catalogs/**/*.json (acceptance priors, pairs, methods, kernel curves, calibration)
  - the sources of `calibration` rows in benchmarks/data/published_baselines.json
  - every URL, and every GitHub `#N` / `PR #N` next to the engine's repository name, in planner/engines/*.py
    and planner/speed/*.py (the fitted constants cite their rows there)

A measurement whose source normalises (host + path, no scheme or query) to one of those URLs, or whose
GitHub issue/PR number is cited in the engine files, is in-sample; the rest are out-of-sample.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
URL = re.compile(r"https?://(?:www\.)?([^\s\"')\]>,;]+)")
NUMBER = re.compile(r"(?:PR|issue|pull|issues|discussion)?\s*#(\d{3,6})\b")


def normalise(url: str) -> str:
    """'https://www.github.com/a/b/pull/1/files?x' -> 'github.com/a/b/pull/1' (the page, not its anchors)."""
    m = URL.search(url)
    if not m:
        return ""
    path = m[1].split("?")[0].split("#")[0].rstrip("/.")
    parts = path.split("/")
    if parts[0] == "github.com" and len(parts) >= 5 and parts[3] in ("issues", "pull", "discussions"):
        parts = parts[:5]
    return "/".join(parts).lower()


@cache
def cited_urls() -> frozenset[str]:
    """Every normalised URL the catalogs and the calibration baselines cite."""
    out: set[str] = set()
    for p in sorted((REPO / "catalogs").rglob("*.json")):
        out |= {normalise(m[0]) for m in URL.finditer(p.read_text())}
    rows = json.loads((REPO / "benchmarks" / "data" / "published_baselines.json").read_text())["baselines"]
    out |= {normalise(r.get("source", "")) for r in rows if isinstance(r, dict) and r.get("role") == "calibration"}
    for folder in ("engines", "speed"):
        for p in sorted((REPO / "planner" / folder).glob("*.py")):
            out |= {normalise(m[0]) for m in URL.finditer(p.read_text())}
    return frozenset(u for u in out if u)


@cache
def cited_numbers() -> frozenset[str]:
    """GitHub issue/PR numbers the engine and speed modules cite (their fits name rows as 'PR #6766')."""
    out: set[str] = set()
    for folder in ("engines", "speed"):
        for p in sorted((REPO / "planner" / folder).glob("*.py")):
            out |= set(NUMBER.findall(p.read_text()))
    return frozenset(out)


def in_sample(source: str, origin: str) -> bool:
    """Whether a measurement from `source` (its `origin` in the data file) is in-sample."""
    if origin.startswith("catalogs/pairs") or "in-sample" in origin:
        return True
    url = normalise(source)
    if url and url in cited_urls():
        return True
    m = re.match(r"github\.com/[^/]+/[^/]+/(?:issues|pull|discussions)/(\d+)$", url)
    return bool(m and m[1] in cited_numbers())
