"""`planner memory FOLDER`: the GGUF variants of a model listed with their sizes (#31 item 12, as hf-mem
lists a repo): a local folder or a Hugging Face repo in the local cache, offline; one row per file or
split set, each with its bytes on disk and the ledger its header gives.

Why: a GGUF repo ships a dozen quantisations; `planner memory DIR` used to refuse the folder ("pass one
directly"), so comparing them took one call per file.
"""

from __future__ import annotations

import json
import os

import pytest

from planner.cli import main
from planner.sources.gguf_variants import variants

from .gguf_dir import gguf_test_dir

REAL = ("SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf")


def memory(capsys, *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        main(["memory", *args])
    return int(e.value.code or 0), capsys.readouterr().out


@pytest.fixture()
def folder(tmp_path):
    d = gguf_test_dir()
    if not all((d / n).exists() for n in REAL):
        pytest.skip("real GGUF files absent: python scripts/fetch_ggufs.py")
    out = tmp_path / "ggufs"
    out.mkdir()
    for n in REAL:
        (out / n).symlink_to(d / n)
    return out


def test_split_sets_are_one_variant_and_the_smallest_comes_first(tmp_path):
    for name, size in (("m-00001-of-00002.gguf", 10), ("m-00002-of-00002.gguf", 20), ("a.gguf", 45)):
        (tmp_path / name).write_bytes(b"\0" * size)
    got = [(v.name, v.parts, v.file_bytes, v.path.name) for v in variants(tmp_path)]
    assert got == [("m.gguf", 2, 30, "m-00001-of-00002.gguf"), ("a.gguf", 1, 45, "a.gguf")]


def test_each_variant_is_its_file_and_its_own_ledger(capsys, folder):
    code, out = memory(capsys, str(folder), "--json")
    assert code == 0
    rows = json.loads(out)["variants"]
    assert [r["name"] for r in rows] == sorted(REAL, key=lambda n: os.stat(folder / n).st_size)
    for r in rows:
        assert r["file_bytes"] == os.stat(folder / r["name"]).st_size  # bytes on disk, the link followed
        _, one = memory(capsys, r["path"], "--json")
        assert r["total_bytes"] == json.loads(one)["total_bytes"]  # the single-file ledger, unchanged


def test_the_table_fits_80_columns(capsys, folder, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out = memory(capsys, str(folder))
    assert code == 0 and max(map(len, out.splitlines())) <= 80
    assert all(any(line.startswith(n) for line in out.splitlines()) for n in REAL)


def test_a_cached_hub_repo_of_ggufs_is_listed_offline(capsys, folder, tmp_path, monkeypatch):
    hf_constants = pytest.importorskip("huggingface_hub.constants", reason="the Hub cache layout needs huggingface_hub")
    commit = "a" * 40
    repo = tmp_path / "hub" / "models--someone--Tiny-GGUF"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / REAL[0]).symlink_to(folder / REAL[0])
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, out = memory(capsys, "someone/Tiny-GGUF", "--json")
    assert code == 0
    (row,) = json.loads(out)["variants"]
    assert row["name"] == REAL[0] and row["file_bytes"] == os.stat(folder / REAL[0]).st_size
