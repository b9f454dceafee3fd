"""Write output files atomically, never over an input, never replacing what is not a plain file.

Why: reports, profiles and JUnit files are written by CI jobs that may be killed, often as root:

- a half-written file must never replace a good one: a temp file in the destination's folder,
  `fsync`, then `os.replace`, so the old file survives an interrupted write and concurrent
  writers leave one whole file (the last one), never a torn one;
- a destination that is not a regular file is never replaced: `/dev/null`, a terminal and a FIFO
  with a reader are written through (like a shell redirection), and `/dev/stdout` appends to
  whatever stdout is; a block device, socket or a FIFO nobody reads is refused;
- a symlink is followed, not replaced: the file it points to is replaced atomically;
- nothing the command read is overwritten: the caller's `inputs` (policy, profiles, model folders)
  and every file the readers noted with `note_input` (each JSON file read, the policy, GGUF files).

Every failure (a symlink loop, a component over 255 bytes, a read-only folder) is one UsageError.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .errors import UsageError

_READ: set[str] = set()  # real paths of the files this run has read (note_input)
# /dev/stdout -> /proc/self/fd/1 -> a pipe, a tty or the shell's file (/dev/shm/x is a plain file: not here)
_PSEUDO_ROOTS = ("/proc/", "/dev/fd/", "/dev/stdout", "/dev/stderr", "/dev/stdin")


def note_input(path: str | Path) -> None:
    """Record that this run read `path`, so no output of the run replaces it."""
    with contextlib.suppress(OSError, ValueError):
        _READ.add(os.path.realpath(path))


def forget_inputs() -> None:
    """Start a new run (the CLI calls this first; tests run many commands in one process)."""
    _READ.clear()


def atomic_write(path: str | Path, data: str | bytes, *, inputs: Iterable[str | Path] = ()) -> Path:
    """Write `data` to `path`: atomically for a file, through for a device or FIFO, never over an input.

    An input may be a directory (a model folder): then no file already inside it is overwritten.
    Text is encoded as UTF-8; characters that cannot be (lone surrogates from a Latin-1 folder name)
    are written as backslash escapes rather than failing the write.

    Raises:
        UsageError: `path` is one of `inputs`, a file this run read, an existing file inside an input
            directory, a directory, a block device or socket, a FIFO without a reader, or cannot be
            written (symlink loop, name too long, permissions, disk full).
    """
    p = Path(path)
    raw = data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data
    fd = _std_fd(p)
    if fd is not None:
        return _write_fd(p, fd, raw)
    try:
        st = _stat(p)
        if st is not None and not stat.S_ISREG(st.st_mode):
            return _write_through(p, st, raw)
        if st is not None and _via_pseudo(p):  # /dev/stdout redirected to a file: that file is the shell's
            return _write_through(p, st, raw)
        real = Path(os.path.realpath(p))
        _refuse_inputs(p, real, inputs)
        _replace(real, raw)
    except OSError as e:
        raise UsageError(f"Cannot write '{p}': {e.strerror or e}.") from e
    return p


def _stat(p: Path) -> os.stat_result | None:
    """The destination as it would be opened (symlinks followed), None when there is nothing there yet.

    Raises OSError for a symlink loop (ELOOP) or a name too long (ENAMETOOLONG): no write is tried.
    """
    try:
        return os.stat(p)
    except FileNotFoundError:
        return None


def _std_fd(p: Path) -> int | None:
    """The descriptor `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` or `/proc/self/fd/N` names, else None.

    Why write to the descriptor itself: opening the path makes a second file description with its own
    offset, so what the command prints afterwards on stdout would overwrite the document.
    """
    m = re.fullmatch(r"/dev/(stdout|stderr)|/dev/fd/(\d{1,4})|/proc/self/fd/(\d{1,4})", str(p))
    if m is None:
        return None
    return {"stdout": 1, "stderr": 2}[m.group(1)] if m.group(1) else int(m.group(2) or m.group(3))


def _write_fd(p: Path, fd: int, raw: bytes) -> Path:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()  # what was printed before comes before the document
    try:
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view):]
    except OSError as e:
        raise UsageError(f"Cannot write '{p}': {e.strerror or e}.") from e
    return p


def _via_pseudo(p: Path) -> bool:
    """True when `p` is, or its symlinks pass through, /proc or /dev/fd (/dev/stdout -> /proc/self/fd/1 -> a file)."""
    hop = os.path.abspath(p)
    for _ in range(40):  # the kernel's own limit on symlink hops
        if hop.startswith(_PSEUDO_ROOTS):
            return True
        if not os.path.islink(hop):
            return False
        hop = os.path.join(os.path.dirname(hop), os.readlink(hop))
    return False


def _refuse_inputs(p: Path, real: Path, inputs: Iterable[str | Path]) -> None:
    for i in inputs:
        try:
            src = Path(os.path.realpath(i))
            inside = src.is_dir() and real.exists() and real.is_relative_to(src)
        except (OSError, ValueError):
            continue
        if src == real or inside:
            where = "also an input" if src == real else f"a file of the input directory '{i}'"
            raise UsageError(f"Cannot write '{p}': it is {where} of this command. Choose another --out.")
    if str(real) in _READ:
        raise UsageError(f"Cannot write '{p}': it is also an input of this command (this run read it). Choose "
                         f"another --out.")


def _write_through(p: Path, st: os.stat_result, raw: bytes) -> Path:
    """Write into an existing non-regular destination (or /dev/stdout's file) without replacing it."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise UsageError(f"Cannot write '{p}': it is a directory (expected a file path).")
    if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        raise UsageError(f"Cannot write '{p}': it is a block device or socket, not a file (refused).")
    flags = os.O_WRONLY | os.O_NOCTTY | (os.O_NONBLOCK if stat.S_ISFIFO(mode) else 0)
    flags |= os.O_APPEND if stat.S_ISREG(mode) else 0  # stdout's file: after what was printed, never over it
    try:
        fd = os.open(p, flags)  # no O_CREAT, no O_TRUNC: the node stays what it is
    except OSError as e:
        if e.errno == errno.ENXIO:  # a FIFO with no reader would block forever
            raise UsageError(f"Cannot write '{p}': it is a FIFO with no reader (refused, it would block).") from e
        raise
    try:
        if stat.S_ISFIFO(mode):
            os.set_blocking(fd, True)
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return p


def _replace(real: Path, raw: bytes) -> None:
    """Temp file beside `real`, fsync, rename over it: readers see the old file or the new one, whole."""
    if real.is_dir():
        raise UsageError(f"Cannot write '{real}': it is a directory (expected a file path).")
    parent = real.parent
    parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{real.name[:200]}.", suffix=".tmp", dir=parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; outputs get the usual permissions
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, real)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
