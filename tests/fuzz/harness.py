"""The fuzz harness shared by tests/test_fuzz_*.py.

Every reader of untrusted input is driven here the same way: take a valid file, mutate it
(hypothesis strategies below: byte flips, truncation, extension, u32/u64 fields set to
hostile values, JSON fields replaced by wrong types, huge or non-finite numbers, deep
nesting), run it through the reader function or the real CLI entry (`planner.cli.main`,
in-process) and assert the contract of docs/security.md:

- only `PlannerError` subclasses escape a reader; the CLI exits 0/1 (the mutation stayed
  valid) or 2 with exactly one stderr line "error: ..." that names the file;
- each input is answered within a time bound (a SIGALRM guard turns a hang into a failure);
- a reader's peak Python allocation (tracemalloc) stays under a bound tied to the file size,
  so nothing is allocated in proportion to a length the file merely claims.

Example counts: fast by default (CI), or SPEC_PLANNER_FUZZ_EXAMPLES per reader for a long run
(`fuzz_examples` below). Default runs are derandomised so CI is reproducible; long runs draw fresh
inputs each time. The tests that prove each guard can fail are in tests/test_fuzz_harness.py.
"""

from __future__ import annotations

import contextlib
import copy
import io
import itertools
import json
import math
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from planner.cli import main
from planner.core import constants
from planner.core.errors import PlannerError

ROOT = Path(__file__).parent.parent.parent  # the repository
FIXTURES = ROOT / "tests" / "fixtures"
CORPUS = FIXTURES / "corpus"

Path_ = tuple[Any, ...]  # a path into a JSON document: keys and list indexes

HANG_S = 10.0  # an input still running after this is a hang (SIGALRM)
READER_TIME_S = 2.0  # CPU seconds: a reader answers any input of a few hundred KB within this
CLI_TIME_S = 5.0  # CPU seconds of one in-process CLI run (imports are warm after the first); CPU, not wall
# clock, so a loaded host does not fail it (the wall-clock hang guard above is twice as long)
READER_MEMORY_BYTES = 48 * 1024**2  # tracemalloc peak allowed on top of 64 x the input's size
EXTRA_ADDRESS_SPACE = 3 * 1024**3  # address space one input may add before it is a MemoryError


# --- example counts ---------------------------------------------------------------------------


