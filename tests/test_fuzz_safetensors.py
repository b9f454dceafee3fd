"""Fuzz the safetensors readers: header length prefix, header JSON, data region, shard index.

Base input: a real (tiny) Llama checkpoint, header written like safetensors does and the data
region present, so truncation and offset mutations can land past the end of the file
(tests/fuzz/safetensors_inputs.py, shared with the corpus runner).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from planner.sources import load_spec
from planner.sources.safetensors import read_header

from .fuzz.harness import (
    U64_VALUES,
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
from .fuzz.safetensors_inputs import HALF, SHARD_FILES, SHARDS, TENSORS, TINY, safetensors_bytes
from .safetensors_util import header_dict

BASE_HEADER, DATA_BYTES = header_dict(TENSORS)
BASE_FILE = safetensors_bytes(BASE_HEADER, DATA_BYTES)
HEADER_END = 8 + struct.unpack("<Q", BASE_FILE[:8])[0]


def model_dir(d: Path, files: dict[str, bytes]) -> Path:
    (d / "config.json").write_text(json.dumps(TINY))
    for name, data in files.items():
        (d / name).write_bytes(data)
    return d


@st.composite
def hostile_safetensors(draw: st.DrawFn) -> bytes:
    """Header JSON mutated field by field, with a correct or hostile length prefix and data size."""
    kind = pick(draw, ["json", "json", "bytes", "prefix"])
    if kind == "bytes":
        return draw(mutate_bytes(BASE_FILE, hot=HEADER_END))
    header = draw(mutate_json(BASE_HEADER)) if kind == "json" else BASE_HEADER
    blob = dump_json(header)
    blob += b" " * (-len(blob) % 8)
    length = None
    if kind == "prefix" or draw(st.integers(0, 5)) == 0:
        length = pick(draw, [*U64_VALUES, *(max(len(blob) + k, 0) for k in range(-16, 17))])
    data = DATA_BYTES + pick(draw, [0, 0, 0, -1, -DATA_BYTES, 1, 4096])
    return struct.pack("<Q", len(blob) if length is None else length) + blob + b"\x00" * max(data, 0)


def test_base_checkpoint_is_valid(tmp_path):
    d = model_dir(tmp_path, {"model.safetensors": BASE_FILE})
    spec = load_spec(str(d))
    assert spec.weights.source == "header"
    assert spec.weights.resident_bytes == DATA_BYTES
    r = run_cli(["memory", str(d), "--json"], [d])
    assert r.code == 0 and json.loads(r.out)["models"][0]["weights_bytes"] == DATA_BYTES


@fuzz_settings(300)
@given(hostile_safetensors())
def test_fuzz_header_reader(blob):
    with scratch_file("model.safetensors", blob) as f:
        run_reader(lambda: read_header(f), [f], input_bytes=len(blob))
        model_dir(f.parent, {})
        run_reader(lambda: load_spec(str(f.parent)), [f], input_bytes=len(blob))


@fuzz_settings(30, cli=True)
@given(hostile_safetensors())
def test_fuzz_header_cli(blob):
    with scratch() as d:
        model_dir(d, {"model.safetensors": blob})
        run_cli(["memory", str(d), "--json"], [d / "model.safetensors"])


# --- sharded checkpoints: the index ------------------------------------------------------------

BASE_INDEX = {"metadata": {"total_size": DATA_BYTES},
              "weight_map": {t[0]: SHARDS[0 if i < HALF else 1] for i, t in enumerate(TENSORS)}}


@st.composite
def hostile_sharded(draw: st.DrawFn) -> dict[str, bytes]:
    """Index JSON mutated (shard names, missing or extra tensors, absurd totals), shards dropped or swapped."""
    files = dict(SHARD_FILES)
    if draw(st.booleans()):
        index = dump_json(draw(mutate_json(BASE_INDEX)))
    else:
        wmap = dict(BASE_INDEX["weight_map"])
        op = pick(draw, ["self", "cycle", "missing", "extra", "total"])
        name = pick(draw, sorted(wmap))
        if op == "self":  # the index names itself as a shard
            wmap[name] = "model.safetensors.index.json"
        elif op == "cycle":  # every tensor in one shard; the other shard is the index again
            files[SHARDS[1]] = json.dumps(BASE_INDEX).encode()
        elif op == "missing":
            wmap[name] = "model-00003-of-00002.safetensors"
        elif op == "extra":
            wmap[f"{name}.ghost"] = SHARDS[0]
        index = dump_json({"metadata": {"total_size": pick(draw, [-1, 0, 2**70, "big"])},
                           "weight_map": wmap})
    if draw(st.integers(0, 3)) == 0:
        del files[pick(draw, SHARDS)]
    return {**files, "model.safetensors.index.json": index}


def test_base_sharded_checkpoint_is_valid(tmp_path):
    d = model_dir(tmp_path, {**SHARD_FILES, "model.safetensors.index.json": json.dumps(BASE_INDEX).encode()})
    spec = load_spec(str(d))
    assert spec.weights.resident_bytes == DATA_BYTES
    assert spec.provenance["weights"].startswith("header (2 safetensors")


@fuzz_settings(200)
@given(hostile_sharded())
def test_fuzz_index_reader(files):
    with scratch() as d:
        model_dir(d, files)
        size = sum(len(b) for b in files.values())
        run_reader(lambda: load_spec(str(d)), [d], input_bytes=size)


@fuzz_settings(30, cli=True)
@given(hostile_sharded())
def test_fuzz_index_cli(files):
    with scratch() as d:
        model_dir(d, files)
        run_cli(["memory", str(d), "--json"], [d])


def test_every_header_and_index_field_wrong(tmp_path):
    """Each field of a two-tensor header and of the index, at extremes and wrong types, one at a time."""
    header, data = header_dict(TENSORS[:2])
    for i, (_p, _v, bad) in enumerate([*extreme_variants(header), *field_variants(header)]):
        d = tmp_path / f"h{i}"
        d.mkdir()
        blob = safetensors_bytes(dump_json(bad), data)
        model_dir(d, {"model.safetensors": blob})
        run_reader(lambda d=d: read_header(d / "model.safetensors"), [d / "model.safetensors"], trace=False)
    index = {"metadata": {"total_size": DATA_BYTES}, "weight_map": dict(list(BASE_INDEX["weight_map"].items())[:3])}
    for i, (_p, _v, bad) in enumerate([*extreme_variants(index), *field_variants(index)]):
        d = tmp_path / f"i{i}"
        d.mkdir()
        model_dir(d, {**SHARD_FILES, "model.safetensors.index.json": dump_json(bad)})
        run_reader(lambda d=d: load_spec(str(d)), [d], trace=False)
