"""Shared fixtures: reference configs, offline by default, a scratch HF cache per test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
CONFIGS = FIXTURES / "configs"


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path_factory):
    """Tests never touch the network or the user's HF cache unless they opt in."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("hf-cache")))
    monkeypatch.delenv("SPEC_PLANNER_OFFLINE", raising=False)


@pytest.fixture(autouse=True)
def _fresh_memo():
    """Each test starts with no memoised values (planner/core/memo.py), whatever the last one patched."""
    from planner.core import memo

    memo.clear()


@pytest.fixture(autouse=True)
def _no_particular_host(monkeypatch):
    """`planner memory` sizes for the host it runs on (fits/machine_detect.py host_kind); tests read the same on
    every machine unless they set SPEC_PLANNER_HOST_KIND themselves."""
    monkeypatch.setenv("SPEC_PLANNER_HOST_KIND", "none")


@pytest.fixture(autouse=True)
def _quiet_host(monkeypatch, tmp_path_factory):
    """A saved machine profile lives in a scratch dir per test (never the user's cache), and the host reads
    as idle (no load average, no /proc/stat) so a detected machine's notes do not depend on this box's load;
    tests of contention fake the load themselves (tests/test_machine_measure.py)."""
    from planner.fits import host_load

    monkeypatch.setenv("SPEC_PLANNER_PROFILE_DIR", str(tmp_path_factory.mktemp("machine-profile")))
    monkeypatch.setattr(host_load, "_loadavg", lambda: None)
    monkeypatch.setattr(host_load, "_cpu_times", lambda: None)


def model_dir(tmp_path: Path, name: str, **overrides) -> Path:
    """A model directory holding the reference config `name` (tests/fixtures/configs/<name>.json)."""
    cfg = json.loads((CONFIGS / f"{name}.json").read_text())
    cfg.update(overrides)
    d = tmp_path / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg))
    return d


@pytest.fixture
def make_model_dir(tmp_path):
    return lambda name, **kw: model_dir(tmp_path, name, **kw)


def copy_fixture(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
