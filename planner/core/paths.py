"""User-given paths that never raise: `~nosuchuser/x` stays literal, a 300-byte component is "not there".

Why: `Path.expanduser()` raises RuntimeError for an unknown user and `Path.is_dir()` raises OSError
(ENAMETOOLONG, EACCES) instead of answering False; a model argument, a policy's `profile` or a
machine file may be any string, and each of those must end in one planner error line, not a traceback.
Shells leave `~nosuchuser` unexpanded too.
"""

from __future__ import annotations

from pathlib import Path


def expand(ref: str | Path) -> Path:
    """`ref` with a leading `~` or `~user` expanded when that user exists, else as it was written."""
    p = Path(ref)
    try:
        return p.expanduser()
    except (RuntimeError, KeyError, OSError):  # no home directory, no such user
        return p


def exists(p: str | Path) -> bool:
    try:
        return expand(p).exists()
    except (OSError, ValueError):  # a component over 255 bytes, a NUL byte, no permission
        return False


def is_dir(p: str | Path) -> bool:
    try:
        return expand(p).is_dir()
    except (OSError, ValueError):
        return False


def is_file(p: str | Path) -> bool:
    try:
        return expand(p).is_file()
    except (OSError, ValueError):
        return False
