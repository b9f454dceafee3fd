"""Run every command of tests/golden/commands.json and write what it printed (the golden files).

Why: the restructuring of planner/ must not change a single byte of any command's answer; the
golden files are that answer, recorded before anything moved. Re-record only on a deliberate change
of output, and say which fields changed in the commit message.

    python tests/golden/record.py            # rewrite every golden file
    python tests/golden/record.py NAME ...   # only these
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
COMMANDS = GOLDEN / "commands.json"
GOLDEN_COLUMNS = "80"  # the narrowest terminal text output is laid out for (render/width.py)


def commands() -> dict[str, list[str]]:
    """Name -> argv, without the documentation key."""
    data = json.loads(COMMANDS.read_text())
    return {k: v for k, v in data.items() if not k.startswith("_")}


def gguf_dir() -> Path:
    """The real GGUF files' folder: the tests' own rule (tests/gguf_dir.py)."""
    from tests.gguf_dir import gguf_test_dir  # imported late: run as a script, main() puts ROOT on sys.path

    return gguf_test_dir()


def needs_gguf(argv: list[str]) -> bool:
    return any("{gguf}" in a for a in argv)


def run(argv: list[str]) -> str:
    """Run one command in-process from the repository root; return exit code, stdout, stderr and files."""
    from planner.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        args = [a.replace("{gguf}", str(gguf_dir())).replace("{tmp}", tmp) for a in argv]
        out, err = io.StringIO(), io.StringIO()
        cwd, columns = os.getcwd(), os.environ.get("COLUMNS")
        os.chdir(ROOT)
        os.environ["COLUMNS"] = GOLDEN_COLUMNS  # text output fills the terminal: record at a fixed width
        host = os.environ.get("SPEC_PLANNER_HOST_KIND")
        os.environ["SPEC_PLANNER_HOST_KIND"] = "none"  # `planner memory` glances at the host: not here
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    main(args)
                    rc = 0
                except SystemExit as e:
                    rc = e.code if isinstance(e.code, int) else 1
        finally:
            os.chdir(cwd)
            for key, old in (("COLUMNS", columns), ("SPEC_PLANNER_HOST_KIND", host)):
                if old is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = old
        # Plots (SVG) carry matplotlib's own ids and dates: the text beside them is what is compared.
        files = {p.name: p.read_text() for p in sorted(Path(tmp).iterdir()) if p.suffix != ".svg"}
        text = normalise(f"exit: {rc}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}", tmp)
    for name, body in files.items():
        text += f"--- file {name}\n{normalise(body, tmp)}"
    return text


def normalise(text: str, tmp: str) -> str:
    """Paths and clock readings become placeholders so the golden files hold on any checkout, any day."""
    text = text.replace(tmp, "{tmp}").replace(str(gguf_dir()), "{gguf}").replace(str(ROOT), "{root}")
    return re.sub(r'"timestamp": "[^"]*"', '"timestamp": "{now}"', text)


def golden_path(name: str) -> Path:
    return GOLDEN / f"{name}.txt"


def main(names: list[str]) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_CACHE", tempfile.mkdtemp(prefix="golden-hf-"))
    for name, argv in commands().items():
        if names and name not in names:
            continue
        if needs_gguf(argv) and not gguf_dir().is_dir():
            print(f"skip {name}: real GGUF files absent (python scripts/fetch_ggufs.py)")
            continue
        golden_path(name).write_text(run(argv))
        print(f"wrote {golden_path(name).relative_to(ROOT)}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main(sys.argv[1:])
