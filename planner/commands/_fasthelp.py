"""Start-up: `planner --help` (the root's) printed without typer, click or any command module (issue #33).

Why: the root help lists every command, so through typer it imports all ten command modules and what
they import (~130 modules, ~170 ms) to print twenty lines. The lines are the same bytes typer prints: the
root's help, its options and each command's short help, laid out as click's HelpFormatter lays them out
(click/formatting.py write_usage, write_text, write_dl; typer/core.py TyperGroup.format_commands' limit;
click/utils.py make_default_short_help). The texts are copies of what the command modules declare, and
tests/test_fasthelp.py holds the printed page equal to typer's own at several terminal widths, so a
command added or a help line changed fails there. Anything unusual (another shell-completion mode, a
program name too long for one usage line) returns None and typer prints the help.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap

ROOT_HELP = "Plan speculative decoding before you deploy: fit, compatibility, speed-up."
# (option, help) as the root lists them (commands/_common.py _root; typer's completion options; --help)
ROOT_OPTIONS = (
    ("--version", "Print 'spec-planner <version>' and exit."),
    ("--install-completion", "Install completion for the current shell."),
    ("--show-completion", "Show completion for the current shell, to copy it or customize the installation."),
    ("--help", "Show this message and exit."),
)
# (command, first paragraph of its help) in the order the root lists them (cli._register's order)
COMMANDS = (
    ("memory", "Memory ledger of a target (and optional draft): weights, KV cache, activations, overhead."),
    ("catalog", "List the bundled models (usable offline by id or alias)."),
    ("fit", "Does TARGET (+ --draft) fit the machine? Per-device ledger, largest context and batch, fixes."),
    ("probe", "Measure t_v(n) (target, n = 1..K+1), t_d (draft) and the per-round overhead on this machine."),
    ("pair", "Tokenizer compatibility per engine (naming the rule that fails), fallbacks, family and size advice."),
    ("recommend", "Rank candidate drafts x K x KV dtype that fit and are compatible; print the best plan and how "
                  "to launch it."),
    ("check", "Judge every deployment in the policy on every machine against its requirements (a CI gate)."),
    ("report", "Write the fit report: per machine the memory ledger, pair verdicts, verify curve, speed-up vs K, "
               "recommendation and launch commands. HTML is one self-contained file; Markdown links SVGs beside "
               "it."),
    ("bench", "Measure baseline and speculative tokens/s on the same prompts, acceptance in every convention, "
              "and the speed model's prediction from costs measured on the same models."),
    ("machines", "Machines: the bundled catalog and detection of this host."),
)
_COL_MAX, _COL_SPACING, _INDENT = 30, 2, 2


def root_help() -> str | None:
    """The root help page as typer would print it on this terminal, or None: let typer print it."""
    if os.environ.get("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"):
        return None  # typer lists the completion options differently then
    width = max(min(shutil.get_terminal_size().columns, 80) - 2, 50)  # click HelpFormatter's default width
    usage = f"Usage: {program_name()} [OPTIONS] COMMAND [ARGS]..."
    if len(usage) > width:
        return None  # click wraps a long usage line its own way
    limit = width - 6 - max(len(name) for name, _ in COMMANDS)
    parts = [usage, "", _wrap(ROOT_HELP, width, " " * _INDENT), "", "Options:",
             *_definitions(ROOT_OPTIONS, width), "", "Commands:",
             *_definitions([(name, short_help(text, limit)) for name, text in COMMANDS], width)]
    return "\n".join(parts)


def program_name() -> str:
    """click's name for the program in usage lines (click/utils.py _detect_program_name)."""
    main, path = sys.modules.get("__main__"), sys.argv[0] if sys.argv else ""
    package = getattr(main, "__package__", None)
    if package in (None, ""):
        return os.path.basename(path)
    name = os.path.splitext(os.path.basename(path))[0]
    module = package if name == "__main__" else f"{package}.{name}"
    return f"python -m {module.lstrip('.')}"


def short_help(text: str, limit: int) -> str:
    """click's make_default_short_help: the first sentence, else the words that fit with '...'."""
    words = text.split("\n\n")[0].split()
    total, last = 0, len(words) - 1
    for i, word in enumerate(words):
        total += len(word) + (i > 0)
        if total > limit:
            break
        if word[-1] == ".":
            return " ".join(words[: i + 1])
        if total == limit and i != last:
            break
    else:
        return " ".join(words)
    total += len("...")
    while i > 0:
        total -= len(words[i]) + (i > 0)
        if total <= limit:
            break
        i -= 1
    return " ".join(words[:i]) + "..."


def _wrap(text: str, width: int, indent: str) -> str:
    return textwrap.TextWrapper(width, initial_indent=indent, subsequent_indent=indent,
                                replace_whitespace=False).fill(text)


def _definitions(rows: list[tuple[str, str]] | tuple[tuple[str, str], ...], width: int) -> list[str]:
    """click's HelpFormatter.write_dl at one level of indentation."""
    first_col = min(max(len(a) for a, _ in rows), _COL_MAX) + _COL_SPACING
    text_width = max(width - first_col - 2, 10)
    out = []
    for first, second in rows:
        head = " " * _INDENT + first
        lines = textwrap.TextWrapper(text_width, replace_whitespace=False).fill(second).splitlines()
        if len(first) <= first_col - _COL_SPACING:
            out.append(head + " " * (first_col - len(first)) + lines[0])
        else:
            out += [head, " " * (first_col + _INDENT) + lines[0]]
        out += [" " * (first_col + _INDENT) + line for line in lines[1:]]
    return out
