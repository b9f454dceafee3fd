"""Tests that prove each check of the fuzz harness (tests/fuzz/harness.py) can fail."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import settings

from .fuzz.harness import (
    Hang,
    Raw,
    address_space_bytes,
    check_error_message,
    dump_json,
    hang_guard,
    mutate_bytes,
    mutate_json,
    run_cli,
    run_reader,
)


def test_run_reader_passes_planner_errors_and_checks_their_message(tmp_path):
    from planner.core.errors import ConfigError

    f = tmp_path / "bad.json"

    def reader() -> None:
        raise ConfigError(f"Cannot read '{f}': broken.", f)

    assert isinstance(run_reader(reader, [f]).error, ConfigError)
    with pytest.raises(AssertionError, match="does not name"):
        run_reader(lambda: (_ for _ in ()).throw(ConfigError("Cannot read it: broken.")), [f])
    with pytest.raises(AssertionError, match="spans lines"):
        check_error_message(f"Cannot read '{f}':\nbroken.", [f])
    # PlannerError itself escapes what would break the line (planner.core.errors.one_line)
    assert str(ConfigError(f"Cannot read '{f}': bad name 'a\nb\x1b[2J'.")).count("\n") == 0


def test_run_reader_lets_other_exceptions_through(tmp_path):
    with pytest.raises(KeyError):
        run_reader(lambda: {}["missing"], [tmp_path])


def test_hang_guard_stops_a_loop():
    with pytest.raises(Hang), hang_guard(0.2):
        while True:
            time.sleep(0.01)


def test_run_reader_catches_a_large_allocation(tmp_path):
    with pytest.raises(AssertionError, match="allocated"):
        run_reader(lambda: bytearray(64 * 1024**2), [tmp_path], memory_bytes=16 * 1024**2)


def test_hang_guard_turns_a_runaway_allocation_into_memory_error():
    if address_space_bytes() is None:
        pytest.skip("no /proc/self/statm: the address-space cap is Linux-only")
    with pytest.raises(MemoryError), hang_guard(5.0, extra_memory=256 * 1024**2):
        bytearray(1024**3)


def test_run_cli_requires_one_error_line_naming_the_file(tmp_path):
    missing = tmp_path / "nope"
    r = run_cli(["memory", str(missing), "--json"], [missing])
    assert r.code == 2 and r.err.startswith("error: Cannot find model")
    with pytest.raises(AssertionError, match="does not name"):
        run_cli(["memory", str(missing), "--json"], [tmp_path / "other-file"])


def test_mutators_change_their_input():
    from hypothesis import given

    base = {"a": [1, 2, {"b": "c"}], "d": 4}
    seen: set[bytes] = set()
    blobs: list[bytes] = []

    @settings(max_examples=50, derandomize=True, database=None)
    @given(mutate_json(base), mutate_bytes(b"0123456789abcdef", hot=8))
    def check(obj: Any, blob: bytes) -> None:
        seen.add(dump_json(obj))
        blobs.append(blob)

    check()
    assert base == {"a": [1, 2, {"b": "c"}], "d": 4}  # deep-copied, never mutated in place
    assert len(seen) > 20
    assert sum(b != b"0123456789abcdef" for b in blobs) > 40
    assert dump_json([Raw("NaN"), Raw("1" + "0" * 5000)]).startswith(b"[NaN, 1000")
