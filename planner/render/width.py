"""Width: text that fits the terminal (80 columns and up) without breaking what is pasted.

Why its own module: tables, notes and launch commands all have to fit an 80-column terminal,
and the three need different treatment: prose wraps at word boundaries, a launch command breaks
between shell words with a trailing backslash (so it still pastes as one command), and a table
trims its source column (render/text.py). `--wide` turns all of it off.
"""

from __future__ import annotations

import re
import shlex
import shutil
import textwrap
from typing import Any

from ..core.fmt import one_line, tabulate

MIN_WIDTH = 80  # narrower terminals get 80-column text (and scroll)
MAX_WORD = 24  # a table cell's word longer than this may be broken (a long id or JSON)
_wide = False


def set_wide(on: bool) -> None:
    """--wide: print every line whole (no wrapping, no trimmed columns)."""
    global _wide
    _wide = on


def is_wide() -> bool:
    return _wide


def width() -> int:
    """Columns to fill: the terminal's ($COLUMNS first, shutil), at least MIN_WIDTH; unbounded with --wide."""
    if _wide:
        return 1 << 30
    return max(MIN_WIDTH, shutil.get_terminal_size((100, 24)).columns)


def fits(text: str) -> bool:
    """Every line of `text` within width()."""
    return all(len(line) <= width() for line in text.splitlines())


def wrap(text: str, *, indent: str = "", cont: str = "    ") -> list[str]:
    """Prose wrapped to width() at word boundaries, continuation lines indented further."""
    if _wide:
        return [indent + text]
    return textwrap.wrap(text, width=width(), initial_indent=indent, subsequent_indent=indent + cont,
                         break_long_words=False, break_on_hyphens=False) or [indent]


def command_lines(command: str, *, indent: str = "", head: str = "") -> list[str]:
    """A shell command broken between words with ' \\' continuations; pasting the lines runs the
    same argv. An option and its value stay on one line."""
    first = indent + head
    if _wide or len(first) + len(command) <= width():
        return [first + command]
    try:
        words = shlex.split(command)
    except ValueError:  # not shell syntax (a Python snippet): leave it whole
        return [first + command]
    if len(words) == 3 and words[:2] == ["python", "-c"] and "'" not in words[2]:
        return _program_lines(words[2], first, indent)
    groups: list[str] = []
    for w in words:
        q = shlex.quote(w)
        if groups and not w.startswith("-") and groups[-1].startswith("-") and " " not in groups[-1]:
            groups[-1] += " " + q  # the option's value
        else:
            groups.append(q)
    lines, cur, pad = [], first, indent + "    "
    for g in groups:
        if cur.strip() and len(cur) + 1 + len(g) + 2 > width():
            lines.append(cur + " \\")
            cur = pad + g
        else:
            cur = cur + ("" if not cur.strip() or cur.endswith(" ") else " ") + g
        if len(cur) > width() and "'{" in cur:
            *done, cur = _json_lines(cur, pad)
            lines += done
    lines.append(cur)
    return lines


def _json_lines(line: str, pad: str) -> list[str]:
    """A line ending in a single-quoted JSON word, broken after its ', ' separators: the newlines land
    inside the quotes, where JSON reads them as whitespace (the engine's json.loads sees the same object)."""
    out, start, last = [], 0, 0
    for i in range(line.index("'{"), len(line)):
        if line[i] == "," and line[i + 1:i + 2] == " ":
            if len(pad) + i + 1 - start > width() and last > start:
                out.append(line[start:last])
                start = last + 1
            last = i + 1
    if (len(pad) if start else 0) + len(line) - start > width() and last > start:  # the tail, under its pad
        out.append(line[start:last])
        start = last + 1
    out.append(line[start:])
    return [out[0], *(pad + x for x in out[1:])]


def _program_lines(program: str, first: str, indent: str) -> list[str]:
    """`python -c '...'` with its program one statement a line (a newline where it had '; ') and each
    statement broken inside its parentheses: both newlines land inside the single quotes, where Python
    reads them as a statement end and as nothing, so pasting the lines runs the same program."""
    statements, start, quote, escaped = [], 0, "", False
    for i, ch in enumerate(program):
        if quote:
            escaped, quote = (not escaped and ch == "\\"), ("" if ch == quote and not escaped else quote)
        elif ch == '"':
            quote = ch
        elif program.startswith("; ", i):
            statements.append(program[start:i + 1])
            start = i + 2
    statements.append(program[start:])
    lines = [line for st in statements for line in python_lines(st)]
    return [first + "python -c '" + lines[0], *lines[1:-1], lines[-1] + "'"] if len(lines) > 1 else \
        [first + "python -c '" + lines[0] + "'"]


