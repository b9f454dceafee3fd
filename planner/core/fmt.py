"""Numbers for people: bytes in binary units, counts with K/M/B/T. The only unit formatting there is.
Also the text-table helper every face draws with (`tabulate`, loading the library on first use).

Why in core: renderers (render/), the policy judge (plan/check.py) and the command faces (commands/)
all print sizes; each imports these from below instead of from one another. Computation never
formats: it keeps integers of bytes and counts.
"""

from __future__ import annotations

from typing import Any

from .errors import one_line


def fmt_bytes(n: int | float | None) -> str:
    """Bytes for people: binary units, 2 decimals (GiB), or '-'.

    Example:
        >>> fmt_bytes(16060522496), fmt_bytes(512), fmt_bytes(None)
        ('14.96 GiB', '512 B', '-')
    """
    if n is None:
        return "-"
    n = float(n)
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"


def fmt_count(n: int | None) -> str:
    """A count for people with a decimal suffix (parameters: 8.03B), or '-'.

    Example:
        >>> fmt_count(8030261248), fmt_count(999)
        ('8.03B', '999')
    """
    if n is None:
        return "-"
    for unit, size in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return str(n)


def tabulate(rows: Any, headers: Any = (), **kwargs: Any) -> str:
    """A text table: `tabulate.tabulate`, imported on the first table drawn.

    Why lazy: importing tabulate costs ~10 ms (it loads importlib.metadata, email, html), and
    `--json` runs and most command paths never draw a table.

    Example:
        >>> print(tabulate([["a", 1]], headers=["k", "v"], tablefmt="plain"))
        k      v
        a      1
    """
    import tabulate as _module
    from tabulate import tabulate as _tabulate

    # Cells quote model names and file paths: a newline or escape in one must not forge a line of output.
    # (render/width.table escapes each cell itself first, then wraps it into lines: escaped=True.)
    if not kwargs.pop("escaped", False):
        rows = [[one_line(c) if isinstance(c, str) else c for c in row] for row in rows]
    headers = [one_line(h) if isinstance(h, str) else h for h in headers] if isinstance(headers, (list, tuple)) \
        else headers
    padding = kwargs.pop("min_padding", None)  # the header padding tabulate adds (its MIN_PADDING, 2); 0: none
    if padding is None:
        return _tabulate(rows, headers=headers, **kwargs)
    saved, _module.MIN_PADDING = _module.MIN_PADDING, padding  # tabulate reads the module global per call
    try:
        return _tabulate(rows, headers=headers, **kwargs)
    finally:
        _module.MIN_PADDING = saved
