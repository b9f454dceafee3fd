"""Every golden command still prints exactly what it printed when its golden file was recorded.

The golden files (tests/golden/*.txt) were recorded before planner/ was restructured; a refactor
that changes any byte of an answer fails here. A deliberate output change re-records the file
(python tests/golden/record.py NAME) and says so in its commit.
"""

from __future__ import annotations

import pytest

from tests.golden.record import commands, gguf_dir, golden_path, needs_gguf, run

CASES = commands()


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_output_unchanged(name):
    argv = CASES[name]
    if needs_gguf(argv) and not gguf_dir().is_dir():
        pytest.skip("real GGUF files absent: python scripts/fetch_ggufs.py")
    expected = golden_path(name).read_text()
    assert run(argv) == expected


def test_every_golden_command_has_its_file():
    missing = [n for n in CASES if not golden_path(n).is_file()]
    assert missing == []
