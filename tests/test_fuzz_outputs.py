"""Fuzzing beyond the parsers: output destinations, the Hub transport and cache layout, CLI argument values.

Fresh hostile inputs of the classes of issue #19 (not the files of its reproductions):

- destinations: regular files, missing folders, symlinks (to files, to nothing, in loops), folders,
  FIFOs, /dev/null, names with control characters or over 255 bytes, the run's own inputs; after each
  write the invariants hold: a device is still a device, a symlink still a symlink, an input unchanged,
  no temp file left, and the file holds the old bytes or the new ones, whole;
- the transport: a streamed body with hostile `Content-Encoding`, sizes and chunking through
  `hub_http.read_body` (never more than the cap, a SourceError otherwise), and hostile commits,
  revisions and file names through `hub_cache.store` (nothing outside the cache);
- argument values: digits by the thousand, inf/nan, Unicode digits, signs and separators for every
  numeric option of every command, each through the real CLI (one line, exit 2, or an answer).
"""

from __future__ import annotations

import gzip
import os
import stat
import zlib
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from planner.core import atomic
from planner.core.errors import SourceError, UsageError
from planner.sources import hub_cache
from planner.sources.hub_http import Deadline, read_body

from .fuzz.harness import fuzz_settings, run_cli, scratch

# --- destinations ----------------------------------------------------------------------------------

KINDS = ("missing", "regular", "nested-missing", "symlink-file", "symlink-dangling", "symlink-loop", "dir",
         "fifo", "devnull", "long-name", "control-name", "input")


@st.composite
def destinations(draw) -> tuple[str, str]:
    return draw(st.sampled_from(KINDS)), draw(st.text(st.characters(codec="utf-8"), min_size=0, max_size=300))


def _make(d: Path, kind: str) -> tuple[Path, Path | None]:
    """The destination path for `kind` and, when there is one, the file that must stay as it was."""
    victim = d / "victim.txt"
    victim.write_text("OLD")
    if kind == "missing":
        return d / "new.xml", None
    if kind == "regular":
        return victim, None
    if kind == "nested-missing":
        return d / "a" / "b" / "new.xml", None
    if kind == "symlink-file":
        link = d / "link.xml"
        link.symlink_to(victim)
        return link, None
    if kind == "symlink-dangling":
        link = d / "dangling.xml"
        link.symlink_to(d / "target-not-there.xml")
        return link, None
    if kind == "symlink-loop":
        link = d / "loop.xml"
        link.symlink_to(link)
        return link, None
    if kind == "dir":
        (d / "adir").mkdir()
        return d / "adir", None
    if kind == "fifo":
        os.mkfifo(d / "fifo")
        return d / "fifo", None
    if kind == "devnull":  # a private node like /dev/null: a regression must not replace the system's
        node = d / "null"
        try:
            os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except OSError:
            return d / "no-mknod-here.xml", None
        return node, None
    if kind == "long-name":
        return d / ("n" * 256), None
    if kind == "control-name":
        return d / "x\n\x1b[2J\x01.xml", None
    atomic.note_input(victim)  # "input": a file this run read
    return victim, victim


@given(dest=destinations())
@fuzz_settings(60)
def test_fuzz_output_destinations(dest):
    kind, text = dest
    with scratch() as d:
        atomic.forget_inputs()
        path, keep = _make(d, kind)
        before = {p: (p.lstat().st_mode, p.is_symlink()) for p in d.rglob("*")}
        try:
            atomic.atomic_write(path, text)
            wrote = True
        except UsageError as e:
            assert "\n" not in str(e) and str(e).startswith("Cannot write")
            wrote = False
        atomic.forget_inputs()
        for p, (mode, link) in before.items():
            assert p.is_symlink() == link, p  # no symlink replaced by a file
            if stat.S_ISFIFO(mode) or stat.S_ISDIR(mode) or stat.S_ISCHR(mode):
                assert p.lstat().st_mode == mode, p  # no device, FIFO or folder replaced
        if keep is not None:
            assert not wrote and keep.read_text() == "OLD"
        assert not [p for p in d.rglob("*") if p.name.endswith(".tmp")]
        if wrote and kind not in ("devnull", "fifo"):
            got = Path(os.path.realpath(path)).read_bytes()
            assert got == text.encode("utf-8", "backslashreplace")
        elif kind in ("regular", "symlink-file"):
            assert (d / "victim.txt").read_text() == "OLD"


# --- the Hub transport and the cache layout -------------------------------------------------------


class FakeResponse:
    """What read_body reads from an httpx streamed response: headers and raw chunks."""

    def __init__(self, headers: dict[str, str], chunks: list[bytes]) -> None:
        self.headers, self.chunks = headers, chunks

    def iter_raw(self, size: int):
        yield from self.chunks


