"""Imported measurements: llama-bench, llama-batched-bench or a CSV of n,seconds -> a profile.

Why: the synthetic probe runs torch kernels; a user deploying llama.cpp (a quantisation, Metal,
Vulkan) should feed the numbers of the backend they will run. Torch-free.

Formats (llama.cpp tools/llama-bench/README.md and tools/batched-bench/README.md, batched-bench.cpp):
- llama-bench `-o md` (default): columns `model | size | params | backend | ... | test | t/s`, test
  `pp512`, `pp 512`, `tg128`, `pp512 @ d4096`; t/s `2368.80 ± 93.24`. A `ppN` row times one
  forward of N tokens of one sequence at depth d (the verify shape): t_v(N) = N / (t/s).
- llama-bench `-o csv | json | jsonl`: fields n_prompt, n_gen, n_depth, avg_ns, avg_ts, model_type,
  model_filename, model_size, backends, gpu_info, cpu_info, type_k: t_v(n_prompt) = avg_ns / 1e9.
  A `tgN` row gives a decode step (avg time / N): used as t_v(1) when no pp1 row exists.
- llama-batched-bench table (`PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s`)
  or `--output-format jsonl` (pp, tg, pl, t_tg, ...): one step of B sequences of one token takes
  T_TG / TG; that is a proxy for t_v(B) (B caches, not one), said so in the notes.
- CSV `n,seconds` (header optional): t_v(n) directly.
Missing n between measured points are interpolated linearly and listed as such (measured_n).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core import constants, jsonio
from ..core.errors import ProfileError
from ..speed.diagnosis import diagnose
from ..speed.profile import ModelCurve, Profile
from ..speed.profile_file import read_bounded

MAX_N = 65  # K <= 64: longer prompt tests (pp512) are prefill, not verification
MAX_ROWS = 100_000
_TEST = re.compile(r"^(pp|tg)\s*(\d{1,9})(?:\s*@\s*d\s*(\d{1,9}))?$", re.I)  # bounded: int() of 5000 digits fails
_NUM = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Point:
    """One measurement: n tokens of one step took `seconds`; `kind` pp (one sequence), tg (decode), pl (n seqs)."""

    model: str
    kind: str
    n: int
    seconds: float
    depth: int
    meta: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ImportedRun:
    """A curve read from a file: t_v(1..N) (interpolated between measured n), where it came from."""

    model: str
    verify_s: tuple[float, ...]
    measured_n: tuple[int, ...]
    tool: str
    depth: int
    backend: str | None = None
    device: str | None = None
    dtype: str | None = None
    size_bytes: int | None = None
    notes: tuple[str, ...] = ()

    def curve(self, model_id: str | None = None) -> ModelCurve:
        full = tuple(range(1, len(self.verify_s) + 1))
        return ModelCurve(id=model_id or self.model, verify_s=self.verify_s, step_s=self.verify_s[0],
                          method=f"imported:{self.tool}",
                          measured_n=() if self.measured_n == full else self.measured_n, notes=self.notes)


def _err(origin: str, reason: str, expected: str | int, got: Any) -> ProfileError:
    return ProfileError(f"Cannot import measurements from '{origin}': {reason} (expected {expected}, got {got}). "
                        f"Pass llama-bench output (-p 1,2,...,9 -n 0, -o md|csv|json|jsonl), llama-batched-bench "
                        f"output, or a CSV of n,seconds.")


def _number(text: str, origin: str, what: str) -> float:
    m = _NUM.search(text or "")
    if not m or not math.isfinite(float(m.group(0))):
        raise _err(origin, f"{what} is not a finite number", "a number", repr(text)[:40])
    return float(m.group(0))


# --- markdown tables ---------------------------------------------------------------------

def _md_rows(text: str) -> tuple[list[str], list[list[str]]]:
    """Header and body cells of the first markdown/pipe table in text (separator rows skipped)."""
    header: list[str] = []
    rows: list[list[str]] = []
    for line in text.splitlines():
        s = line.strip()
        if not (s.startswith("|") and s.endswith("|")):
            if header and rows:
                break
            continue
        cells = [c.strip() for c in s.strip("|").split("|")]
        if all(re.fullmatch(r":?-{2,}:?", c.replace(" ", "")) or not c for c in cells):
            continue
        if not header:
            header = [c.lower() for c in cells]
        else:
            rows.append(cells)
    return header, rows[:MAX_ROWS]


def parse_llama_bench_md(text: str, origin: str) -> list[Point]:
    """Points from llama-bench's markdown table (`-o md`)."""
    header, rows = _md_rows(text)
    if "test" not in header or "t/s" not in header:
        raise _err(origin, "no llama-bench table", "columns 'test' and 't/s'", header[:8])
    it, its = header.index("test"), header.index("t/s")
    im = header.index("model") if "model" in header else None
    ib = header.index("backend") if "backend" in header else None
    out = []
    for r in rows:
        if len(r) != len(header):
            raise _err(origin, "a table row has the wrong number of cells", len(header), len(r))
        m = _TEST.match(r[it])
        if not m:
            continue  # pg tests (pp512+tg128) are not a single shape
        n, ts = int(m.group(2)), _number(r[its], origin, "t/s")
        if ts <= 0:
            raise _err(origin, f"t/s of '{r[it]}' is not positive", "> 0", ts)
        meta = (("backend", r[ib]),) if ib is not None else ()
        out.append(Point(r[im] if im is not None else Path(origin).stem, m.group(1).lower(), n, n / ts,
                         int(m.group(3) or 0), meta))
    return out


