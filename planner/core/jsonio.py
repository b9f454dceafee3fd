"""Bounded, error-mapped reads of the small JSON files that describe a model.

Why: config.json, generation_config.json, index and tokenizer files come from
strangers. Each read is capped in size, and every failure becomes a `ConfigError`
that names the file and what was wrong, never a traceback.
"""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path
from typing import Any, TypeGuard

from .atomic import note_input
from .constants import JSON_MAX_BYTES
from .errors import ConfigError


def _reject_constant(token: str) -> float:
    # json accepts NaN/Infinity by default; no size or id in a model file may be one.
    raise ValueError(f"non-finite number {token}")


# No count, size or id in a model file has more digits than this; Python's own limit (4300 digits,
# 3.11+) would reject longer ones anyway, with a message that differs between versions.
MAX_INT_DIGITS = 64


def _bounded_int(token: str) -> int:
    if len(token.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer with {len(token.lstrip('-'))} digits (more than {MAX_INT_DIGITS})")
    return int(token)


def loads(text: str, *, allow_nonfinite: bool = False) -> Any:
    """json.loads without absurd integers (same messages on every Python) and, unless allowed, without
    NaN/Infinity (readers that validate every field themselves allow them, to name the field).

    Raises:
        ValueError / RecursionError: invalid JSON, non-finite constant, or an integer over MAX_INT_DIGITS.
    """
    if allow_nonfinite:
        return json.loads(text, parse_int=_bounded_int)
    return json.loads(text, parse_constant=_reject_constant, parse_int=_bounded_int)


def parse_json(data: bytes | str, origin: str, *, allow_nonfinite: bool = False) -> Any:
    """Parse JSON text from `origin`, rejecting invalid UTF-8 and, unless allowed, NaN/Infinity.

    Raises:
        ConfigError: if the text is not valid JSON.
    """
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return loads(text, allow_nonfinite=allow_nonfinite)
    except UnicodeDecodeError as e:
        raise ConfigError(f"Cannot read '{origin}': not UTF-8 text ({e.reason} at byte {e.start}).",
                          origin) from e
    except (ValueError, RecursionError) as e:
        raise ConfigError(f"Cannot parse '{origin}': invalid JSON ({e}).", origin) from e


def read_json(path: str | Path, *, max_bytes: int = JSON_MAX_BYTES, what: str = "JSON file",
              allow_nonfinite: bool = False) -> Any:
    """Read and parse a JSON file no larger than `max_bytes` (`allow_nonfinite`: see `loads`).

    Raises:
        ConfigError: missing, unreadable, too large or invalid.
    """
    p = Path(path)
    try:
        st = p.stat()
        size = st.st_size
        if stat.S_ISDIR(st.st_mode):
            raise ConfigError(f"Cannot read {what} '{p}': it is a directory.", p)
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block the open; a device has no size
            raise ConfigError(f"Cannot read {what} '{p}': it is not a regular file.", p)
        if size > max_bytes:
            raise ConfigError(f"Cannot read {what} '{p}': {size} bytes is larger than the {max_bytes}-byte "
                              f"limit for this kind of file.", p)
        note_input(p)  # no output of this run may replace it (core/atomic.py)
        with p.open("rb") as fh:
            data = fh.read(size + 1)  # read(n) allocates n bytes up front: never ask for the cap itself
        if len(data) > size:
            raise ConfigError(f"Cannot read {what} '{p}': it grew while being read (expected {size} bytes).", p)
    except FileNotFoundError as e:
        raise ConfigError(f"Cannot read {what} '{p}': file not found.", p) from e
    except IsADirectoryError as e:
        raise ConfigError(f"Cannot read {what} '{p}': it is a directory.", p) from e
    except OSError as e:
        raise ConfigError(f"Cannot read {what} '{p}': {e.strerror or e}.", p) from e
    return parse_json(data, str(p), allow_nonfinite=allow_nonfinite)


def read_json_object(path: str | Path, *, max_bytes: int = JSON_MAX_BYTES, what: str = "JSON file",
                     allow_nonfinite: bool = False) -> dict:
    """`read_json` that also requires a top-level object."""
    obj = read_json(path, max_bytes=max_bytes, what=what, allow_nonfinite=allow_nonfinite)
    if not isinstance(obj, dict):
        raise ConfigError(f"Cannot use {what} '{path}': expected a JSON object at top level, got "
                          f"{type(obj).__name__}.", path)
    return obj


def is_finite_number(x: Any) -> TypeGuard[int | float]:
    """True for an int or a finite float read from JSON or TOML (bools, NaN and +-inf are not numbers here).

    Example:
        >>> is_finite_number(2), is_finite_number(True), is_finite_number(float("nan"))
        (True, False, False)
    """
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
