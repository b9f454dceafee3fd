"""`planner recommend`'s text: the plan table (plans of identical figures in one row), the RECOMMENDED line
with its reasons, the baseline, the plan under load, the launch command and the notes, fitted to the terminal.
"""

from __future__ import annotations

import re
from typing import Any, get_args

from ..core.errors import one_line
from ..core.fmt import fmt_bytes
from ..engines.base import MethodKind
from ..plan.recommend import method_kind
from . import width
from .width import command_lines, python_lines, wrap

SHOWN_PLANS = 3  # rows of the plan table without --all


def _speed_cells(o: Any) -> list[str]:
    """speed-up (interval) and verdict: none for a plan that does not fit or will not run."""
    if not o.usable:
        return ["-", "-"]
    return [f"{o.speedup:.2f}x ({o.speedup_interval[0]:.2f}-{o.speedup_interval[1]:.2f})", o.verdict]


def _short(draft: str | None) -> str:
    return one_line((draft or "-").rpartition("/")[2])  # the org is in the RECOMMENDED line and the JSON


def _names(drafts: list[str]) -> str:
    """Drafts of one row: 'Llama-3.2-1B [-Instruct]' for a base and its instruct tune, else joined."""
    names = list(dict.fromkeys(_short(d) for d in drafts))
    if len(names) == 2:
        a, b = sorted(names, key=len)
        if b.startswith(a):
            return f"{a} [{b[len(a):]}]"
    return " | ".join(names)


def _method_cell(o: Any, names: str) -> str:
    """A draft model's row names the draft; another method's says which method first (eagle3: head)."""
    kind = method_kind(o)
    if kind in ("draft_model", "none") or names.startswith(kind):
        return names
    short = re.sub(rf"(?i)-?{re.escape(kind)}-?", "-", names).strip("-") or names  # the prefix says it
    return f"{kind}: {short}"


def key_runs(o: Any) -> str:
    return "yes" if o.compatible and not o.fallback else ("fallback" if o.fallback else "NO")


def key_alpha(o: Any) -> str:
    return f"{o.acceptance.alpha:.2f}" if o.acceptance else "-"


def _draft_bytes(o: Any) -> int | None:
    """The draft's resident weight bytes (equal for a base and its instruct tune), None without a draft."""
    resident = o.method.resident_model() if o.method is not None else None
    return resident.weights.resident_bytes if resident is not None else None


def plan_rows(plans: Any, limit: int | None) -> tuple[list[list[str]], int]:
    """Table rows with plans of identical figures collapsed into one (base and instruct drafts of one size,
    KV types that change no speed figure; the headroom is the first plan's, its range with --wide), in rank
    order; and how many rows `limit` left out."""
    groups: dict[tuple, list[Any]] = {}
    for o in plans:
        # what differs; a draft's size too, so only a base and its instruct tune of one size share a row
        # (an unusable 3B and 8B, both "-", once merged into one row under the 3B's headroom)
        key = (method_kind(o), o.k, *_speed_cells(o), o.fits, key_runs(o), key_alpha(o), _draft_bytes(o))
        groups.setdefault(key, []).append(o)
    rows = []
    for same in groups.values():
        o = same[0]
        lo, hi = min(x.headroom_bytes for x in same), max(x.headroom_bytes for x in same)
        a, b = fmt_bytes(lo).split(" "), fmt_bytes(hi).split(" ")
        if lo == hi or not o.usable:  # a plan that cannot run: how close the nearest comes
            head = fmt_bytes(hi)
        elif not width.is_wide():  # the row's first (ranked) plan; --wide shows the range
            head = fmt_bytes(o.headroom_bytes)
        else:
            head = f"{a[0]}-{b[0]} {a[1]}" if a[1] == b[1] and lo >= 0 else f"{fmt_bytes(lo)} to {fmt_bytes(hi)}"
        rows.append([_method_cell(o, _names([x.draft for x in same])), "/".join(dict.fromkeys(x.kv_dtype for x in same)), str(o.k),
                     *_speed_cells(o), "yes" if o.fits else "NO", head, key_runs(o), key_alpha(o)])
    if limit is None or len(rows) <= limit:
        return rows, 0
    return rows[:limit], len(rows) - limit


def measured_text(m: Any) -> str | None:
    """One line for a machine measured on this host: each figure's median and IQR, when, and from which
    saved profile (None: a catalogued machine, nothing measured)."""
    if not m.measured:
        return None
    figs = ", ".join(f"{k} {s.median / 1e9:.1f} GB/s (IQR {s.q1 / 1e9:.1f}-{s.q3 / 1e9:.1f}, {s.kept} trials)"
                     if k == "bandwidth" else f"{k} {s.median:.3g}" for k, s in m.measured.items())
    where = (f"from the saved profile {m.profile_path}" if m.profile_path
             else "now (save with planner machines detect --save)")
    return f"measured {figs} at {m.measured_at}, {where}" + (f"; {m.contention}" if m.contention else "")


