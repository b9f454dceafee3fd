"""The README's Quick start is what CI runs first (issue #31): read from the README, in order, verbatim."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from quickstart import quickstart_lines  # noqa: E402

README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_quick_start_is_two_commands_with_the_plain_test_extra():
    lines = quickstart_lines(README)
    assert len(lines) == 2
    # the block as it sits in the README, between its fences
    block = README[README.index("## Quick start"):].split("```bash\n", 1)[1].split("```", 1)[0]
    assert lines == [ln for ln in block.splitlines() if ln.strip()]
    assert "pip install -e '.[test]'" in lines[0] and lines[1].startswith("python -m pytest")


def test_ci_runs_the_quick_start_read_from_the_readme_before_anything_else():
    steps = [ln.strip() for ln in CI.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    reads = next(i for i, ln in enumerate(steps) if "scripts/quickstart.py" in ln)
    runs = next(i for i, ln in enumerate(steps) if 'bash -o pipefail -c "$line"' in ln)
    installs = [i for i, ln in enumerate(steps) if re.search(r"\bpip install\b", ln)]
    assert installs and reads < runs < min(installs)  # no install, lint or test comes before it
    assert not any("pytest" in ln or "ruff" in ln for ln in steps[:runs])
    assert "git clone" in "\n".join(steps[reads:runs]) and "venv" in "\n".join(steps[reads:runs])


def test_script_prints_the_lines_and_refuses_a_readme_without_them(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "quickstart.py")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.splitlines() == quickstart_lines(README)
    bad = tmp_path / "README.md"
    bad.write_text("# x\n\n## Quick start\n\nno block\n\n## Next\n```bash\nrm -rf /\n```\n")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "quickstart.py"), str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1
    with pytest.raises(ValueError, match="closed"):
        quickstart_lines("## Quick start\n```bash\npip install x\n")
