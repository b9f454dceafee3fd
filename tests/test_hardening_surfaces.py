"""Hangs, silent degradations, catch-all messages and absurd values (issue #34, classes 6, 9 and 10).

Each test reproduces an attack of the issue: a FIFO as --fleet, a stuck nvidia-smi, duplicate fleet
lines, names the OS refuses, `~nosuchuser`, and values no model or flag can hold.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from planner.core.errors import MachineError
from planner.fits import machine_detect

from .cli_run import run_cli as run
from .fuzz.harness import run_cli


def test_a_fifo_as_fleet_file_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "fleet"
    os.mkfifo(fifo)
    r = run_cli(["report", "--fleet", str(fifo), "--no-plots"], [fifo], json_out=False)
    assert r.code == 2 and "not a regular file" in r.err


def test_duplicate_fleet_lines_are_planned_once(tmp_path, capsys):
    one = tmp_path / "one.txt"
    one.write_text("h100-sxm\n")
    many = tmp_path / "many.txt"
    many.write_text("h100-sxm\nH100-SXM\n" * 5000)
    args = ["report", "--targets", "qwen2.5-0.5b-instruct", "--no-plots", "--json", "--fleet"]
    t0 = time.perf_counter()
    code, out_one, _ = run([*args, str(one)], capsys)
    single = time.perf_counter() - t0
    t0 = time.perf_counter()
    code2, out_many, _ = run([*args, str(many)], capsys)
    assert code == code2 == 0 and out_many == out_one  # the same one machine, planned once
    assert time.perf_counter() - t0 < 5 * single + 2


def test_a_stuck_nvidia_smi_is_killed_and_said(tmp_path, monkeypatch):
    child = tmp_path / "child.pid"
    tool = tmp_path / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\necho '0, NVIDIA H100 80GB HBM3, 81559, 81000'\nsleep 30 &\necho $! > {child}\n"
                    "wait\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(machine_detect, "DETECT_TIMEOUT_S", 0.5)
    with pytest.raises(MachineError, match=r"did not finish within 0\.5 s"):
        machine_detect.nvidia_smi_devices()
    pid = int(child.read_text())
    for _ in range(50):  # the kill is asynchronous: the child is gone (or a zombie: dead) within a moment
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                break
        except FileNotFoundError:
            break
        time.sleep(0.02)
    else:
        pytest.fail("the tool's child is still running")
