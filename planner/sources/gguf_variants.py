"""The GGUF variants of one model: every .gguf in a folder (a local download, or a Hugging Face repo in the
local cache), one entry per quantisation with its size on disk.

Why: a GGUF repo ships a dozen quantisations of one model; choosing one is comparing their sizes and what
they need to run (as hf-mem lists a repo's files). Offline-first: a folder or the HF cache only; nothing
is fetched. Split files (-00001-of-00003.gguf) are one variant, their sizes summed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..core import paths
from . import hub_cache

_SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$")
MAX_VARIANTS = 256  # a folder is listed up to this many .gguf files: bounded work on a hostile folder


@dataclass(frozen=True)
class Variant:
    """One quantisation: the file a command loads (the first split), its name, its parts and their bytes."""

    name: str  # the file name, the split's shard number dropped
    path: Path  # what `planner memory PATH` or `llama-server -m PATH` takes
    parts: int
    file_bytes: int  # on disk, all parts


def gguf_folder(ref: str) -> Path | None:
    """The folder whose GGUF files `ref` names: a local directory holding .gguf files and no config.json,
    or a cached Hugging Face repo's snapshot (its main ref) that holds them; None otherwise."""
    if paths.is_dir(ref):
        d = paths.expand(ref)
    elif ref.count("/") == 1 and not ref.startswith((".", "/", "~")):
        commit = hub_cache.cached_commit(ref, None)
        d = hub_cache.repo_dir(ref) / "snapshots" / commit if commit else Path()
        if not commit or not d.is_dir():
            return None
    else:
        return None
    if (d / "config.json").is_file() or not any(d.glob("*.gguf")):
        return None
    return d


def variants(folder: Path) -> list[Variant]:
    """Every GGUF variant of `folder`, smallest first (then by name): one per single file or split set."""
    sets: dict[str, list[Path]] = {}
    for p in sorted(folder.glob("*.gguf"))[:MAX_VARIANTS]:
        m = _SPLIT.search(p.name)
        key = p.name[: m.start()] + ".gguf" if m else p.name
        sets.setdefault(key, []).append(p)
    out = [Variant(name=name, path=files[0], parts=len(files), file_bytes=sum(_size(f) for f in files))
           for name, files in sets.items()]
    return sorted(out, key=lambda v: (v.file_bytes, v.name))


def _size(p: Path) -> int:
    """A file's bytes (a link followed: the HF cache links snapshots to blobs); 0 when it cannot be read."""
    try:
        return os.stat(p).st_size
    except OSError:
        return 0
