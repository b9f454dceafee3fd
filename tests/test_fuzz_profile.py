"""Fuzz machine profiles (`planner probe --out`) and imported benchmark files (`probe --import`).

Bases: the hand-written profile and the llama-bench / llama-batched-bench / CSV fixtures in
tests/fixtures/probe (see its README for where each layout comes from).
"""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from planner.probe.importers import import_file, profile_from_import
from planner.speed.profile_file import load_profile

from .fuzz.harness import (
    FIXTURES,
    dump_json,
    extreme_variants,
    field_variants,
    fuzz_settings,
    mutate_bytes,
    mutate_json,
    pick,
    run_cli,
    run_reader,
    scratch,
    scratch_file,
)

PROBE = FIXTURES / "probe"
PROFILE = json.loads((PROBE / "profile-cpu.json").read_text())
BENCH_TEXT = {p.name: p.read_text() for p in sorted(PROBE.iterdir())
              if p.suffix in (".md", ".csv", ".jsonl") and p.name != "README.md"}
BENCH_JSON = json.loads((PROBE / "llama-bench.json").read_text())
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
HOSTILE_NUMBERS = ("0", "-0", "-1", "1e999", "-1e999", "1e-400", "nan", "inf", "9" * 5000, "0.0", "1e308",
                   "4294967297", "", "x", "1,5", "|", "±")


@st.composite
def hostile_profile(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 4)) == 0:
        return draw(mutate_bytes(json.dumps(PROFILE, indent=2).encode()))
    return dump_json(draw(mutate_json(PROFILE, max_ops=3)))


@st.composite
def mutate_text(draw: st.DrawFn, text: str) -> str:
    """Line and cell level damage to a text table: numbers replaced, lines dropped, duplicated, cut."""
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        op = pick(draw, ["number", "number", "number", "drop", "dup", "cut", "cells", "header"])
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        if op == "number":
            spans = [m.span() for m in NUMBER.finditer(lines[i])]
            if spans:
                a, b = pick(draw, spans)
                lines[i] = lines[i][:a] + pick(draw, HOSTILE_NUMBERS) + lines[i][b:]
        elif op == "drop":
            del lines[i]
        elif op == "dup":
            lines[i:i] = [lines[i]] * pick(draw, [1, 2, 100])
        elif op == "cut":
            lines[i] = lines[i][:draw(st.integers(0, len(lines[i])))]
        elif op == "cells":
            sep = pick(draw, ["|", ","])
            cells = lines[i].split(sep)
            if len(cells) > 1:
                del cells[draw(st.integers(0, len(cells) - 1))]
                lines[i] = sep.join(cells)
        else:
            lines[i] = lines[i].replace(pick(draw, ["test", "t/s", "n_prompt", "avg_ns", "pl", "t_tg", "T_TG s", "n"]),
                                        pick(draw, ["", "test", "TEST", "t/s", "pp"]), 1)
    return "\n".join(lines) + pick(draw, ["\n", "", "\r\n"])


@st.composite
def hostile_bench(draw: st.DrawFn) -> tuple[str, bytes]:
    """(file name, bytes) of a benchmark output with numbers, cells, lines or records damaged."""
    kind = pick(draw, ["text", "text", "json", "bytes"])
    if kind == "json":
        return "bench.json", dump_json(draw(mutate_json(BENCH_JSON, max_ops=3)))
    name = pick(draw, sorted(BENCH_TEXT))
    if kind == "bytes":
        return name, draw(mutate_bytes(BENCH_TEXT[name].encode()))
    return name, draw(mutate_text(BENCH_TEXT[name])).encode("utf-8", "surrogatepass")


def test_bases_are_valid():
    assert load_profile(PROBE / "profile-cpu.json").target.verify_s[0] == PROFILE["target"]["verify_s"][0]
    for name in [*BENCH_TEXT, "llama-bench.json"]:
        runs = import_file(PROBE / name)
        assert runs and runs[0].verify_s[0] > 0, name


@fuzz_settings(200)
@given(hostile_profile())
def test_fuzz_profile_reader(blob):
    with scratch_file("profile.json", blob) as f:
        run_reader(lambda: load_profile(f), [f], input_bytes=len(blob))


@fuzz_settings(30, cli=True)
@given(hostile_profile())
def test_fuzz_profile_cli(blob):
    with scratch_file("profile.json", blob) as f:
        run_cli(["recommend", "smollm2-135m", "--profile", str(f), "--machine", "rtx-4090", "--json"], [f])


def test_every_field_of_a_profile_wrong(tmp_path):
    variants = [*extreme_variants(PROFILE), *field_variants(PROFILE, max_depth=2)]
    for i, (_path, _value, bad) in enumerate(variants):
        f = tmp_path / f"p{i}.json"
        f.write_bytes(dump_json(bad))
        r = run_reader(lambda f=f: load_profile(f), [f], trace=False)
        if r.error is None and i % 4 == 0:  # accepted (a sample): the profile must also be usable
            run_cli(["recommend", "smollm2-135m", "--profile", str(f), "--machine", "rtx-4090", "--json"], [f])


@fuzz_settings(250)
@given(hostile_bench())
def test_fuzz_import_reader(item):
    name, blob = item
    with scratch() as d:
        f = d / name
        f.write_bytes(blob)

        def read():
            runs = import_file(f)
            return profile_from_import(runs[0], runs[-1] if len(runs) > 1 else None)

        run_reader(read, [f], input_bytes=len(blob))


@fuzz_settings(30, cli=True)
@given(hostile_bench())
def test_fuzz_import_cli(item):
    name, blob = item
    with scratch() as d:
        f = d / name
        f.write_bytes(blob)
        run_cli(["probe", "--import", str(f), "--json"], [f])


def test_every_number_of_a_benchmark_record_at_an_extreme(tmp_path):
    records = BENCH_JSON[:2]
    for i, (_path, _value, bad) in enumerate([*extreme_variants(records), *field_variants(records, max_depth=2)]):
        f = tmp_path / f"b{i}.json"
        f.write_bytes(dump_json(bad))
        run_reader(lambda f=f: profile_from_import(import_file(f)[0], None), [f], trace=False)
