"""Predicted vs published speed-ups: every published measurement `planner recommend` can express.

Run: python benchmarks/bench_published.py [--json] [--data PATH]

For each entry of benchmarks/data/published_measurements.json the CLI runs in this process,
offline (HF_HUB_OFFLINE=1):

  planner recommend TARGET --candidates DRAFT --machine M --engine E --weights-dtype WT
                   [--draft-weights-dtype WD] [--k N] [--batch B] [--context C] --json

(an entry whose `method` is not a separate draft model -- eagle3, mtp, ngram -- runs `--method M`
instead of `--candidates`: the tool picks the catalogued head; `draft` then names what was measured)

and plans[0] gives the prediction: speedup, speedup_interval, verdict, baseline_tokens_per_s.
An entry is "not expressible" when its engine, machine, target, weights dtype or draft is null
(the data file's `note` says why). A flag the CLI refuses is dropped, the run repeated, and the
row says so.

Printed: one row per entry, then a summary per source, per origin and per sample (in-sample rows: a
constant on the row's path cites its source, benchmarks/sample_split.py; the rest out-of-sample), and overall:
  sign agreement   verdict 'faster' with measured > 1.05, 'slower' with measured < 0.95; over the
                   entries whose measured speed-up is outside [0.95, 1.05]; 'uncertain' counts as
                   neither right nor wrong but stays in the denominator (also given without it)
  slowdowns caught share of measured slowdowns of 5% or more (measured <= 0.95) called 'slower'
                   or 'uncertain'
  rel. error       |predicted - measured| / measured of the central estimate: median and worst
  coverage         share of measured speed-ups inside speedup_interval
  uncertain        share of predictions whose verdict is 'uncertain'
  baseline ratio   median of predicted / measured baseline tokens/s, where a baseline was published

Exit code: 0 (a report, whatever the numbers); 2 when the data file cannot be read.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tabulate import tabulate

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "data" / "published_measurements.json"
if str(REPO) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))
if str(REPO / "benchmarks") not in sys.path:  # its sibling sample_split.py, also when loaded by path (tests)
    sys.path.insert(0, str(REPO / "benchmarks"))

from sample_split import in_sample  # noqa: E402

EXPRESSIBLE_FIELDS = ("engine", "machine", "target", "weights_dtype", "draft")
OPTIONAL_FLAGS = ("--k", "--draft-weights-dtype", "--draft-p-min", "--draft-min")  # newer flags: dropped (and reported) if the CLI refuses them
FASTER_ABOVE, SLOWER_BELOW = 1.05, 0.95  # measured outcome bands (published noise is a few per cent)
SLOWDOWN_AT_MOST = 0.95  # "a slowdown of 5% or more"


class DataError(ValueError):
    """The measurements file is missing, not JSON, or an entry breaks the schema."""


# ---------------------------------------------------------------- data

def read_list(path: Path, key: str, *, bare_list: bool = False) -> list[Any]:
    """The `key` list of a JSON data file (`bare_list`: the file may be the list itself).

    Raises:
        DataError: unreadable file, invalid JSON, or no such list.
    """
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise DataError(f"Cannot read {key} from '{path}': {e}.") from e
    items = doc.get(key) if isinstance(doc, dict) else (doc if bare_list else None)
    if not isinstance(items, list):
        raise DataError(f"Cannot read {key} from '{path}': expected a '{key}' list.")
    return items


def load_entries(path: Path) -> list[dict[str, Any]]:
    """The `measurements` list of a data file, checked for the fields the benchmark needs.

    Raises:
        DataError: unreadable file, invalid JSON, no `measurements` list, an entry without `id`,
            `source` or a positive `measured_speedup`, or a duplicate id.
    """
    entries = read_list(path, "measurements", bare_list=True)
    seen: set[str] = set()
    for i, e in enumerate(entries):
        eid = e.get("id") if isinstance(e, dict) else None
        sp = e.get("measured_speedup") if isinstance(e, dict) else None
        if not eid or not e.get("source") or not isinstance(sp, (int, float)) or sp <= 0:
            raise DataError(f"Cannot read entry {i} of '{path}': it needs an id, a source and a measured_speedup "
                            f"> 0 (got id={eid!r}, measured_speedup={sp!r}).")
        if eid in seen:
            raise DataError(f"Cannot read '{path}': duplicate id '{eid}'.")
        seen.add(eid)
    return entries


def missing_fields(entry: dict[str, Any]) -> list[str]:
    """The fields that keep the CLI from expressing this entry (empty: expressible)."""
    return [f for f in EXPRESSIBLE_FIELDS if not entry.get(f)]


def source_key(source: str) -> str:
    """A short name for a source string: 'llama.cpp#10664', 'mostlygeek/llama-swap', 'arXiv 2405.19715'..."""
    m = re.match(r"\s*([\w.-]+)/([\w.-]+) discussion #(\d+)", source)
    if m:
        return f"{m[2]}#{m[3]}"
    m = re.search(r"arXiv\s*(\d{4}\.\d{4,5})", source)
    if m:
        return f"arXiv {m[1]}"
    m = re.search(r"https?://(?:www\.)?([^/\s]+)(/[^\s)]*)?", source)
    if not m:
        return source.split(" (")[0][:40]
    host, path = m[1], (m[2] or "").strip("/").split("/")
    if host == "github.com" and len(path) >= 4 and path[2] in ("issues", "pull", "discussions"):
        return f"{path[1]}#{path[3]}"
    if host == "github.com" and len(path) >= 2:
        return f"{path[0]}/{path[1]}"
    if host.endswith("reddit.com") and "comments" in path:
        return f"reddit {path[path.index('comments') + 1]}"
    return host


def origin_key(entry: dict[str, Any]) -> str:
    """'catalogs/pairs' (their acceptance feeds the tool's priors: in-sample) or the entry's own origin."""
    origin = entry.get("origin") or "unknown"
    return "catalogs/pairs (in-sample)" if origin.startswith("catalogs/pairs") else origin


# ---------------------------------------------------------------- running the CLI

def cli_args(entry: dict[str, Any], *, drop: Iterable[str] = ()) -> list[str]:
    """`recommend` argv for an expressible entry, without the flags in `drop`."""
    method = entry.get("method") or "draft_model"
    drafts = ["--candidates", entry["draft"]] if method == "draft_model" else ["--method", method]
    argv = ["recommend", entry["target"], *drafts, "--machine", entry["machine"],
            "--engine", entry["engine"], "--weights-dtype", entry["weights_dtype"]]
    for field, flag in (("batch", "--batch"), ("context", "--context"), ("temperature", "--temperature"), ("workload", "--workload")):
        if entry.get(field) is not None:
            argv += [flag, str(entry[field])]
    if entry.get("draft_weights_dtype") and "--draft-weights-dtype" not in drop:
        argv += ["--draft-weights-dtype", entry["draft_weights_dtype"]]
    if entry.get("k") is not None and "--k" not in drop:
        argv += ["--k", str(entry["k"])]
    # confidence-stopped drafting as published (llama-server --draft-p-min / --draft-min); K is then --draft-max
    if entry.get("p_min") is not None and "--draft-p-min" not in drop:
        argv += ["--draft-p-min", str(entry["p_min"])]
        if entry.get("n_min"):
            argv += ["--draft-min", str(entry["n_min"])]
        if entry.get("n_max") is not None and "--k" not in drop and entry.get("k") is None:
            argv += ["--k", str(entry["n_max"])]
    return [*argv, "--json"]


def run_cli(argv: Sequence[str]) -> tuple[int, str, str]:
    """planner.cli.main(argv) in this process, offline: (exit code, stdout, stderr)."""
    from planner.cli import main as planner_main

    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                planner_main(list(argv))
                rc = 0
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    finally:
        if saved is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = saved
    return rc, out.getvalue(), err.getvalue()


def refused_flag(stderr: str, argv: Sequence[str]) -> str | None:
    """The optional flag of `argv` that a usage error names as unknown, if any."""
    for flag in OPTIONAL_FLAGS:
        if flag in argv and re.search(rf"(?i)no such option:?\s*'?{re.escape(flag)}\b", stderr):
            return flag
    return None


def _row(entry: dict[str, Any], status: str, reason: str | None = None, **fields: Any) -> dict[str, Any]:
    sample = "in-sample" if in_sample(entry["source"], entry.get("origin") or "") else "out-of-sample"
    row = {"id": entry["id"], "source": source_key(entry["source"]), "origin": origin_key(entry), "sample": sample,
           "status": status, "reason": reason, "measured_speedup": entry["measured_speedup"],
           "measured_baseline_tokens_per_s": entry.get("baseline_tokens_per_s"), "stand_in": bool(entry.get("stand_in")),
           "engine": entry.get("engine"), "machine": entry.get("machine"), "k_requested": entry.get("k")}
    row.update({"speedup": None, "speedup_interval": None, "verdict": None, "baseline_tokens_per_s": None,
                "k": None, "compatible": None, "fits": None, "dropped_flags": []})
    row.update(fields)
    return row


def predict_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """Run the CLI for one entry and read plans[0].

    Returns:
        A row: the entry's id, source, measured figures, `status` ('ok', 'not expressible', 'no plan',
        'error') with a `reason`, and from plans[0] `speedup`, `speedup_interval`, `verdict`,
        `baseline_tokens_per_s`, `k`, `compatible`, `fits`; `dropped_flags` names refused flags.
    """
    missing = missing_fields(entry)
    if missing:
        return _row(entry, "not expressible", f"no {', '.join(missing)}")
    dropped: list[str] = []
    while True:
        argv = cli_args(entry, drop=dropped)
        try:
            rc, out, err = run_cli(argv)
        except Exception as e:  # a bug in the planner (a traceback): report the row, keep going (exit 0)
            return _row(entry, "error", f"{type(e).__name__}: {e}"[:200], dropped_flags=dropped)
        flag = refused_flag(err, argv) if rc == 2 else None
        if flag is None:
            break
        dropped.append(flag)
    return _read_plan(entry, rc, out, err, dropped)


def _read_plan(entry: dict[str, Any], rc: int, out: str, err: str, dropped: list[str]) -> dict[str, Any]:
    try:
        doc = json.loads(out)
    except ValueError:
        tail = (err.strip().splitlines() or [f"exit {rc}, no JSON"])[-1]
        return _row(entry, "error", tail[:200], dropped_flags=dropped)
    plans = doc.get("plans") or []
    if not plans:
        why = doc.get("recommendation") or "; ".join(doc.get("notes") or []) or f"exit {rc}, no plan"
        return _row(entry, "no plan", str(why)[:200], dropped_flags=dropped)
    p = plans[0]
    interval = p.get("speedup_interval")
    reason = "plans[0] has no baseline_tokens_per_s" if "baseline_tokens_per_s" not in p else None
    return _row(entry, "ok", reason, speedup=p.get("speedup"), verdict=p.get("verdict"),
                speedup_interval=list(interval) if interval else None, k=p.get("k"),
                baseline_tokens_per_s=p.get("baseline_tokens_per_s"), compatible=p.get("compatible"),
                fits=p.get("fits"), dropped_flags=dropped)


# ---------------------------------------------------------------- scoring (pure)

def measured_outcome(speedup: float) -> str:
    """'faster' above 1.05, 'slower' below 0.95, else 'no gain'."""
    return "faster" if speedup > FASTER_ABOVE else "slower" if speedup < SLOWER_BELOW else "no gain"


def sign_call(row: dict[str, Any]) -> str | None:
    """'right', 'wrong' or 'uncertain' for a row whose measured outcome is faster/slower; None otherwise."""
    measured = measured_outcome(row["measured_speedup"])
    if measured == "no gain":
        return None
    if row["verdict"] == "uncertain":
        return "uncertain"
    return "right" if row["verdict"] == measured else "wrong"


def relative_error(row: dict[str, Any]) -> float:
    # |S_pred - S_meas| / S_meas, central estimate
    return abs(row["speedup"] - row["measured_speedup"]) / row["measured_speedup"]


def covered(row: dict[str, Any]) -> bool:
    lo, hi = row["speedup_interval"]
    return lo <= row["measured_speedup"] <= hi


def _share(num: int, den: int) -> float | None:
    return num / den if den else None


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Scores of a list of rows (as `predict_entry` returns them); only rows with status 'ok' are scored.

    Returns:
        counts (`entries`, `predicted`, `not_expressible`, `no_plan`, `errors`), `sign_right`/`_wrong`/
        `_uncertain` and `sign_agreement` (right / all three) and `sign_agreement_decided` (right /
        right + wrong), `slowdowns` and `slowdowns_flagged` (share called slower or uncertain),
        `median_rel_error`, `worst_rel_error`, `worst_id`, `interval_coverage`, `uncertain_share`,
        `baseline_ratio_median` over `baseline_ratio_n` rows; a share is None when nothing counts.
    """
    ok = [r for r in rows if r["status"] == "ok" and r["speedup"] is not None]
    calls = [c for c in (sign_call(r) for r in ok) if c is not None]
    right, wrong, unsure = (calls.count(c) for c in ("right", "wrong", "uncertain"))
    slow = [r for r in ok if r["measured_speedup"] <= SLOWDOWN_AT_MOST]
    errors = sorted(((relative_error(r), r["id"]) for r in ok), reverse=True)
    with_interval = [r for r in ok if r["speedup_interval"]]
    ratios = [r["baseline_tokens_per_s"] / r["measured_baseline_tokens_per_s"] for r in ok
              if r["baseline_tokens_per_s"] and r["measured_baseline_tokens_per_s"]]
    status = [r["status"] for r in rows]
    return {
        "entries": len(rows), "predicted": len(ok), "not_expressible": status.count("not expressible"),
        "no_plan": status.count("no plan"), "errors": status.count("error"),
        "sign_right": right, "sign_wrong": wrong, "sign_uncertain": unsure,
        "sign_agreement": _share(right, right + wrong + unsure), "sign_agreement_decided": _share(right, right + wrong),
        "slowdowns": len(slow),
        "slowdowns_flagged": _share(sum(r["verdict"] in ("slower", "uncertain") for r in slow), len(slow)),
        "median_rel_error": statistics.median(e for e, _ in errors) if errors else None,
        "worst_rel_error": errors[0][0] if errors else None, "worst_id": errors[0][1] if errors else None,
        "interval_coverage": _share(sum(covered(r) for r in with_interval), len(with_interval)),
        "uncertain_share": _share(sum(r["verdict"] == "uncertain" for r in ok), len(ok)),
        "baseline_ratio_median": statistics.median(ratios) if ratios else None, "baseline_ratio_n": len(ratios),
    }