def python_lines(line: str, *, indent: str = "") -> list[str]:
    """A Python line broken after ', ' inside parentheses (outside string literals), continuation
    lines indented 4 more; a line with no such break point stays whole."""
    first = indent + line
    if _wide or len(first) <= width():
        return [first]
    breaks, depth, quote = [], 0, ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth > 0 and line[i + 1:i + 2] == " ":
            breaks.append(i + 1)
    out, start, cur_indent = [], 0, indent
    last = 0
    for b in [*breaks, len(line)]:
        if len(cur_indent) + b - start > width() and last > start:
            out.append(cur_indent + line[start:last].rstrip())
            start, cur_indent = last + 1, indent + "    "
        last = b
    out.append(cur_indent + line[start:].lstrip())
    return out


def table(rows: list[list[Any]], headers: list[str], *, shrink: tuple[int, ...] = (), floor: int = 12,
          drop: tuple[int, ...] = (), max_word: int = MAX_WORD, hyphens: bool = False, **kwargs: Any) -> str:
    """A tabulate table that fits width(): when wider, the `drop` columns (figures the others imply,
    kept by --wide) go first, then the `shrink` columns (in that order) wrap their cells and headers,
    each down to `floor` characters (or its longest word, up to `max_word`), until the table fits;
    what cannot shrink further stays wider. `hyphens`: a cell may also break after a word's hyphen
    (display names; never for a name the user types back, such as an alias)."""
    kwargs.setdefault("tablefmt", "simple")
    kwargs.setdefault("disable_numparse", True)
    text = tabulate(rows, headers=headers, **kwargs)
    over = max((len(line) for line in text.splitlines()), default=0) - width()
    if _wide or over <= 0:
        return text
    # First drop the 2 columns tabulate pads every header with (tabulate.MIN_PADDING): the 2-space column
    # separator stays, so a table of 9 columns gains 18 without wrapping a cell (issue #31: COLUMNS=80)
    kwargs["min_padding"] = 0
    text = tabulate(rows, headers=headers, **kwargs)
    over = max((len(line) for line in text.splitlines()), default=0) - width()
    if over > 0 and drop:
        keep = [i for i in range(len(headers)) if i not in drop]
        shrink = tuple(keep.index(i) for i in shrink if i in keep)
        rows, headers = [[r[i] for i in keep] for r in rows], [headers[i] for i in keep]
        text = tabulate(rows, headers=headers, **kwargs)
        over = max((len(line) for line in text.splitlines()), default=0) - width()
    if over <= 0 or not shrink:
        return text
    natural = [max([len(str(h)) for h in headers[i:i + 1]] + [max((len(x) for x in str(r[i]).splitlines()),
                                                                    default=0) for r in rows])
               for i in range(len(headers))]
    limits: list[int | None] = [None] * len(headers)
    safe = [[one_line(c) if isinstance(c, str) else c for c in r] for r in rows]  # escaped before wrapping
    for _ in range(3):  # a wrapped header or cell can re-widen a column by its padding: measure again
        for i in shrink:
            if over <= 0:
                break
            # never narrower than the column's longest piece: tabulate would break it mid-word
            word = max((len(w) for r in [headers, *rows] for w in pieces(str(r[i]), hyphens)), default=0)
            limit = limits[i]
            now = limit if limit is not None else natural[i]
            cut = min(over, max(now - max(floor, min(word, max_word)), 0))
            if cut:
                limits[i] = now - cut
                over -= cut
        cells = [[wrap_cell(str(c), lim, hyphens) if (lim := limits[i]) is not None else c for i, c in enumerate(r)]
                 for r in safe]
        text = tabulate(cells, headers=headers, maxheadercolwidths=limits, escaped=True, **kwargs)
        over = max((len(line) for line in text.splitlines()), default=0) - width()
        if over <= 0:
            break
    return text


# A cell breaks at spaces and after a word's hyphen that a letter follows (Llama-3.2-1B- / Instruct), never
# inside a number, a range or an option (-259.13, 1.58-4.29, --wide): an id wraps where a reader splits it
_BREAK = re.compile(r"(?<=[^\s-]-)(?=[^\W\d_])")


def pieces(text: str, hyphens: bool = True) -> list[str]:
    """The pieces a cell may be broken between: words, and with `hyphens` their parts (each keeping its
    trailing hyphen)."""
    return [p for w in text.split() for p in (_BREAK.split(w) if hyphens else [w])]


def wrap_cell(text: str, limit: int, hyphens: bool = True) -> str:
    """A cell's lines wrapped to `limit` at spaces (and word hyphens: pieces()); a piece longer than the
    limit is cut at the limit."""
    out: list[str] = []
    for line in text.splitlines() or [""]:
        cur = ""
        for w in line.split():
            for j, p in enumerate(_BREAK.split(w) if hyphens else [w]):
                sep = " " if cur and j == 0 else ""
                if cur and len(cur) + len(sep) + len(p) > limit:
                    out.append(cur)
                    cur, sep = "", ""
                while len(p) > limit:
                    out.append(p[:limit])
                    p = p[limit:]
                cur += sep + p
        out.append(cur)
    return "\n".join(out)
