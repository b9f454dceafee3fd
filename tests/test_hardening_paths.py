"""Output paths (issue #34, classes 2 and 8): pseudo-paths, the step summary, dangling symlinks, a swapped folder.

Every write goes through planner/core/atomic.py; each test reproduces an attack of the issue and asserts
exit 2 with one line and the input byte for byte as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from planner.core import atomic

from .cli_run import run_cli as cli_run
from .conftest import CONFIGS
from .fuzz.harness import ROOT, run_cli

PROBE = ROOT / "tests" / "fixtures" / "probe"
SMALL = '[[deployment]]\nname = "chat"\ntarget = "qwen2.5-0.5b-instruct"\nmachine = "rtx-4090"\nengine = "vllm"\n'


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "planner.toml").write_text(SMALL)
    return tmp_path


def _refused(args, victim: Path, capsys) -> None:
    """Exit 2, stdout empty, stderr's last line the one error (an import may warn first), the victim unchanged."""
    before = victim.read_bytes()
    code, out, err = cli_run(args, capsys)
    lines = err.splitlines()
    assert code == 2 and out == "" and lines[-1].startswith("error: ") and "input" in lines[-1], err
    assert all(ln.startswith(("warning: ", "    ")) for ln in lines[:-1]), err  # wrapped warnings indent
    assert victim.read_bytes() == before


def test_junit_through_proc_self_cwd_is_refused(here, capsys):
    _refused(["check", "--junit", "/proc/self/cwd/planner.toml"], here / "planner.toml", capsys)


def test_report_into_the_model_folder_through_proc_self_cwd_is_refused(here, capsys):
    model = here / "smol"
    model.mkdir()
    shutil.copy(CONFIGS / "SmolLM2-135M.json", model / "config.json")
    (model / "README.md").write_text("# the model's own readme\n")
    _refused(["report", str(model), "--machine", "rtx-4090", "--no-plots", "--out", "/proc/self/cwd/smol/README.md"],
             model / "README.md", capsys)


def test_probe_out_over_its_import_through_proc_self_cwd_is_refused(here, capsys):
    shutil.copy(PROBE / "llama-bench.json", here / "bench.json")
    _refused(["probe", "--import", "bench.json", "--out", "/proc/self/cwd/bench.json"], here / "bench.json", capsys)


def test_step_summary_naming_the_policy_is_refused(here, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "planner.toml")
    _refused(["check"], here / "planner.toml", capsys)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "/proc/self/cwd/planner.toml")
    _refused(["check"], here / "planner.toml", capsys)


def test_step_summary_fifo_without_reader_does_not_hang(here, monkeypatch):
    fifo = here / "summary"
    os.mkfifo(fifo)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(fifo))
    r = run_cli(["check"], [fifo], json_out=False)  # run_cli's hang guard fails the test on a hang
    assert r.code == 2 and "FIFO with no reader" in r.err


def test_no_folder_is_made_through_a_dangling_out_symlink(here):
    (here / "link.md").symlink_to(here / "nowhere" / "deeper" / "r.md")
    (here / "dir").symlink_to(here / "elsewhere")
    for out in ("link.md", "dir/sub/r.md"):
        r = run_cli(["report", "qwen2.5-0.5b-instruct", "--machine", "rtx-4090", "--no-plots", "--out", out], [out],
                    json_out=False)
        assert r.code == 2 and "symlink to a missing path" in r.err, r.err
    assert not (here / "nowhere").exists() and not (here / "elsewhere").exists()
    ok = run_cli(["report", "qwen2.5-0.5b-instruct", "--machine", "rtx-4090", "--no-plots", "--out", "new/sub/r.md"],
                 [], json_out=False)
    assert ok.code == 0 and (here / "new" / "sub" / "r.md").is_file()  # missing folders of a plain path: made


def test_a_folder_swapped_for_a_symlink_after_the_check_writes_nothing_over_the_policy(tmp_path, monkeypatch):
    """The race of the issue made deterministic: the swap happens right after the path check."""
    safe = tmp_path / "pol"
    safe.mkdir()
    policy = safe / "planner.toml"
    policy.write_text(SMALL)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    real_make = atomic._make_parents

    def swap_then_make(p, parent):
        out_dir.rename(tmp_path / "moved")
        out_dir.symlink_to(safe)  # out/planner.toml is now the policy
        real_make(p, parent)

    monkeypatch.setattr(atomic, "_make_parents", swap_then_make)
    with pytest.raises(atomic.UsageError, match="input"):
        atomic.atomic_write(out_dir / "planner.toml", "<xml/>", inputs=[policy])
    assert policy.read_text() == SMALL


def test_concurrent_swaps_never_replace_the_policy(tmp_path):
    """The race itself: a thread swaps the output folder for a symlink to the policy's folder, over and over."""
    safe = tmp_path / "pol"
    safe.mkdir()
    policy = safe / "planner.toml"
    policy.write_text(SMALL)
    out_dir, spare = tmp_path / "out", tmp_path / "spare"
    out_dir.mkdir()
    stop = threading.Event()

    def swapper():
        while not stop.is_set():
            try:
                out_dir.rename(spare)
                out_dir.symlink_to(safe)
                out_dir.unlink()
                spare.rename(out_dir)
            except OSError:
                pass

    t = threading.Thread(target=swapper, daemon=True)
    t.start()
    try:
        for _ in range(200):
            with contextlib.suppress(atomic.UsageError):
                atomic.atomic_write(out_dir / "planner.toml", "<xml/>", inputs=[policy])
    finally:
        stop.set()
        t.join()
    assert policy.read_text() == SMALL


def test_hf_cache_snapshot_links_outside_the_cache_are_not_followed(tmp_path, monkeypatch, capsys):
    """Issue #34 class 8: a cached snapshot's config.json -> a file outside the cache was read and its value
    echoed in the error. Now the link is named and not followed (the secret value never appears)."""
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"model_type": "TOPSECRET-VALUE-42"}))
    cache = tmp_path / "hub"
    commit = "a" * 40
    snap = cache / "models--acme--leak" / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(secret)
    refs = cache / "models--acme--leak" / "refs"
    refs.mkdir()
    (refs / "main").write_text(commit)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(cache))
    code, out, err = cli_run(["memory", "acme/leak"], capsys)
    assert code == 2 and "links outside the Hugging Face cache" in err and "TOPSECRET" not in err + out, err