def recommendation_text(rec: Any, machine_label: str | None = None, show_all: bool = False,
                        measured: str | None = None, explain: bool = True) -> str:
    """The answer; `explain` False (the default face) keeps it to one screen: the plans, the choice, the
    launch; where each figure came from, the reasoning and the notes wait behind -v / --explain."""
    lines = [f"target   {one_line(rec.target)}", *wrap(f"machine  {one_line(machine_label or rec.machine)}   engine {rec.engine}   "
                                             f"context {rec.context:,}   batch {rec.batch}"),
             *(wrap(one_line(measured), indent="         ") if measured and explain else ()),
             *(wrap(f"drafts   tokenizer family {rec.tokenizer_family or '?'} ({rec.tokenizer_match})")
               if explain else ()), ""]
    rows, left = plan_rows(rec.plans, None if show_all else SHOWN_PLANS)
    if rows:
        lines.append(width.table(rows, ["draft / method", "KV", "K", "speed-up (range)", "verdict", "fits", "headroom",
                                        "runs", "alpha"], shrink=(0, 3, 6), floor=7, hyphens=True,
                                        drop=(5,)))  # "fits" is the headroom's sign: the first to go at 80
        if left and explain:  # the one-screen answer says so on its last line
            lines.append(f"({left} more plan{'s' if left > 1 else ''}: --all)")
        if explain:
            lines += wrap(f"costs: {rec.plans[0].costs_source}; acceptance: {rec.plans[0].acceptance.source}"
                          if rec.plans[0].acceptance else "")
        lines.append("")
    c = rec.choice
    if c.draft:
        lines += wrap(f"RECOMMENDED  {method_kind(c)} {c.draft}, K={c.k}, KV {c.kv_dtype}: {c.speedup:.2f}x "
                      f"({c.speedup_interval[0]:.2f}-{c.speedup_interval[1]:.2f}x), {c.verdict}")
    else:
        lines.append("RECOMMENDED  no speculation: plain decoding")
    lines += [x for r in (c.reasons if explain else ()) for x in wrap(f"- {r}", indent="  ")]
    if c.baseline_tokens_per_s:  # the figure users hold against their own plain decode first
        with_plan = f"; with the plan {c.baseline_tokens_per_s * c.speedup:.1f}" if c.draft else ""
        lines += wrap(f"baseline: plain decoding {c.baseline_tokens_per_s:.1f} tok/s per sequence predicted{with_plan}"
                      + (" (check the baseline against your own first: the speed-up is relative to it)"
                         if explain else ""))
    if c.per_batch:
        cross = (f"speculation stops paying at {c.crossover_batch} concurrent sequences" if c.crossover_batch
                 else f"speculation pays up to {c.per_batch[-1].batch} concurrent sequences")
        lines += wrap("under load: " + ", ".join(f"B={p.batch} {p.speedup:.2f}x (K={p.k})" for p in c.per_batch)
                      + f"; {cross} (per-sequence scheduler costs not modelled)")
    lines.append("")
    for key, value in c.launch.items():
        if not explain and (key == "note" or (key == "speculative_config" and str(value) in
                                              str(c.launch.get("command", "")))):
            continue  # the note waits behind --explain; the config is printed inside the command
        lines.append(f"{key}:")
        text = str(value)
        if key == "command":
            lines += command_lines(text, indent="  ")
        elif key == "convert":  # steps run in order before the command: one pasteable command each
            lines += [x for step in text.split(" && ") for x in command_lines(step, indent="  ")]
        elif key == "python":
            lines += [x for line in text.splitlines() for x in python_lines(line, indent="  ")]
        else:
            lines += [x for line in text.splitlines() for x in wrap(line, indent="  ")]
    shown = [n for n in rec.notes if explain or not about_one_method(n)]
    lines += [x for n in shown for x in wrap(f"note: {one_line(n)}")]
    if not explain:
        left = plan_rows(rec.plans, None if show_all else SHOWN_PLANS)[1]
        lines += wrap(hidden_line(len(rec.notes) - len(shown) + len(c.reasons) + ("note" in c.launch), left))
    return "\n".join(lines)


def about_one_method(note: str) -> bool:
    """A note on why one drafting method is not offered ("mtp: X ships no MTP layers"): detail for
    --explain; a note on the whole plan (it does not fit as asked, a caveat on its costs) stays."""
    return note.split(":", 1)[0] in get_args(MethodKind)


def hidden_line(n: int, plans: int) -> str:
    """What the one-screen answer leaves out, and the flags that print it."""
    more = f"{plans} more plan{'s' if plans != 1 else ''}: --all; " if plans else ""
    return f"({more}{n} more note{'s' if n != 1 else ''} and every figure's source: -v / --explain)"
