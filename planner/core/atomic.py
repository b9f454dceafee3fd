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
  and every file the readers noted with `note_input` (each JSON file read, the policy, GGUF files),
  whatever path names the destination (`/proc/self/cwd/planner.toml`, a hard link: inputs are also
  compared by device and inode);
- the check and the rename cannot be raced apart: the destination's folder is opened once (a directory
  handle), its true path read back from the handle (`/proc/self/fd/N`) and checked, and the temp file
  and the rename are made relative to that handle (`dir_fd`, `O_NOFOLLOW`), so swapping a folder of
  the path for a symlink after the check moves nothing onto an input;
- missing folders are created only along the path as written, never through a dangling symlink.

Every failure (a symlink loop, a component over 255 bytes, a read-only folder) is one UsageError.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from .errors import UsageError

_READ: set[str] = set()  # real paths of the files this run has read (note_input)
_READ_IDS: set[tuple[int, int]] = set()  # and their (device, inode): another name for one is still an input
# A descriptor's link: /dev/stdout -> /proc/self/fd/1 -> a pipe, a tty or the shell's file. Other /proc links
# (/proc/self/cwd/x, /proc/self/root/x) are resolved like any symlink and written like any file.
_FD_LINK = re.compile(r"/proc/[^/]+/fd/\d+|/dev/fd/\d+|/dev/std(in|out|err)")


def note_input(path: str | Path) -> None:
    """Record that this run read `path`, so no output of the run replaces it."""
    with contextlib.suppress(OSError, ValueError):
        _READ.add(os.path.realpath(path))
        st = os.stat(path)
        _READ_IDS.add((st.st_dev, st.st_ino))


def forget_inputs() -> None:
    """Start a new run (the CLI calls this first; tests run many commands in one process)."""
    _READ.clear()
    _READ_IDS.clear()


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
    inputs = list(inputs)
    fd = _std_fd(p)
    if fd is not None:
        _refuse_open(p, fd, inputs)
        return _write_fd(p, fd, raw)
    try:
        st = _stat(p)
        if st is not None and not stat.S_ISREG(st.st_mode):
            return _write_through(p, st, raw, inputs)
        if st is not None and _via_pseudo(p):  # /dev/stdout redirected to a file: that file is the shell's
            return _write_through(p, st, raw, inputs)
        real = Path(os.path.realpath(p))
        _refuse_inputs(p, real, inputs)
        _replace(p, real, raw, inputs)
    except OSError as e:
        raise UsageError(f"Cannot write '{p}': {e.strerror or e}.") from e
    return p


def append_text(path: str | Path, text: str, *, inputs: Iterable[str | Path] = ()) -> None:
    """Append `text` to an existing log-like file ($GITHUB_STEP_SUMMARY), never to an input, never blocking.

    Why not `open(path, "a")`: the variable is the environment's, so it may name the policy (the next run
    would fail to parse it) or a FIFO nobody reads (`open` would hang the gate). The file is opened
    once with O_NONBLOCK and judged by what was opened (`fstat`), so nothing can be swapped in between.
    """
    p = Path(path)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise UsageError(f"Cannot write '{p}': it is a FIFO with no reader (refused, it would block).") from e
        raise UsageError(f"Cannot write '{p}': {e.strerror or e}.") from e
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
            raise UsageError(f"Cannot write '{p}': it is not a file (refused).")
        _refuse_open(p, fd, list(inputs))
        os.set_blocking(fd, True)
        view = memoryview(text.encode("utf-8", "backslashreplace"))
        while view:
            view = view[os.write(fd, view):]
    except OSError as e:
        raise UsageError(f"Cannot write '{p}': {e.strerror or e}.") from e
    finally:
        os.close(fd)


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
    """True when `p` is, or its symlinks reach, a descriptor's link (/dev/stdout -> /proc/self/fd/1 -> a file)."""
    hop = os.path.abspath(p)
    for _ in range(40):  # the kernel's own limit on symlink hops
        if _FD_LINK.fullmatch(hop):
            return True
        if not os.path.islink(hop):
            return False
        hop = os.path.join(os.path.dirname(hop), os.readlink(hop))
    return False


def _ids(inputs: Iterable[str | Path]) -> set[tuple[int, int]]:
    """(device, inode) of each input that exists, and of every file this run read."""
    out = set(_READ_IDS)
    for i in inputs:
        with contextlib.suppress(OSError, ValueError):
            st = os.stat(i)
            out.add((st.st_dev, st.st_ino))
    return out


def _refuse_open(p: Path, fd: int, inputs: list[str | Path]) -> None:
    """Refuse to write into an already opened file that is an input under another name (/dev/fd/1 >> policy)."""
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) in _ids(inputs):
        raise UsageError(f"Cannot write '{p}': it is also an input of this command. Choose another path.")


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


def _write_through(p: Path, st: os.stat_result, raw: bytes, inputs: list[str | Path]) -> Path:
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
        if stat.S_ISREG(os.fstat(fd).st_mode):
            _refuse_open(p, fd, inputs)
        if stat.S_ISFIFO(mode):
            os.set_blocking(fd, True)
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return p


def _replace(p: Path, real: Path, raw: bytes, inputs: list[str | Path]) -> None:
    """Temp file beside `real`, fsync, rename over it: readers see the old file or the new one, whole.

    Both are made relative to one handle on the folder, whose true path is checked again after it is
    opened: a folder swapped for a symlink between `realpath` and here is caught, not written through.
    """
    if real.is_dir():
        raise UsageError(f"Cannot write '{real}': it is a directory (expected a file path).")
    _make_parents(p, real.parent)
    dfd = os.open(real.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _refuse_inputs(p, Path(_fd_path(dfd, real.parent)) / real.name, inputs)
        try:
            st = os.stat(real.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and ((st.st_dev, st.st_ino) in _ids(inputs) or stat.S_ISLNK(st.st_mode)):
            raise UsageError(f"Cannot write '{p}': it is an input, or was changed while writing (refused).")
        _write_in(dfd, real.name, raw)
    finally:
        os.close(dfd)


def _fd_path(dfd: int, fallback: Path) -> str:
    """Where an open folder really is now (Linux: /proc/self/fd/N), else the path it was opened by."""
    try:
        return os.readlink(f"/proc/self/fd/{dfd}")
    except OSError:
        return str(fallback)


def _make_parents(p: Path, parent: Path) -> None:
    """Create the missing folders of `parent` (the resolved one), never through a dangling symlink.

    Why look at the path as written: `realpath` resolves a dangling symlink to its target's name, and
    `mkdir(parents=True)` on that would build the target's folders wherever the link points.
    """
    q = Path(os.path.abspath(p)).parent
    while not os.path.lexists(q) and q != q.parent:
        q = q.parent
    dangling = q if os.path.islink(q) and not os.path.exists(q) else None
    if dangling is None and os.path.islink(p) and not os.path.exists(parent):
        dangling = p
    if dangling is not None:
        raise UsageError(f"Cannot write '{p}': '{dangling}' is a symlink to a missing path (refused: no folder is "
                         f"made through it).")
    missing = []
    while not os.path.lexists(parent) and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(d)


def _write_in(dfd: int, name: str, raw: bytes) -> None:
    tmp = f".{name[:200]}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    umask = os.umask(0)
    os.umask(umask)  # outputs get the usual permissions (mkstemp would make 0600)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666 & ~umask, dir_fd=dfd)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise
