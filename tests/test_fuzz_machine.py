"""Fuzz machine description files (catalogs/machines schema, or `--machine FILE`)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from planner.core.constants import catalog_dir
from planner.fits.machine_lookup import get_machine

from .fuzz.harness import (
    dump_json,
    extreme_variants,
    field_variants,
    fuzz_settings,
    mutate_bytes,
    mutate_json,
    pick,
    run_cli,
    run_reader,
    scratch_file,
)

BASES = {p.stem: json.loads(p.read_text()) for p in sorted((catalog_dir() / "machines").glob("*.json"))}
NAMES = sorted(BASES)


@st.composite
def hostile_machine(draw: st.DrawFn) -> bytes:
    base = BASES[pick(draw, NAMES)]
    if draw(st.integers(0, 4)) == 0:
        return draw(mutate_bytes(json.dumps(base, indent=2).encode()))
    return dump_json(draw(mutate_json(base, max_ops=3)))


def test_every_catalog_machine_reads_from_a_file(tmp_path):
    assert len(NAMES) > 10
    for name, entry in BASES.items():
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps(entry))
        m = get_machine(str(f))
        assert m.memory_bytes == entry["memory_bytes"] and m.n_devices == entry["devices"], name


@fuzz_settings(200)
@given(hostile_machine())
def test_fuzz_machine_reader(blob):
    with scratch_file("box.json", blob) as f:
        run_reader(lambda: get_machine(str(f)), [f], input_bytes=len(blob))


@fuzz_settings(30, cli=True)
@given(hostile_machine())
def test_fuzz_machine_cli(blob):
    with scratch_file("box.json", blob) as f:
        run_cli(["machines", "show", str(f), "--json"], [f])


def test_every_field_of_a_machine_wrong(tmp_path):
    """Each field (numbers at extremes; every field at each wrong type, or deleted), one at a time.

    Found: "notes": 5 was a TypeError (tuple(5)) instead of a MachineError.
    """
    base = next(BASES[n] for n in NAMES if "notes" in BASES[n] and "device_names" in BASES[n])
    variants = [*extreme_variants(base), *field_variants(base)]
    for i, (_path, _value, bad) in enumerate(variants):
        f = tmp_path / f"m{i}.json"
        f.write_text(json.dumps(bad))
        r = run_reader(lambda f=f: get_machine(str(f)), [f], trace=False)
        if r.error is None or i % 10 == 0:  # accepted values must also print; a sample of the errors too
            run_cli(["machines", "show", str(f), "--json"], [f])
