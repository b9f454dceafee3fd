"""Parsing of human quantities at the edges (`24GiB`, `80GB`, `8k`): the only unit parsing there is.

Why: inside, every number is an integer of bytes or tokens; users type units.
Decimal units are decimal (GB = 10^9), binary are binary (GiB = 2^30).
"""

from __future__ import annotations

import math
import re

from .errors import UsageError

_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgtp]?i?b?)\s*$", re.I)
_MULT = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
         "t": 10**12, "tb": 10**12, "p": 10**15, "pb": 10**15, "ki": 2**10, "kib": 2**10, "mi": 2**20,
         "mib": 2**20, "gi": 2**30, "gib": 2**30, "ti": 2**40, "tib": 2**40, "pi": 2**50, "pib": 2**50}


# Sizes beyond an exabyte are no machine's memory: refuse them before float() turns them into inf.
MAX_BYTES = 2**60


def parse_bytes(text: str | int, *, what: str = "size") -> int:
    """'24GiB' -> 25769803776, '80GB' -> 80000000000, '512MiB', or a plain integer of bytes.

    Raises:
        UsageError: not a size.
    """
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise UsageError(f"Cannot use {what} {text}: it must not be negative.")
        return text
    m = _SIZE.match(str(text))
    if not m or m.group(2).lower() not in _MULT:
        raise UsageError(f"Cannot use {what} '{str(text)[:40]}': expected a size such as 24GiB, 80GB or 512MiB.")
    value = float(m.group(1)) * _MULT[m.group(2).lower()]
    if not math.isfinite(value) or value > MAX_BYTES:  # '1e400GB', hundreds of digits: no machine holds it
        raise UsageError(f"Cannot use {what} '{str(text)[:40]}': it is larger than any memory ({MAX_BYTES} B).")
    return round(value)


def parse_tokens(text: str | int, *, what: str = "context") -> int:
    """'8192', '8k' (8192), '128K' (131072), '1M' (1048576): token counts use binary k."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        m = re.match(r"^\s*([0-9]{1,18})\s*([kKmM]?)\s*$", str(text))  # ASCII digits, at most 18
        if not m:
            raise UsageError(f"Cannot use {what} '{str(text)[:40]}': expected a token count such as 8192 or 8k.")
        value = int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]
    if value < 1:
        raise UsageError(f"Cannot use {what} {value}: it must be at least 1.")
    return value


def parse_batches(text: str) -> tuple[int, ...]:
    """--batch: '1,8,32,128' -> (1, 8, 32, 128); a single '32' -> (32,).

    Raises:
        UsageError: anything but positive integers of at most 7 digits.
    """
    values = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part.isascii() or not part.isdigit() or len(part) > 7 or int(part) < 1:
            raise UsageError(f"Cannot use --batch '{str(text)[:40]}': expected positive integers such as 32 or "
                             f"1,8,32,128.")
        values.append(int(part))
    return tuple(values)


def parse_params(text: str, *, what: str = "--max-params") -> int:
    """'8B' -> 8000000000, '1.5B', '500M', '70b', or a plain integer: parameter counts use decimal
    suffixes (K, M, B, T), as model names do.

    Raises:
        UsageError: anything else.
    """
    m = re.match(r"^\s*([0-9]{1,15}(?:\.[0-9]{1,6})?)\s*([kKmMbBtT]?)\s*$", str(text))
    if not m:
        raise UsageError(f"Cannot use {what} '{str(text)[:40]}': expected a parameter count such as 8B, 1.5B or "
                         f"500M.")
    scale = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}[m.group(2).lower()]
    return round(float(m.group(1)) * scale)