def parse_batched_bench_md(text: str, origin: str) -> list[Point]:
    """Points from llama-batched-bench's table: one decode step of B sequences = T_TG / TG."""
    header, rows = _md_rows(text)
    need = ("pp", "tg", "b", "t_tg s")
    if not all(k in header for k in need):
        raise _err(origin, "no batched-bench table", "columns PP, TG, B, T_TG s", header[:10])
    ix = {k: header.index(k) for k in need}
    out = []
    for r in rows:
        if len(r) != len(header):
            raise _err(origin, "a table row has the wrong number of cells", len(header), len(r))
        pp, tg, b = (int(_number(r[ix[k]], origin, k)) for k in ("pp", "tg", "b"))
        t_tg = _number(r[ix["t_tg s"]], origin, "T_TG")
        if tg > 0 and b > 0 and t_tg > 0:
            out.append(Point(Path(origin).stem, "pl", b, t_tg / tg, pp + tg // 2))
    return out


# --- CSV / JSON ----------------------------------------------------------------------------

def _bench_record(rec: dict, origin: str) -> Point | None:
    """A llama-bench CSV/JSON record -> a pp or tg point (pg records are skipped)."""
    try:
        p, g, d = int(rec.get("n_prompt") or 0), int(rec.get("n_gen") or 0), int(rec.get("n_depth") or 0)
        ns = float(rec.get("avg_ns") or 0)
        if ns <= 0 and rec.get("avg_ts"):
            ts = float(rec["avg_ts"])
            ns = (p or g) / ts * 1e9 if ts > 0 else 0.0
    except (TypeError, ValueError, OverflowError) as e:  # OverflowError: int(inf)
        raise _err(origin, "a record has non-numeric n_prompt/n_gen/n_depth/avg_ns/avg_ts", "numbers",
                   str(e)[:60]) from e
    if ns <= 0 or (p and g) or not (p or g):
        return None
    model = str(rec.get("model_filename") or rec.get("model_type") or Path(origin).stem)
    meta = tuple((k, str(rec[k])) for k in ("backends", "gpu_info", "cpu_info", "model_type", "model_size",
                                             "type_k") if rec.get(k) not in (None, ""))
    if p:
        return Point(model, "pp", p, ns / 1e9, d, meta)
    return Point(model, "tg", g, ns / 1e9, d, meta)  # seconds for g tokens; per token below


def _batched_record(rec: dict, origin: str) -> Point | None:
    try:
        pp, tg, pl, t_tg = int(rec["pp"]), int(rec["tg"]), int(rec["pl"]), float(rec["t_tg"])
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        raise _err(origin, "a batched-bench record lacks pp/tg/pl/t_tg", "numbers", str(e)[:60]) from e
    if tg <= 0 or pl <= 0 or t_tg <= 0:
        return None
    return Point(Path(origin).stem, "pl", pl, t_tg / tg, pp + tg // 2)


def parse_json(text: str, origin: str) -> list[Point]:
    """llama-bench `-o json` (array) / `-o jsonl`, or llama-batched-bench `--output-format jsonl`."""
    s = text.strip()
    try:
        recs = (jsonio.loads(s, allow_nonfinite=True) if s.startswith("[")  # records are checked field by field
                else [jsonio.loads(x, allow_nonfinite=True) for x in s.splitlines() if x.strip()])
    except (ValueError, RecursionError) as e:  # JSONDecodeError, 5000-digit ints, [[[[... nesting
        where = f"line {e.lineno}" if isinstance(e, json.JSONDecodeError) else str(e)[:60] or type(e).__name__
        raise _err(origin, "it is not valid JSON/JSONL", "llama-bench -o json output", where) from e
    if not isinstance(recs, list) or not all(isinstance(r, dict) for r in recs):
        raise _err(origin, "the JSON is not a list of records", "objects", type(recs).__name__)
    out = []
    for r in recs[:MAX_ROWS]:
        if "n_prompt" not in r and "pl" not in r:
            raise _err(origin, "a record has neither n_prompt (llama-bench) nor pl (batched-bench)",
                       "llama-bench or llama-batched-bench records", sorted(r)[:6])
        pt = _batched_record(r, origin) if "pl" in r else _bench_record(r, origin)
        if pt is not None:
            out.append(pt)
    return out


def parse_csv(text: str, origin: str) -> list[Point]:
    """llama-bench `-o csv`, or a plain CSV of n,seconds (header optional)."""
    if "\x00" in text:  # binary data; the csv module's answer to NULs differs between Python versions
        raise _err(origin, "it is not readable CSV", "text rows of n,seconds or llama-bench -o csv", "NUL bytes")
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))[: MAX_ROWS + 1]
    except csv.Error as e:  # a lone \r inside a field, a field over csv.field_size_limit()
        raise _err(origin, "it is not readable CSV", "n,seconds rows or llama-bench -o csv", str(e)[:60]) from e
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise _err(origin, "the file is empty", "CSV rows", 0)
    head = [c.strip().lower() for c in rows[0]]
    if "n_prompt" in head and ("avg_ns" in head or "avg_ts" in head):
        recs = [dict(zip(head, (c.strip() for c in r), strict=False)) for r in rows[1:]]
        return [p for p in (_bench_record(r, origin) for r in recs) if p is not None]
    body = rows[1:] if not _NUM.fullmatch(head[0]) else rows
    out = []
    for r in body:
        if len(r) < 2:
            raise _err(origin, "a CSV row has fewer than 2 columns", "n,seconds", ",".join(r)[:40])
        try:
            n, sec = int(r[0].strip()), float(r[1].strip())
        except ValueError as e:
            raise _err(origin, "a CSV row is not n,seconds", "an integer and a number", ",".join(r)[:40]) from e
        if n < 1 or not sec > 0:
            raise _err(origin, "a CSV row is out of range", "n >= 1 and seconds > 0", f"{n},{sec}")
        out.append(Point(Path(origin).stem, "pp", n, sec, 0))
    return out


def detect(text: str) -> str:
    """Which format a file holds: json, llama-bench-md, batched-bench-md or csv."""
    s = text.lstrip()
    if s[:1] in ("[", "{"):
        return "json"
    header, _ = _md_rows(text)
    if "t_tg s" in header:
        return "batched-bench-md"
    if "test" in header and "t/s" in header:
        return "llama-bench-md"
    return "csv"


PARSERS = {"json": parse_json, "llama-bench-md": parse_llama_bench_md, "batched-bench-md": parse_batched_bench_md,
           "csv": parse_csv}


# --- points -> curves ----------------------------------------------------------------------

def interpolate(points: dict[int, float]) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """t_v(1..max n) from measured {n: seconds} (n = 1 required), linear between measured n."""
    ns = sorted(points)
    out = []
    for n in range(1, ns[-1] + 1):
        if n in points:
            out.append(points[n])
            continue
        lo = max(m for m in ns if m < n)
        hi = min(m for m in ns if m > n)
        out.append(points[lo] + (points[hi] - points[lo]) * (n - lo) / (hi - lo))
    return tuple(out), tuple(ns)


def _tool(points: Sequence[Point], fmt: str) -> str:
    if any(p.kind == "pl" for p in points):
        return "llama-batched-bench"
    return "llama-bench" if fmt != "csv" or any(p.meta for p in points) else "csv"


def _run(model: str, pts: list[Point], tool: str, origin: str) -> ImportedRun | None:
    depth = pts[0].depth
    notes = [f"imported from '{origin}' ({tool}), KV depth {depth}"]
    curve = {p.n: p.seconds for p in pts if p.kind in ("pp", "pl") and 1 <= p.n <= MAX_N}
    tg = [p for p in pts if p.kind == "tg" and p.n >= 1]  # tg0 / pp0 time nothing
    if 1 not in curve and tg:
        curve[1] = min(p.seconds / p.n for p in tg)
        notes.append("t_v(1) from the tg test (decode step, sampling excluded by llama-bench)")
    if 1 not in curve:
        return None
    if tool == "llama-batched-bench":
        notes.append("proxy: t_v(n) taken from one decode step of n sequences (n KV caches, not one sequence "
                     "of n tokens); it overestimates attention at long contexts")
    lo, hi = constants.PROBE_MIN_STEP_S, constants.PROBE_MAX_STEP_S
    bad = [n for n, t in curve.items() if not lo <= t <= hi]
    if bad:  # 0 (an underflow) divides every ratio downstream; 1e308 overflows them to inf
        raise _err(origin, f"the time of n = {bad[0]} is not a plausible number of seconds",
                   f"{lo:g} to {hi:g} s for one forward", curve[bad[0]])
    verify, measured = interpolate(curve)
    if len(measured) < len(verify):
        notes.append(f"measured at n = {', '.join(map(str, measured))}; other n interpolated linearly")
    if len(verify) == 1:
        notes.append("only t_v(1) present: run 'llama-bench -p 1,2,3,4,5,6,7,8,9 -n 0' for the verify curve")
    meta = dict(pts[0].meta)
    size = meta.get("model_size")
    mtype = meta.get("model_type", model)[:200]  # "qwen2 7B Q4_K - Medium"; the regex below is quadratic in length
    q = re.search(r"\d+(?:\.\d+)?[BMK]\s+(.+)$", mtype)
    return ImportedRun(model=model, verify_s=verify, measured_n=measured, tool=tool, depth=depth,
                       backend=meta.get("backends") or meta.get("backend"),
                       device=meta.get("gpu_info") or meta.get("cpu_info"),
                       dtype=q.group(1) if q else meta.get("type_k"),
                       size_bytes=int(float(size)) if size and _NUM.fullmatch(size) else None, notes=tuple(notes))


def import_file(path: str | Path, *, context: int | None = None) -> list[ImportedRun]:
    """Read a benchmark file into one curve per model (at one KV depth each).

    Args:
        path: llama-bench (md/csv/json/jsonl), llama-batched-bench (table/jsonl) or n,seconds CSV.
        context: prefer points measured at this KV depth; else the largest depth in the file.

    Returns:
        One ImportedRun per model, largest model (by size, else t_v(1)) first.

    Raises:
        ProfileError: unreadable, too large, unknown format, or no usable point (no n = 1).
    """
    p = Path(path)
    raw = read_bounded(p, constants.PROBE_IMPORT_MAX_BYTES, "benchmark measurements")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _err(str(p), "it is not UTF-8 text", "text output", f"byte {e.start}") from e
    fmt = detect(text)
    points = PARSERS[fmt](text, str(p))
    if not points:
        raise _err(str(p), "no usable measurement", "pp/tg tests or n,seconds rows", f"format {fmt}, 0 points")
    tool = _tool(points, fmt)
    runs = []
    for model in dict.fromkeys(pt.model for pt in points):
        mine = [pt for pt in points if pt.model == model]
        depths = sorted({pt.depth for pt in mine})
        depth = context if context in depths else depths[-1]
        run = _run(model, [pt for pt in mine if pt.depth == depth], tool, str(p))
        if run is not None and len(depths) > 1:
            run = replace(run, notes=(*run.notes, f"depths {depths} in the file; used {depth}"))
        if run is not None:
            runs.append(run)
    if not runs:
        raise _err(str(p), "no curve has a one-token point", "a pp1 or tg test (n = 1)",
                   sorted({pt.n for pt in points})[:10])
    return sorted(runs, key=lambda r: (-(r.size_bytes or 0), -r.verify_s[0]))


def _device_kind(backend: str | None) -> str:
    """llama.cpp backend names (CUDA, Metal, Vulkan, SYCL, ROCm, CPU, BLAS) -> a device kind."""
    b = (backend or "").lower()
    for key, kind in (("cuda", "cuda"), ("rocm", "rocm"), ("hip", "rocm"), ("metal", "metal"),
                      ("vulkan", "vulkan"), ("sycl", "sycl"), ("cpu", "cpu"), ("blas", "cpu")):
        if key in b:
            return kind
    return "unknown"


def profile_from_import(target: ImportedRun, draft: ImportedRun | None, *, target_id: str | None = None,
                        draft_id: str | None = None, versions: dict[str, str] | None = None,
                        timestamp: str = "") -> Profile:
    """The machine profile of imported curves (overhead unknown: 0, said in the notes)."""
    tc = target.curve(target_id)
    dc = draft.curve(draft_id) if draft is not None else None
    notes = ("per-round overhead (sampling, comparison, rollback) is not in the imported output: counted as 0",)
    return Profile(device=_device_kind(target.backend), device_name=target.device or "unknown (not in the import)",
                   backend=f"llama.cpp ({target.backend or '?'}) via {target.tool}" if target.tool != "csv"
                   else "imported CSV", dtype=target.dtype or "unknown", context=target.depth, target=tc,
                   draft=dc, overhead_s=0.0, acceptance=None, diagnosis=diagnose(tc, dc, 0.0),
                   versions=dict(versions or {}), timestamp=timestamp, notes=notes)
