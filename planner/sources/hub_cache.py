"""The Hugging Face cache layout, read and written with names we choose, never names a server sends.

Layout (huggingface_hub docs, "Understand caching"): `<HF_HUB_CACHE>/models--<org>--<name>/`
holds `refs/<revision>` (a file with the 40-hex commit), `blobs/<hash>` (file contents) and
`snapshots/<commit>/<filename>` (a relative symlink to the blob). huggingface_hub builds the blob
and snapshot paths from the server's `ETag` and `X-Repo-Commit` headers as they are, so a mirror
answering `ETag: "../../../x"` writes outside the cache. Here the blob is named by the sha256 of
the bytes received, the commit must be 40 hex digits, the revision a plain ref name, and every
path is checked to resolve inside the cache before anything is written there.

Reads are bounded too: a `refs/<revision>` file is read only if it is a regular file of at most
HF_REF_MAX_BYTES (a sparse 3 GB ref would otherwise be read whole by `try_to_load_from_cache`).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
from pathlib import Path

from ..core.constants import HF_REF_MAX_BYTES
from ..core.errors import SourceError

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_REF = re.compile(r"^[A-Za-z0-9][\w.\-]{0,199}(/[\w.\-]{1,200}){0,3}$")  # main, v1.0, refs/pr/1


def cache_root() -> Path:
    from huggingface_hub import constants as hf_constants  # HF_HUB_CACHE, as huggingface_hub resolves it

    return Path(hf_constants.HF_HUB_CACHE)


def repo_dir(repo_id: str) -> Path:
    return cache_root() / ("models--" + repo_id.replace("/", "--"))


def is_commit(revision: str | None) -> bool:
    return bool(revision) and bool(_COMMIT.match(revision or ""))


def valid_ref(revision: str) -> bool:
    return bool(_REF.match(revision)) and ".." not in revision.split("/")


def cached_commit(repo_id: str, revision: str | None) -> str | None:
    """The commit `revision` points at in the cache (a commit is its own), or None; bounded, never raises."""
    rev = revision or "main"
    if is_commit(rev):
        return rev
    if not valid_ref(rev):
        return None
    ref = repo_dir(repo_id) / "refs" / rev
    try:
        st = os.stat(ref)
        if not stat.S_ISREG(st.st_mode) or st.st_size > HF_REF_MAX_BYTES:
            return None  # a FIFO would block, a sparse 3 GB file is not a ref
        with open(ref, "rb") as fh:
            text = fh.read(HF_REF_MAX_BYTES + 1).decode("ascii", "replace").strip()
    except (OSError, ValueError):
        return None
    return text if _COMMIT.match(text) else None


def cached_file(repo_id: str, filename: str, revision: str | None) -> Path | None:
    """snapshots/<commit>/<filename> when the cache has it as a regular file (through its symlink)."""
    commit = cached_commit(repo_id, revision)
    if commit is None:
        return None
    p = repo_dir(repo_id) / "snapshots" / commit / filename
    try:
        return p if p.is_file() else None
    except (OSError, ValueError):
        return None


def require_commit(commit: object, origin: str) -> str:
    """The server's X-Repo-Commit when it is a 40-hex commit id (what the cache names a snapshot folder by).

    Raises:
        SourceError: anything else (missing, `../..`, too long): a broken or hostile mirror.
    """
    if isinstance(commit, str) and _COMMIT.match(commit):
        return commit
    raise SourceError(f"Cannot store '{origin}' from the Hub: the server's X-Repo-Commit {str(commit)[:60]!r} is "
                      f"not a 40-hex commit id (a broken or hostile mirror). Check HF_ENDPOINT.", origin)


def store(repo_id: str, filename: str, commit: str | None, revision: str | None, data: bytes) -> Path:
    """Put `data` in the cache as `filename` of `commit` (and point `revision` at it); the snapshot path.

    Raises:
        SourceError: the server's commit is not 40 hex digits, the revision or file name is not a plain
            name, or a path would resolve outside the cache (a symlinked folder in a hostile cache).
        OSError: the cache cannot be written (the caller maps it).
    """
    origin = f"{repo_id}/{filename}"
    commit = require_commit(commit, origin)
    if "/" in filename or "\\" in filename or filename.startswith(".") or not filename:
        raise SourceError(f"Cannot store '{origin}': '{filename[:80]}' is not a plain file name.", origin)
    ref = revision or "main"
    if not is_commit(ref) and not valid_ref(ref):
        raise SourceError(f"Cannot store '{origin}': revision '{ref[:80]}' is not a plain ref name "
                          f"(letters, digits, '.', '-', '_', '/').", origin)
    root = cache_root()
    base = repo_dir(repo_id)
    blob = base / "blobs" / hashlib.sha256(data).hexdigest()
    pointer = base / "snapshots" / commit / filename
    _inside(root, [blob.parent, pointer.parent], origin)  # before mkdir: no folder is made outside either
    for d in (blob.parent, pointer.parent):
        d.mkdir(parents=True, exist_ok=True)
    _inside(root, [blob.parent, pointer.parent], origin)
    if not blob.is_file():
        _write(blob, data)
    _link(pointer, blob)
    if not is_commit(ref):
        refs = base / "refs" / ref
        _inside(root, [refs.parent], origin)
        refs.parent.mkdir(parents=True, exist_ok=True)
        _inside(root, [refs.parent], origin)
        if cached_commit(repo_id, ref) != commit:
            _write(refs, commit.encode())
    _inside(root, [pointer], origin)
    return pointer


def _inside(root: Path, paths: list[Path], origin: str) -> None:
    real_root = root.resolve()
    for p in paths:
        if not p.resolve().is_relative_to(real_root):
            raise SourceError(f"Cannot store '{origin}': '{p}' resolves outside the Hugging Face cache "
                              f"'{real_root}' (a symlink in the cache points out). Check HF_HUB_CACHE.", origin)


def _write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=".incomplete", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _link(pointer: Path, blob: Path) -> None:
    """A relative symlink snapshots/<commit>/<file> -> ../../blobs/<sha256>, as huggingface_hub makes (a copy
    where symlinks are not allowed); replaced atomically when it points elsewhere."""
    target = os.path.relpath(blob, pointer.parent)
    try:
        if pointer.is_symlink() and os.readlink(pointer) == target:
            return
        tmp = pointer.parent / f".{pointer.name[:64]}.link"
        tmp.unlink(missing_ok=True)
        os.symlink(target, tmp)
        os.replace(tmp, pointer)
    except OSError:
        _write(pointer, blob.read_bytes())


_SNAPSHOT_MAX_ENTRIES = 100_000  # a snapshot holds tens of files; a walk past this is refused, not finished


def refuse_links_out(snapshot: Path) -> None:
    """Refuse a cached snapshot any of whose files or folders resolves outside the cache.

    Why: snapshot files are symlinks to `../../blobs/<hash>`; a shared or restored cache may point one at
    any file of the machine (`config.json -> /etc/secret.json`), whose values would then be read and
    quoted in errors. Such a link is not followed: the run stops with one line naming the link only.

    Raises:
        SourceError: a link points outside the cache, or the snapshot has too many entries to check.
    """
    real_root = Path(os.path.realpath(cache_root()))
    count = 0
    for folder, dirs, files in os.walk(snapshot, followlinks=False):
        for name in (*dirs, *files):
            count += 1
            if count > _SNAPSHOT_MAX_ENTRIES:
                raise SourceError(f"Cannot read cached snapshot '{snapshot}': more than {_SNAPSHOT_MAX_ENTRIES} "
                                  f"entries (expected a model's few files).", snapshot)
            entry = Path(folder) / name
            if not Path(os.path.realpath(entry)).is_relative_to(real_root):
                raise SourceError(f"Cannot read cached snapshot '{snapshot}': '{entry.relative_to(snapshot)}' "
                                  f"links outside the Hugging Face cache (not followed). Re-download the model "
                                  f"or check HF_HUB_CACHE.", entry)
