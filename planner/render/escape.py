"""Text from inputs made safe for each output sink, in one place: terminal lines, Markdown, the step summary.

Why one module: deployment names, machine names and model folders come from files a stranger may write
(a PR to a repository whose CI runs `planner check`), and the same name reaches several sinks. Each sink
has its own way of being driven by text:

- a GitHub runner reads every line of a step's stdout and stderr, trims leading white space and runs it
  as a workflow command when it starts with `::` (actions/runner src/Runner.Worker/ActionCommandManager.cs,
  `ActionCommand.TryParseV2`: `message.TrimStart()` then `StartsWith("::")`); `::stop-commands::x`
  silences every later annotation. Lines are cut at `\\n` and at a lone `\\r` (.NET `ReadLine`).
  `no_commands` escapes the first colon of any such line, so only `render/github.py: annotation` (written
  by `commands/check.py` itself) ever starts one;
- Markdown (the .md report and $GITHUB_STEP_SUMMARY, which GitHub renders with its HTML subset: `<details>`,
  `<img src=...>`) reads a tag opening or an entity as HTML, `[text](url)` / `![alt](url)` as a link or
  a remote image, a newline as a new block; `md` escapes each (CommonMark 0.31 "Backslash escapes": any
  ASCII punctuation may be backslash-escaped and renders as itself).
"""

from __future__ import annotations

import re

from ..core.errors import one_line

# A line (start of text, or after \n or a lone \r) whose first non-blank characters are `::`.
_COMMAND = re.compile(r"(\A|[\r\n])([^\S\r\n]*):(?=:)")
# What makes Markdown viewers read text as HTML: a tag opening (<script, </a, <!--, <?) or an entity (&lt;).
# A plain '<=' or '&' stays as it is, so the file reads as before.
_TAG = re.compile(r"<(?=[A-Za-z/!?])")
_ENTITY = re.compile(r"&(?=#?\w+;)")
_LINK = re.compile(r"([\\\[\]])")  # [text](url), ![alt](url), [ref]: url: no bracket stays live (nor a \\ before one)


def no_commands(text: str, colon: str = "\\:") -> str:
    r"""`text` with no line a GitHub runner would run as a workflow command: a leading `::` becomes `colon` + `:`.

    `colon` is how the sink writes a colon that is not markup: `\\:` in a terminal or Markdown (CommonMark
    renders `\\:` as `:`), `&#58;` in HTML and XML.

    Example:
        >>> print(no_commands("a\n  ::stop-commands::x\n::error::forged"))
        a
          \::stop-commands::x
        \::error::forged
    """
    return _COMMAND.sub(lambda m: f"{m.group(1)}{m.group(2)}{colon}", text) if "::" in text else text


def md(text: str, *, lines: bool = False) -> str:
    r"""Text safe in Markdown: one line (or, with lines=True, its lines each), no HTML, no link, no command.

    Example:
        >>> print(md("![x](http://e/i.png) <img src=x> &lt; a\rb"))
        !\[x\](http://e/i.png) &lt;img src=x> &amp;lt; a\\rb
    """
    parts = text.split("\n") if lines else [text]
    return "\n".join(no_commands(_LINK.sub(r"\\\1", _TAG.sub("&lt;", _ENTITY.sub("&amp;", one_line(p)))))
                     for p in parts)


def md_cell(text: str) -> str:
    """One Markdown table cell: `md` on one line, and `|` escaped so the cell cannot end early."""
    return md(text.replace("\n", " ")).replace("|", "\\|")
