"""Write output files atomically and never over an input.

Why: reports, profiles and JUnit files are written by CI jobs that may be killed;
a half-written file must never replace a good one (temp file in the same
directory + os.replace), and `--out` must not clobber a model or policy file the
same command reads.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .errors import UsageError


def atomic_write(path: str | Path, data: str | bytes, *, inputs: Iterable[str | Path] = ()) -> Path:
    """Write `data` to `path` via a temp file + rename.

    An input may be a directory (a model folder): then no file already inside it is overwritten.

    Raises:
        UsageError: `path` is one of `inputs` or an existing file inside an input directory, is a
            directory, or cannot be written.
    """
    p = Path(path)
    target = p.resolve()
    for i in inputs:
        try:
            src = Path(i).resolve()
            inside = src.is_dir() and target.exists() and target.is_relative_to(src)
        except (OSError, ValueError):
            continue
        if src == target or inside:
            where = "also an input" if src == target else f"a file of the input directory '{i}'"
            raise UsageError(f"Cannot write '{p}': it is {where} of this command. Choose another --out.")
    if p.is_dir():
        raise UsageError(f"Cannot write '{p}': it is a directory (expected a file path).")
    raw = data.encode() if isinstance(data, str) else data
    parent = p.parent if str(p.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=parent)
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; outputs get the usual permissions
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        raise UsageError(f"Cannot write '{p}': {e.strerror or e}.") from e
    return p