def fuzz_examples() -> int | None:
    """SPEC_PLANNER_FUZZ_EXAMPLES: generated inputs per reader in tests/test_fuzz_*.py (None: the fast default).

    Raises:
        ValueError: the variable is set but is not a positive integer (a typo must not shrink a long run).
    """
    raw = (os.environ.get("SPEC_PLANNER_FUZZ_EXAMPLES") or "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"SPEC_PLANNER_FUZZ_EXAMPLES must be a positive integer (got '{raw}').")
    return int(raw)


def fuzz_settings(default: int, *, cli: bool = False) -> settings:
    """Hypothesis settings: `default` examples (derandomised), or the long-run count from the env.

    CLI-level tests run a tenth of the long-run count (each example costs a whole command).
    """
    n = fuzz_examples()
    long_run = n is not None
    count = default if n is None else max(default, n // 10 if cli else n)
    return settings(max_examples=count, deadline=None, derandomize=not long_run, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


# --- guards -----------------------------------------------------------------------------------


class Hang(BaseException):  # BaseException: a reader's `except Exception` cannot swallow it
    """Raised by the SIGALRM guard when one input runs past HANG_S."""


def address_space_bytes() -> int | None:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def hang_guard(seconds: float = HANG_S, *, extra_memory: int = EXTRA_ADDRESS_SPACE) -> Iterator[None]:
    """SIGALRM after `seconds`; on Linux also cap the address space so a runaway allocation is a
    MemoryError in this test, not the OOM killer taking the whole run."""
    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no answer after {seconds} s (hang)")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    now = address_space_bytes()  # None off Linux: no cap (macOS does not enforce RLIMIT_AS)
    limits = resource.getrlimit(resource.RLIMIT_AS)
    capped = now is not None and limits[0] == resource.RLIM_INFINITY
    if capped:
        cap = now + extra_memory
        resource.setrlimit(resource.RLIMIT_AS, (cap if limits[1] == resource.RLIM_INFINITY else min(cap, limits[1]),
                                                limits[1]))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if capped:
            resource.setrlimit(resource.RLIMIT_AS, limits)


def _names(files: Sequence[Path | str]) -> list[str]:
    out = []
    for f in files:
        out += [str(f), Path(f).name]
    return out


def check_error_message(msg: str, files: Sequence[Path | str]) -> None:
    """One line, names one of `files` (full path or file name)."""
    assert msg.strip(), "empty error message"
    assert "\n" not in msg, f"error message spans lines: {msg!r}"
    assert any(n in msg for n in _names(files)), f"error does not name {[str(f) for f in files]}: {msg}"


@dataclass
class ReaderRun:
    result: Any
    error: PlannerError | None
    elapsed_s: float
    peak_bytes: int


def run_reader(fn: Callable[[], Any], files: Sequence[Path | str], *, input_bytes: int = 0,
               memory_bytes: int | None = None, trace: bool = True) -> ReaderRun:
    """Call a reader on a hostile input: PlannerError or a result, in bounded time and memory.

    Any other exception propagates (the test fails and hypothesis shrinks the input).
    `trace=False` skips tracemalloc (the address-space cap of `hang_guard` still applies).
    """
    limit = memory_bytes if memory_bytes is not None else READER_MEMORY_BYTES + 64 * input_bytes
    if trace:
        tracemalloc.start()
    t0, c0 = time.perf_counter(), time.thread_time()
    error = result = None
    try:
        with hang_guard():
            try:
                result = fn()
            except PlannerError as e:
                error = e
    finally:
        elapsed, cpu = time.perf_counter() - t0, time.thread_time() - c0
        peak = 0
        if trace:
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
    assert cpu < READER_TIME_S, f"reader took {cpu:.2f} CPU s ({elapsed:.2f} s wall)"
    assert peak < limit, f"reader allocated {peak} B at peak (limit {limit} B)"
    if error is not None:
        check_error_message(str(error), files)
    return ReaderRun(result, error, elapsed, peak)


@dataclass
class CliRun:
    code: int
    out: str
    err: str
    elapsed_s: float


def _strict_json(text: str) -> Any:
    def no_constant(tok: str) -> Any:
        raise AssertionError(f"--json output holds {tok}, which is not JSON")

    return json.loads(text, parse_constant=no_constant)


def run_cli(args: Sequence[str], files: Sequence[Path | str], *, json_out: bool = True) -> CliRun:
    """`planner ARGS` in-process: exit 0/1 with (JSON) output, or 2 with one line naming a file.

    A traceback (any exception other than SystemExit out of `main`) fails the test.
    """
    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    t0, c0 = time.perf_counter(), time.thread_time()
    with hang_guard(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code
    elapsed, cpu = time.perf_counter() - t0, time.thread_time() - c0
    o, e_ = out.getvalue(), err.getvalue()
    assert cpu < CLI_TIME_S, f"CLI took {cpu:.2f} CPU s ({elapsed:.2f} s wall)"
    assert code in (0, 1, 2), f"exit code {code!r}; stderr: {e_}"
    assert "Traceback" not in e_, e_
    assert UNEXPECTED not in e_, e_  # the CLI's last line of defence caught a bug: a failure here
    if code == 2:
        lines = e_.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), f"expected one 'error: ' line, got {e_!r}"
        assert o == "", f"exit 2 but stdout holds {o[:200]!r}"
        check_error_message(lines[0], files)
    else:
        # a warning wraps at the terminal's width; its continuation lines are indented (commands/_common.warn)
        assert all(line.startswith(("warning: ", "    ")) for line in e_.splitlines()), e_
        if json_out:
            _strict_json(o)
    return CliRun(code, o, e_, elapsed)


def _scratch_base() -> str | None:
    # tmpfs when there is one: thousands of examples each create and delete a directory.
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    """A fresh directory per example (unique paths: no reader cache can answer from a previous input)."""
    d = Path(tempfile.mkdtemp(prefix="spec-planner-fuzz-", dir=_scratch_base()))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def scratch_file(name: str, blob: bytes) -> Iterator[Path]:
    """`blob` written as `name` in a fresh scratch directory (the shape every fuzz test feeds a reader)."""
    with scratch() as d:
        f = d / name
        f.write_bytes(blob)
        yield f


# --- the CLI in a subprocess (for settings read at import) ------------------------------------

RUNNER = """
import contextlib, io, json, sys
from planner.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    o, e = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        try:
            main(argv)
        except SystemExit as x:
            code = x.code
        except BaseException as x:  # a traceback: reported, the test fails on it
            import traceback
            e.write("TRACEBACK " + traceback.format_exc())
            code = -1
    if e.getvalue().startswith("error: Unexpected "):  # the CLI's last line of defence caught a bug
        code = -1
    out.append({"code": code, "out": o.getvalue(), "err": e.getvalue()})
print(json.dumps(out))
"""
UNEXPECTED = "error: Unexpected "  # how planner.cli.main words an exception that is not a PlannerError


def run_planner(commands: list[list[str]], env: dict[str, str], timeout: float = 120) -> list[dict]:
    """`planner ARGV` for each of `commands` in ONE fresh subprocess (env read at import, e.g. HF_ENDPOINT).

    HF_* and SPEC_PLANNER* variables of this process are dropped, then `env` is applied; returns one
    {"code", "out", "err"} dict per command (a traceback is reported as code -1).
    """
    full = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "SPEC_PLANNER"))}
    full.update({"HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_TELEMETRY": "1", **env})
    r = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(commands)], capture_output=True, text=True,
                       env=full, timeout=timeout, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


