"""Every design page a planner/ docstring or comment cites is a page of the repository (issue #27).

Why: the code once cited DESIGN.md, ENGINES.md and STYLE.md, design files that live outside the
repository, so a reader of the code could not follow the reference. A cited page must exist (under
docs/ or at the path given), and a cited section ('docs/speed.md "The model"') must be one of its headings.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# a design page: docs/<page>.md or a bare capitalised name (DESIGN.md, README.md); an upstream file cited with
# its commit ('docs/speculative.md @ a71f4a0', llama.cpp's own docs) and example output names (report.md) are not
PAGE = re.compile(r"(?<![\w/.-])(docs/[\w.-]+\.md|[A-Z][A-Z_]*\.md)\b(?! @)")
SECTION = re.compile(r"(?<![\w/.-])(docs/[\w.-]+\.md|[A-Z][A-Z_]*\.md) [\"']([^\"'\n]+)[\"']")


# names that look like a page and are not a citation of one, each with why
NOT_CITATIONS = {"FILE.md": "a CLI metavar (report --out FILE.md)",
                 "docs/speculative.md": "llama.cpp's own docs, cited with their commit in engines/llamacpp.py"}


def _page(name: str) -> Path | None:
    for p in (REPO / name, REPO / "docs" / name):
        if p.is_file():
            return p
    return None


def cited(text: str) -> tuple[set[str], set[tuple[str, str]]]:
    return set(PAGE.findall(text)), set(SECTION.findall(text))


def test_every_cited_page_and_section_exists():
    missing = []
    for path in sorted((REPO / "planner").rglob("*.py")):
        pages, sections = cited(path.read_text())
        rel = path.relative_to(REPO).as_posix()
        missing += [f"{rel}: {p}" for p in sorted(pages) if _page(p) is None and p not in NOT_CITATIONS]
        for page, title in sorted(sections):
            found = _page(page)
            headings = [h for h in found.read_text().splitlines() if h.startswith("#")] if found else []
            if found and not any(title in h for h in headings):
                missing.append(f"{rel}: {page} section '{title}'")
    assert missing == [], "cited pages or sections that are not in the repository: " + "; ".join(missing)


def test_the_scan_reads_pages_and_sections():
    pages, sections = cited('Order (DESIGN.md "Probe"); see docs/speed.md "The model" and ENGINES.md; '
                            "upstream docs/speculative.md @ a71f4a0; write --html mine.md")
    assert pages == {"DESIGN.md", "docs/speed.md", "ENGINES.md"}
    assert ("docs/speed.md", "The model") in sections and _page("DESIGN.md") is None
