"""Outputs (`check --junit`, `report --out`): never replace a device, a FIFO, a symlink or an input; one line on bad paths.

Each case reproduces an attack of issue #19 (as root in a CI container the old atomic write renamed a
regular file over /dev/null, over a symlink, over the policy's machine JSON or a target's config.json).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from planner.core import atomic

from .conftest import CONFIGS
from .fuzz.harness import ROOT, run_cli

CATALOG_MACHINE = ROOT / "catalogs" / "machines" / "rtx-4090.json"


def _policy(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A policy whose inputs are a machine JSON and a local model folder (both must survive --junit)."""
    machine = tmp_path / "box.json"
    shutil.copy(CATALOG_MACHINE, machine)
    model = tmp_path / "smol"
    model.mkdir()
    (model / "config.json").write_text((CONFIGS / "SmolLM2-135M.json").read_text())
    pol = tmp_path / "planner.toml"
    pol.write_text(f'[[deployment]]\nname = "chat"\ntarget = "{model}"\nmachine = "{machine}"\nengine = "vllm"\n')
    return pol, machine, model / "config.json"


def _check(pol: Path, junit: str | Path, files=()) -> object:
    return run_cli(["check", "--config", str(pol), "--junit", str(junit), "--json"], [pol, junit, *files])


def test_junit_never_overwrites_the_policys_inputs(tmp_path):
    pol, machine, config = _policy(tmp_path)
    for victim in (machine, config, pol):
        before = victim.read_bytes()
        r = _check(pol, victim)
        assert r.code == 2 and ("also an input" in r.err or "input directory" in r.err), r.err
        assert victim.read_bytes() == before
    ok = _check(pol, tmp_path / "out.xml")
    assert ok.code in (0, 1) and ET.parse(tmp_path / "out.xml").getroot().tag == "testsuites"


def private_null(d: Path) -> Path:
    """A node like /dev/null (char 1:3) in `d`: as root the old writer replaced the device itself, so no
    test writes to the system's /dev/null (a regression would break the whole machine). Needs CAP_MKNOD."""
    node = d / "null"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot create a device node here ({e.strerror}): run as root to check devices")
    return node


def test_dev_null_and_symlinks_are_written_through_not_replaced(tmp_path):
    pol, _, _ = _policy(tmp_path)
    null = private_null(tmp_path)
    before = os.stat(null)
    r = _check(pol, null)
    assert r.code in (0, 1), r.err
    after = os.stat(null)
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    real = tmp_path / "reports" / "junit.xml"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "junit-link.xml"
    link.symlink_to(real)
    assert _check(pol, link).code in (0, 1)
    assert link.is_symlink() and os.readlink(link) == str(real)  # the link survives, its target is the new file
    assert ET.parse(real).getroot().tag == "testsuites"


def test_bad_destinations_are_one_line(tmp_path):
    pol, _, _ = _policy(tmp_path)
    loop = tmp_path / "loop.xml"
    loop.symlink_to(loop)
    r = _check(pol, loop)
    assert r.code == 2 and "loop" in r.err.lower(), r.err
    long = tmp_path / ("x" * 300 + ".xml")
    r = _check(pol, long, files=[long.name[:40]])
    assert r.code == 2 and "too long" in r.err.lower(), r.err
    fifo = tmp_path / "nobody-reads"
    os.mkfifo(fifo)
    r = _check(pol, fifo)
    assert r.code == 2 and "FIFO with no reader" in r.err, r.err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_fifo_with_a_reader_gets_the_document(tmp_path):
    pol, _, _ = _policy(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader is there before the write
    reader = threading.Thread(target=lambda: got.append(_drain(fd)))
    reader.start()
    try:
        assert _check(pol, fifo).code in (0, 1)
    finally:
        reader.join(10)
    assert b"<testsuites" in got[0] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def _drain(fd: int) -> bytes:
    import select

    out = b""
    while True:
        select.select([fd], [], [], 5)
        chunk = os.read(fd, 65536)
        if not chunk and out:
            os.close(fd)
            return out
        out += chunk


def test_dev_stdout_redirected_to_a_file_is_appended_not_replaced(tmp_path):
    pol, _, _ = _policy(tmp_path)
    out = tmp_path / "stdout.txt"
    with open(out, "wb") as fh:
        fh.write(b"before\n")
        fh.flush()
        ino = os.fstat(fh.fileno()).st_ino
        r = subprocess.run([sys.executable, "-m", "planner", "check", "--config", str(pol), "--junit", "/dev/stdout"],
                           stdout=fh, stderr=subprocess.PIPE, cwd=ROOT, timeout=60)
    assert r.returncode in (0, 1), r.stderr
    text = out.read_text()
    assert os.stat(out).st_ino == ino and text.startswith("before\n") and "<testsuites" in text


def test_interrupted_write_keeps_the_old_file(tmp_path, monkeypatch):
    dest = tmp_path / "report.xml"
    dest.write_text("old and whole")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic.atomic_write(dest, "new" * 10_000)
    assert dest.read_text() == "old and whole" and sorted(p.name for p in tmp_path.iterdir()) == ["report.xml"]


def test_latin1_folder_name_is_written(tmp_path):
    """A non-UTF-8 folder name reaches the report as lone surrogates: written escaped, not a crash."""
    name = os.fsdecode(b"mod\xe9le")  # 'modèle' in Latin-1: not valid UTF-8
    dest = tmp_path / "r.md"
    atomic.atomic_write(dest, f"# {name}\n")
    assert dest.read_bytes() == b"# mod\\udce9le\n"


def test_report_on_a_latin1_folder(tmp_path):
    """`report` on a folder whose name is not UTF-8 used to crash in the atomic write (UnicodeEncodeError)."""
    d = Path(os.fsdecode(bytes(tmp_path) + b"/mod\xe9le"))
    d.mkdir()
    (d / "config.json").write_text((CONFIGS / "SmolLM2-135M.json").read_text())
    for out in (tmp_path / "r.md", tmp_path / "r.html"):
        r = run_cli(["report", str(d), "--machine", "rtx-4090", "--out", str(out), "--no-plots"], [d], json_out=False)
        assert r.code == 0, r
        assert b"mod\\udce9le" in out.read_bytes() or b"mod\\xe9le" in out.read_bytes()
        out.read_bytes().decode("utf-8")  # the document stays valid UTF-8
