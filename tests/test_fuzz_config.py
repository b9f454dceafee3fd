"""Fuzz config.json (and generation_config.json): every reference config, mutated field by field.

Base inputs: the real public configs in tests/fixtures/configs (29 architectures, including a
multimodal wrapper with text_config/vision_config), so mutations reach every arch module's
`Args.from_dict` type and range checks and every `to_spec`.
"""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.sources import load_spec, spec_from_located
from planner.sources.located import Located

from .conftest import CONFIGS
from .fuzz.harness import (
    WRONG_TYPES,
    dump_json,
    field_variants,
    fuzz_examples,
    fuzz_settings,
    mutate_bytes,
    mutate_json,
    numeric_leaves,
    pick,
    run_cli,
    run_reader,
    scratch,
)

BASES = {p.stem: json.loads(p.read_text()) for p in sorted(CONFIGS.glob("*.json"))}
NAMES = sorted(BASES)
GENERATION = {"bos_token_id": 1, "eos_token_id": [2, 7], "do_sample": True, "temperature": 0.6}


@st.composite
def hostile_config(draw: st.DrawFn) -> dict[str, bytes]:
    """config.json mutated (types, sizes, NaN, nesting, missing keys), sometimes a hostile generation_config."""
    base = BASES[pick(draw, NAMES)]
    if draw(st.integers(0, 4)) == 0:
        cfg = draw(mutate_bytes(json.dumps(base, indent=1).encode()))
    else:
        cfg = dump_json(draw(mutate_json(base, max_ops=4)))
    files = {"config.json": cfg}
    if draw(st.integers(0, 3)) == 0:
        files["generation_config.json"] = dump_json(draw(mutate_json(GENERATION)))
    return files


def _write(d, files):
    for name, data in files.items():
        (d / name).write_bytes(data)


def test_every_base_config_is_valid(tmp_path):
    for name, cfg in BASES.items():
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(json.dumps(cfg))
        spec = load_spec(str(d))
        assert spec.weights.resident_bytes > 0 and spec.layers, name


@fuzz_settings(300)
@given(hostile_config())
def test_fuzz_config_reader(files):
    with scratch() as d:
        _write(d, files)
        run_reader(lambda: load_spec(str(d)), [d / n for n in files], input_bytes=sum(map(len, files.values())))


@fuzz_settings(30, cli=True)
@given(hostile_config())
def test_fuzz_config_cli(files):
    with scratch() as d:
        _write(d, files)
        run_cli(["memory", str(d), "--json", "--context", "4096"], [d / n for n in files])


# --- every numeric field, one at a time, at an extreme value ------------------------------------
# Random mutation rarely reaches one deep field with one bad value (vision_config.depth = 10**7 made
# the block loop allocate until the OOM killer came); this sweep visits each of them.

SWEEP_VALUES = (2**40,) if fuzz_examples() is None else (0, -1, 2**31, 2**40, 2**63, 1e300, -0.5, math.nan)
# Representative architectures (dense, multimodal wrapper, MLA+MoE, sinks+MXFP4, hybrid SSM, sliding
# window, linear attention, Mamba2 MoE); a long run (SPEC_PLANNER_FUZZ_EXAMPLES) sweeps all 29.
FIELD_CONFIGS = ("Llama-3.1-8B", "Qwen3.5-35B-A3B", "DeepSeek-V3", "gpt-oss-20b", "Falcon-H1-0.5B",
                 "gemma-3-1b-it", "Qwen3-Next-80B-A3B-Thinking", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
SWEPT = FIELD_CONFIGS if fuzz_examples() is None else NAMES


@pytest.mark.parametrize("name", SWEPT)
def test_every_numeric_field_at_an_extreme(name):
    base = BASES[name]
    origin = f"/models/{name}/config.json"
    for path in numeric_leaves(base):
        for value in SWEEP_VALUES:
            cfg = copy.deepcopy(base)
            node = cfg
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = value
            loc = Located(ref=name, source="local", config=cfg, config_origin=origin)
            run_reader(lambda loc=loc: spec_from_located(loc), [origin], trace=False)


# --- every field of representative configs at a wrong type, or deleted --------------------------

FIELD_VALUES = (None, "x", -1) if fuzz_examples() is None else WRONG_TYPES


@pytest.mark.parametrize("name", SWEPT)
def test_every_field_at_a_wrong_type(name):
    origin = f"/models/{name}/config.json"
    for _path, _value, cfg in field_variants(BASES[name], FIELD_VALUES, max_depth=2):
        loc = Located(ref=name, source="local", config=cfg, config_origin=origin)
        run_reader(lambda loc=loc: spec_from_located(loc), [origin], trace=False)
