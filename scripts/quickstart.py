"""Print the README's Quick start command lines, exactly as written, one a line.

Why: CI (`.ci/run`) runs these lines, read from the README here, in a fresh clone and a fresh venv
before anything else, so the README's commands and what CI runs cannot drift apart (issue #31: the
README said `pip install -e '.[test]'` while CI installed more, and a fresh clone failed a test).

Run: python scripts/quickstart.py [README.md]
Exit 2 with one line on stderr when the README has no `## Quick start` section with one ```bash block.
"""

from __future__ import annotations

import sys
from pathlib import Path

HEADING = "## Quick start"
MAX_README_BYTES = 1 << 20


def quickstart_lines(readme: str) -> list[str]:
    """The non-blank lines of the first ```bash block under the Quick start heading.

    Raises:
        ValueError: no such heading, or no closed ```bash block before the next heading.
    """
    lines = readme.splitlines()
    try:
        start = lines.index(HEADING)
    except ValueError:
        raise ValueError(f"no '{HEADING}' heading") from None
    body: list[str] | None = None
    for line in lines[start + 1:]:
        if body is None:
            if line.startswith("## "):
                break
            if line.strip() == "```bash":
                body = []
        elif line.strip() == "```":
            return [ln for ln in body if ln.strip()]
        else:
            body.append(line)
    raise ValueError(f"no closed ```bash block under '{HEADING}'")


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else Path(__file__).resolve().parent.parent / "README.md")
    try:
        with path.open("rb") as f:
            text = f.read(MAX_README_BYTES).decode("utf-8")
        print("\n".join(quickstart_lines(text)))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        print(f"error: cannot read the Quick start from {path}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