def summarise_by(rows: Sequence[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    """`summarise` per value of row[key], in order of first appearance."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r[key], []).append(r)
    return {name: summarise(group) for name, group in groups.items()}


# ---------------------------------------------------------------- rendering

def _f(x: float | None, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.0f}%"


def entry_table(rows: Sequence[dict[str, Any]]) -> str:
    """One line per predicted entry: measured vs predicted, verdict, error, baseline tok/s."""
    lines = []
    for r in rows:
        if r["status"] != "ok":
            continue
        lo_hi = "-" if not r["speedup_interval"] else f"{r['speedup_interval'][0]:.2f}-{r['speedup_interval'][1]:.2f}"
        call = sign_call(r) or "(no gain)"
        flags = ("*" if r["stand_in"] else "") + ("!" if r["dropped_flags"] else "") + ("x" if r["compatible"] is False else "")
        lines.append([r["id"][:58] + flags, r["engine"], r["machine"], _f(r["measured_speedup"]), _f(r["speedup"]),
                      lo_hi, r["verdict"], call, "yes" if r["speedup_interval"] and covered(r) else "no",
                      _pct(relative_error(r)), r["k"], _f(r["measured_baseline_tokens_per_s"], ".1f"),
                      _f(r["baseline_tokens_per_s"], ".1f")])
    head = ["entry", "engine", "machine", "meas", "pred", "interval", "verdict", "sign", "in int.", "rel err",
            "K", "base meas", "base pred"]
    return tabulate(lines, head, disable_numparse=True)


def other_table(rows: Sequence[dict[str, Any]]) -> str:
    """Entries that were not predicted, with the reason."""
    lines = [[r["id"], r["status"], r["reason"]] for r in rows if r["status"] != "ok"]
    return tabulate(lines, ["entry", "status", "reason"]) if lines else "(none)"


def group_table(groups: dict[str, dict[str, Any]], label: str) -> str:
    """One line per group with a prediction: counts and every score; the other groups counted at the end."""
    idle = [name for name, s in groups.items() if not s["predicted"]]
    groups = {name: s for name, s in groups.items() if s["predicted"]}
    lines = [[name, s["entries"], s["predicted"], f"{s['sign_right']}/{s['sign_wrong']}/{s['sign_uncertain']}",
              _pct(s["sign_agreement"]), f"{_pct(s['slowdowns_flagged'])} of {s['slowdowns']}",
              _pct(s["median_rel_error"]), _pct(s["worst_rel_error"]), _pct(s["interval_coverage"]),
              _pct(s["uncertain_share"]), _f(s["baseline_ratio_median"]) + f" ({s['baseline_ratio_n']})"]
             for name, s in groups.items()]
    head = [label, "n", "pred", "sign r/w/u", "agree", "slow caught", "med err", "worst err", "coverage",
            "uncertain", "base ratio (n)"]
    text = tabulate(lines, head, disable_numparse=True)
    return text + (f"\n({len(idle)} more with nothing predicted: {', '.join(idle)})" if idle else "")


def overall_text(s: dict[str, Any]) -> str:
    """The overall summary as labelled lines."""
    return "\n".join([
        f"entries {s['entries']}: predicted {s['predicted']}, not expressible {s['not_expressible']}, "
        f"no plan {s['no_plan']}, errors {s['errors']}",
        f"sign agreement: {_pct(s['sign_agreement'])} (right {s['sign_right']}, wrong {s['sign_wrong']}, "
        f"uncertain {s['sign_uncertain']}); without the uncertain ones {_pct(s['sign_agreement_decided'])}",
        f"measured slowdowns >= 5% called slower or uncertain: {_pct(s['slowdowns_flagged'])} of {s['slowdowns']}",
        f"relative error of the central estimate: median {_pct(s['median_rel_error'])}, "
        f"worst {_pct(s['worst_rel_error'])} ({s['worst_id'] or '-'})",
        f"interval coverage: {_pct(s['interval_coverage'])}; verdict 'uncertain': {_pct(s['uncertain_share'])}",
        f"baseline tok/s predicted / measured: median {_f(s['baseline_ratio_median'])} over {s['baseline_ratio_n']}",
    ])


def pooled_by_source(rows: Sequence[dict[str, Any]]) -> tuple[float | None, int]:
    """The median over sources of each source's median relative error, and how many sources: a sweep of
    many rows from one publication counts once (it is one setup, one acceptance, one build)."""
    per = [s["median_rel_error"] for s in summarise_by(rows, "source").values() if s["median_rel_error"] is not None]
    return (statistics.median(per) if per else None), len(per)


def pooled_text(rows: Sequence[dict[str, Any]]) -> str:
    med, n = pooled_by_source(rows)
    return f"median error pooled by source (each source's median once): {_pct(med)} over {n} sources"


def report_text(rows: Sequence[dict[str, Any]], data: Path) -> str:
    """The whole human report."""
    dropped = sorted({f for r in rows for f in r["dropped_flags"]})
    parts = [f"Published speculative-decoding measurements vs `planner recommend` ({data})", "",
             entry_table(rows),
             "* stand-in model of the same config (see the data file's note); x plans[0] not compatible; "
             "! a flag was refused and dropped", "",
             "Not predicted:", other_table(rows), "",
             "By source:", group_table(summarise_by(rows, "source"), "source"), "",
             "By origin:", group_table(summarise_by(rows, "origin"), "origin"), "",
             "By sample (in-sample: a constant on the row's path cites its source; benchmarks/sample_split.py):",
             group_table(summarise_by(rows, "sample"), "sample"), "",
             "Overall:", overall_text(summarise(rows)), pooled_text(rows)]
    if dropped:
        parts.append(f"note: the CLI refused {', '.join(dropped)}; those entries ran without it")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Predicted vs published speculative-decoding speed-ups")
    ap.add_argument("--data", type=Path, default=DATA, help="measurements JSON (default: %(default)s)")
    ap.add_argument("--json", action="store_true", help="print a machine-readable summary")
    args = ap.parse_args(argv)
    try:
        entries = load_entries(args.data)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rows = [predict_entry(e) for e in entries]
    if args.json:
        pooled, sources = pooled_by_source(rows)
        print(json.dumps({"data": str(args.data), "overall": summarise(rows),
                          "pooled_by_source": {"median_rel_error": pooled, "sources": sources},
                          "by_source": summarise_by(rows, "source"), "by_origin": summarise_by(rows, "origin"),
                          "by_sample": summarise_by(rows, "sample"),
                          "entries": rows}, indent=1))
    else:
        print(report_text(rows, args.data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