# --- hostile values ---------------------------------------------------------------------------

INTERESTING_INTS = (0, 1, -1, 2, 3, 7, 8, 31, 32, 33, 127, 128, 255, 256, 4095, 4096, 65535, 65536, 10**6,
                    2**24 - 1, 2**24, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**40, 2**53 + 1, 2**62, 2**63 - 1, 2**63, 2**64 - 1,
                    2**64, 10**30, -(2**31), -(2**63), -(10**30))


# Just under (and at) every cap planner.core.constants puts on a count or size: a value the reader accepts
# but must not turn into a loop or an allocation of that many items.
BIG_INTS = tuple(sorted({constants.MAX_VOCAB - 1, constants.MAX_VOCAB, constants.MAX_LAYERS, constants.MAX_HIDDEN,
                         constants.MAX_CONTEXT - 1, constants.MAX_SHARDS, constants.GGUF_MAX_ARRAY_LEN - 1,
                         constants.GGUF_MAX_TENSORS - 1, constants.GGUF_MAX_KV, 10**6, 2**31, 2**40, 2**63}))


def sweep_values() -> tuple[Any, ...]:
    """Values each numeric field is set to, one field at a time (more of them in a long run)."""
    if fuzz_examples() is None:
        return (-1, constants.MAX_VOCAB - 1, 2**40)
    return (-1, 0, *BIG_INTS, 2**64, 1e300, -0.5, math.nan)


def extreme_variants(doc: Any, values: Sequence[Any] | None = None) -> Iterator[tuple[Path_, Any, Any]]:
    """(path, value, copy of doc with that one number replaced) for every number in doc and value."""
    for path in list(numeric_leaves(doc)):
        for value in values if values is not None else sweep_values():
            out = copy.deepcopy(doc)
            _get(out, path[:-1])[path[-1]] = value
            yield path, value, out


WRONG_TYPES = (None, True, 0, -1, 2**40, 1.5, math.nan, "", "x", [], [1], {}, {"a": 1})


def field_variants(doc: Any, values: Sequence[Any] = WRONG_TYPES, *, max_depth: int = 3
                   ) -> Iterator[tuple[Path_, Any, Any]]:
    """(path, value, copy of doc) with one field (down to max_depth) set to a wrong type, or deleted.

    The value `DELETE` marks a removed key.
    """
    paths: list[Path_] = []

    def walk(node: Any, path: Path_) -> None:
        if path:
            paths.append(path)
        if len(path) < max_depth:
            for k in _children(node):
                walk(node[k], (*path, k))

    walk(doc, ())
    for path in paths:
        for value in (*values, DELETE):
            out = copy.deepcopy(doc)
            parent = _get(out, path[:-1])
            if value is DELETE:
                if not isinstance(parent, dict):
                    continue
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
            yield path, value, out