@st.composite
def bodies(draw) -> tuple[dict[str, str], list[bytes], int, bool]:
    cap = draw(st.sampled_from([1, 100, 4096, 100_000]))
    raw = draw(st.binary(max_size=2048)) * draw(st.sampled_from([1, 10, 200]))
    enc = draw(st.sampled_from(["", "identity", "gzip", "deflate", "br", "x-gzip", "GZIP", "zstd, gzip"]))
    how = draw(st.sampled_from(["encode", "garbage", "truncate"]))
    data = raw
    if enc.lower() in ("gzip", "x-gzip"):
        data = gzip.compress(raw) if how != "garbage" else b"\x1f\x8b" + raw
        data = data[: len(data) // 2] if how == "truncate" else data
    elif enc == "deflate":
        data = zlib.compress(raw) if how != "garbage" else raw
    step = draw(st.integers(1, 5000))
    chunks = [data[i:i + step] for i in range(0, len(data), step)] or [b""]
    return {"Content-Encoding": enc} if enc else {}, chunks, cap, draw(st.booleans())


@given(case=bodies())
@fuzz_settings(300)
def test_fuzz_hub_body_reader(case):
    headers, chunks, cap, truncate = case
    try:
        out = read_body(FakeResponse(headers, chunks), cap=cap, deadline=Deadline(30), origin="acme/x/config.json",
                        truncate=truncate)
    except SourceError as e:
        assert "\n" not in str(e) and "acme/x/config.json" in str(e)
        return
    assert len(out) <= cap


HOSTILE_NAMES = st.one_of(st.sampled_from(["../../../../etc/x", "..", ".", "/abs", "a/../../b", "refs/../../x",
                                           "0" * 40, "g" * 40, "A" * 40, "\x00", "main\n", "v1.0", "refs/pr/1"]),
                          st.text(max_size=60))


@given(commit=HOSTILE_NAMES, revision=st.one_of(st.none(), HOSTILE_NAMES), filename=HOSTILE_NAMES)
@fuzz_settings(200)
def test_fuzz_hub_cache_store(commit, revision, filename):
    with scratch() as d:
        cache = d / "cache"
        cache.mkdir()
        outside = d / "outside"
        outside.mkdir()
        old = hub_cache.cache_root
        hub_cache.cache_root = lambda: cache  # type: ignore[assignment]
        try:
            try:
                p = hub_cache.store("acme/x", filename, commit, revision, b"{}")
            except (SourceError, OSError, ValueError) as e:
                assert not isinstance(e, SourceError) or "\n" not in str(e)
                p = None
        finally:
            hub_cache.cache_root = old  # type: ignore[assignment]
        assert not list(outside.iterdir())
        real = str(cache.resolve())
        for f in d.rglob("*"):
            assert str(f.resolve()).startswith((real, str(outside.resolve()))), f
        if p is not None:
            assert str(p.resolve()).startswith(real) and p.read_bytes() == b"{}"


# --- CLI argument values ----------------------------------------------------------------------------

NUMERIC_OPTIONS = [
    (["memory", "llama-3.1-8b-instruct"], ["--context", "--batch", "--group-size", "--overhead", "--gpu-memory"]),
    (["fit", "llama-3.1-8b-instruct"], ["--gpu-memory", "--gpus", "--tp", "--pp", "--utilization", "--context",
                                        "--draft-device"]),
    (["recommend", "llama-3.1-8b-instruct"], ["--max-k", "--temperature", "--acceptance", "--k", "--batch",
                                              "--utilization"]),
    (["probe", "llama-3.1-8b-instruct"], ["--seed", "--budget-s", "--max-k", "--repeats", "--threads",
                                          "--context"]),
]
HOSTILE_VALUES = st.one_of(
    st.sampled_from(["9" * 5000, "-" + "9" * 5000, "1e400", "-1e400", "inf", "nan", "-0", "0", "-1", "1e-400",
                     "\u00b2", "\u0663", "\uff11\uff12", "1_000", "0x10", " 8 ", "", "8k" * 100, "1" * 19,
                     "18446744073709551616", "9" * 300 + "GiB", "1e400GiB", "24 GiB", "∞"]),
    st.text(max_size=12))


@given(which=st.integers(0, len(NUMERIC_OPTIONS) - 1), index=st.integers(0, 10), value=HOSTILE_VALUES)
@fuzz_settings(60, cli=True)
def test_fuzz_cli_numbers(which, index, value):
    base, options = NUMERIC_OPTIONS[which]
    option = options[index % len(options)]
    argv = [*base, f"{option}={value}", "--json"]
    if base[0] == "probe":  # validation only: a missing --import file ends it before anything is measured
        argv += ["--import", "no-such-bench.csv"]
    run_cli(argv, ["Cannot", "Invalid value", "No such option", "no-such-bench.csv", option, value[:30]])
