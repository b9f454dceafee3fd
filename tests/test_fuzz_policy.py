"""Fuzz the CI policy (planner.toml / [tool.planner]): TOML text and every key's value.

The base is a valid two-deployment policy on bundled catalog models (so `planner check` runs
offline). Mutations go through the parsed document (a small TOML writer puts it back) or through
the raw text, including TOML-only hostiles: dates, nan/inf, deep arrays, huge integers.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from planner.plan.policy import load_policy

from .fuzz.harness import (
    Raw,
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

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BASE_TEXT = """
[defaults]
engine = "vllm"
context = "8k"

[[deployment]]
name = "chat"
target = "qwen2.5-7b"
draft = "qwen2.5-0.5b"
machine = "h100-sxm"
k = 4
acceptance = 0.7
[deployment.require]
fits = true
min_headroom = "1GiB"
compatible = true
min_speedup = 1.1

[[deployment]]
name = "edge"
target = "llama-3.1-8b"
gpu_memory = "24GiB"
gpus = 1
engine = "llama.cpp"
[deployment.require]
min_speedup = "no_slowdown"
"""
BASE = tomllib.loads(BASE_TEXT)
TOML_RAW = ("1979-05-27T07:32:00Z", "07:32:00", "1979-05-27", "nan", "-inf", "0x7fffffffffffffff", "1_000",
            '"""a\nb"""', "{a = 1}", "[{a = 1}]", "[" * 5000 + "]" * 5000, "99999999999999999999", "'\\x'")


def _value(v: Any) -> str | None:
    if v is None:
        return None  # TOML has no null: the key is left out
    if isinstance(v, Raw):
        return {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(v.text, v.text)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(x for x in map(_value, v) if x is not None) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {x}" for k, x in ((k, _value(x)) for k, x in v.items())
                               if x is not None) + "}"
    return json.dumps(str(v))


def dump_toml(doc: Any) -> str:
    """TOML for a policy-shaped document: scalars, [tables], [[arrays of tables]], inline tables below."""
    if not isinstance(doc, dict):
        return f"value = {_value(doc)}\n"
    lines, tables = [], []
    for k, v in doc.items():
        if isinstance(v, dict):
            tables.append((f"[{json.dumps(str(k))}]", v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            tables += [(f"[[{json.dumps(str(k))}]]", x) for x in v]
        elif (text := _value(v)) is not None:
            lines.append(f"{json.dumps(str(k))} = {text}")
    for head, body in tables:
        lines.append(head)
        lines += [f"{json.dumps(str(k))} = {t}" for k, x in body.items() if (t := _value(x)) is not None]
    return "\n".join(lines) + "\n"


@st.composite
def hostile_policy(draw: st.DrawFn) -> bytes:
    kind = pick(draw, ["doc", "doc", "doc", "raw", "bytes"])
    if kind == "bytes":
        return draw(mutate_bytes(BASE_TEXT.encode()))
    if kind == "raw":  # one value's text replaced by a TOML-only literal
        lines = BASE_TEXT.splitlines()
        idx = [i for i, line in enumerate(lines) if " = " in line]
        i = pick(draw, idx)
        lines[i] = lines[i].split(" = ")[0] + " = " + pick(draw, TOML_RAW)
        return "\n".join(lines).encode()
    return dump_toml(draw(mutate_json(BASE, max_ops=3))).encode("utf-8", "surrogatepass")


def test_base_policy_is_valid_and_writer_round_trips(tmp_path):
    assert tomllib.loads(dump_toml(BASE)) == BASE
    f = tmp_path / "planner.toml"
    f.write_text(BASE_TEXT)
    pol = load_policy(f)
    assert [d.name for d in pol.deployments] == ["chat", "edge"]
    r = run_cli(["check", "--config", str(f), "--json"], [f])
    assert r.code in (0, 1) and json.loads(r.out)["results"]


@fuzz_settings(250)
@given(hostile_policy())
def test_fuzz_policy_reader(blob):
    with scratch_file("planner.toml", blob) as f:
        run_reader(lambda: load_policy(f), [f], input_bytes=len(blob))


@fuzz_settings(30, cli=True)
@given(hostile_policy())
def test_fuzz_policy_cli(blob):
    with scratch_file("planner.toml", blob) as f:
        run_cli(["check", "--config", str(f), "--json"], [f])


def test_every_field_of_a_policy_wrong(tmp_path):
    for i, (_path, _value, bad) in enumerate([*extreme_variants(BASE), *field_variants(BASE, max_depth=4)]):
        f = tmp_path / f"p{i}.toml"
        f.write_text(dump_toml(bad), encoding="utf-8", errors="surrogatepass")
        run_reader(lambda f=f: load_policy(f), [f], trace=False)