DELETE = object()


@dataclass(frozen=True)
class Raw:
    """JSON text spliced in verbatim: literals json.dumps will not write (NaN, 10**5000, deep nesting)."""

    text: str


RAW_TEXTS = (Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e999"), Raw("-1e999"), Raw("-0"),
             Raw("1" + "0" * 5000), Raw("[" * 100_000 + "]" * 100_000),
             Raw('{"a":' * 20_000 + "1" + "}" * 20_000), Raw("4.9e-324"), Raw('"\\ud800"'), Raw('"\\u0000"'))
HOSTILE_STRINGS = ("", " ", "\x00", "\ud800", "../../etc/passwd", "A" * 70_000, "ü" * 300, "{{ 7*7 }}",
                   "model.safetensors", "F32", "BF16", "llama", "-1", "1e9", "\n\nerror: injected")


def _finite_float() -> st.SearchStrategy[float]:
    return st.floats(allow_nan=False, allow_infinity=False, width=64)


def _scalars() -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), st.booleans(), st.sampled_from(INTERESTING_INTS), st.integers(),
                     _finite_float(), st.sampled_from([math.nan, math.inf, -math.inf]),
                     st.sampled_from(HOSTILE_STRINGS), st.text(max_size=12), st.sampled_from(RAW_TEXTS))


SCALARS = _scalars()
# Anything a JSON field could be set to: wrong types, extremes, non-finite, nested, huge.
HOSTILE = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=4),
    st.dictionaries(st.sampled_from(["", "a", "dtype", "shape", "model_type", "type", "id"]), SCALARS, max_size=3),
    st.sampled_from([[[[[[[]]]]]], {}, []]),
    st.integers(0, 3).map(lambda k: list(range(10 ** k))),
)


def hostile(draw: st.DrawFn) -> Any:
    """A fresh hostile value (deep-copied: sampled containers are shared between examples)."""
    return copy.deepcopy(draw(HOSTILE))


def neighbours(v: int | float) -> list[Any]:
    """Plausible-but-wrong values next to a real number (off by one, sign, scale, type)."""
    if isinstance(v, bool):
        return [not v, 0, 1, "true", None]
    iv = int(v) if isinstance(v, int) or (isinstance(v, float) and math.isfinite(v)) else 0
    return [iv - 1, iv + 1, -iv, 0, iv * 2, iv * 1024, iv * 2**20, iv // 2, float(iv) + 0.5, str(iv), [iv],
            2**63, 2**64, math.nan, Raw("NaN"), -1]


def pick(draw: st.DrawFn, options: Sequence[Any]) -> Any:
    """One of `options` (cheaper than building a sampled_from strategy per draw)."""
    return options[draw(st.integers(0, len(options) - 1))]


# --- JSON mutation ----------------------------------------------------------------------------

def _children(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return list(node)
    if isinstance(node, list):
        return list(range(len(node)))
    return []


def numeric_leaves(obj: Any, path: Path_ = ()) -> Iterator[Path_]:
    """Paths to every number (bools excluded) in a JSON document."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from numeric_leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from numeric_leaves(v, (*path, i))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path


def _get(obj: Any, path: Path_) -> Any:
    for k in path:
        obj = obj[k]
    return obj


@st.composite
def json_path(draw: st.DrawFn, obj: Any, max_depth: int = 8) -> Path_:
    """A path to a node, descending with probability 3/4 at each level (deep fields are reached)."""
    path: list[Any] = []
    node = obj
    for _ in range(max_depth):
        kids = _children(node)
        if not kids or (path and draw(st.integers(0, 3)) == 0):
            break
        k = kids[draw(st.integers(0, len(kids) - 1))]
        path.append(k)
        node = node[k]
    return tuple(path)


MUTATION_OPS = st.sampled_from(["replace", "replace", "neighbour", "leaf", "leaf", "delete", "add", "wrap",
                                "duplicate"])
SHORT_TEXT = st.text(max_size=8)


@st.composite
def mutate_json(draw: st.DrawFn, obj: Any, *, max_ops: int = 3) -> Any:
    """A deep copy of `obj` with 1..max_ops structural mutations."""
    obj = copy.deepcopy(obj)
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(MUTATION_OPS)
        if op == "leaf":  # any number in the document, uniformly: sizes, ids, offsets, counts
            leaves = list(itertools.islice(numeric_leaves(obj), 20_000))
            if leaves:
                path = pick(draw, leaves)
                parent = _get(obj, path[:-1])
                pool = BIG_INTS if draw(st.booleans()) else [*neighbours(parent[path[-1]]), *INTERESTING_INTS]
                parent[path[-1]] = pick(draw, pool)
            continue
        path = draw(json_path(obj))
        if not path:
            if op in ("replace", "wrap"):
                obj = hostile(draw) if op == "replace" else [obj]
            elif isinstance(obj, dict):
                obj[pick(draw, ["__metadata__", "", "x" * 300, "model_type"])] = hostile(draw)
            continue
        parent, key = _get(obj, path[:-1]), path[-1]
        cur = parent[key]
        if op == "neighbour" and isinstance(cur, (int, float)):
            parent[key] = pick(draw, neighbours(cur))
        elif op == "delete":
            del parent[key]
        elif op == "add" and isinstance(cur, dict):
            cur[draw(SHORT_TEXT)] = hostile(draw)
        elif op == "add" and isinstance(cur, list):
            cur.insert(draw(st.integers(0, len(cur))), hostile(draw))
        elif op == "wrap":
            parent[key] = [cur]
        elif op == "duplicate" and isinstance(parent, dict):
            parent[f"{key}_copy" if isinstance(key, str) else str(key)] = copy.deepcopy(cur)
        elif op == "duplicate" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(cur))
        else:
            parent[key] = hostile(draw)
    return obj


def dump_json(obj: Any) -> bytes:
    """json.dumps with NaN/Infinity allowed and Raw(...) literals spliced in."""
    raws: list[str] = []

    def default(o: Any) -> Any:
        if isinstance(o, Raw):
            raws.append(o.text)
            return f"\x00RAW{len(raws) - 1}\x00"
        raise TypeError(type(o).__name__)

    text = json.dumps(obj, allow_nan=True, default=default)
    for i, r in enumerate(raws):
        text = text.replace(json.dumps(f"\x00RAW{i}\x00"), r, 1)
    return text.encode("utf-8", "surrogatepass")


# --- byte mutation ----------------------------------------------------------------------------

U64_VALUES = (0, 1, 7, 8, 255, 4096, 2**31, 2**32 - 1, 2**32, 2**40, 2**62, 2**63 - 1, 2**63, 2**64 - 1)
U32_VALUES = (0, 1, 2, 3, 4, 8, 9, 12, 13, 30, 39, 255, 2**16, 2**31, 2**32 - 1)


BYTE_OPS = st.sampled_from(["flip", "set", "u64", "u32", "truncate", "insert", "delete", "extend", "duplicate"])


@st.composite
def mutate_bytes(draw: st.DrawFn, data: bytes, *, hot: int | None = None, max_ops: int = 3) -> bytes:
    """1..max_ops byte-level mutations; positions favour the first `hot` bytes (the header)."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, max_ops))):
        n = len(buf)
        top = max(min(hot or n, n), 1)
        pos = draw(st.integers(0, top - 1))
        op = draw(BYTE_OPS)
        if not n and op not in ("insert", "extend"):
            continue
        if op == "flip":
            buf[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "set":
            buf[pos] = pick(draw, [0, 1, 0x7F, 0x80, 0xFF, ord("{"), ord('"'), ord("[")])
        elif op in ("u64", "u32"):
            fmt, vals = ("<Q", U64_VALUES) if op == "u64" else ("<I", U32_VALUES)
            size = struct.calcsize(fmt)
            if n >= size:
                pos = min(pos, n - size)
                buf[pos:pos + size] = struct.pack(fmt, pick(draw, vals))
        elif op == "truncate":
            del buf[draw(st.integers(0, n)):]
        elif op == "insert":
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del buf[pos:pos + draw(st.integers(1, 64))]
        elif op == "extend":
            buf += pick(draw, [b"\x00" * 64, b"\xff" * 9, b"GGUF", b"{}", b"\n" * 3])
        else:
            end = min(n, pos + draw(st.integers(1, 64)))
            buf[end:end] = buf[pos:end]
    return bytes(buf)
