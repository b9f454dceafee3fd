"""Policy parsing (strict keys, types, sizes), JUnit rendering, atomic writes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from planner.core.atomic import atomic_write
from planner.core.errors import ConfigError, UsageError
from planner.plan.policy import load_policy
from planner.render.junit import Case, render

GOOD = """
[defaults]
engine = "vllm"
context = "8k"

[[deployment]]
name = "chat-14b"
target = "Qwen/Qwen2.5-14B-Instruct"
draft = "Qwen/Qwen2.5-1.5B-Instruct"
machine = "h100-sxm"
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


def test_good_policy(tmp_path):
    p = tmp_path / "planner.toml"
    p.write_text(GOOD)
    pol = load_policy(p)
    a, b = pol.deployments
    assert a.engine == "vllm" and a.context == 8192 and a.machines == ("h100-sxm",)
    assert a.require.min_headroom_bytes == 2**30 and a.require.min_speedup == 1.1
    assert b.engine == "llama.cpp" and b.gpu_memory_bytes == 24 * 2**30 and b.require.min_speedup == 1.0


def test_pyproject_tool_planner(tmp_path):
    p = tmp_path / "pyproject.toml"
    p.write_text(GOOD.replace("[defaults]", "[tool.planner.defaults]").replace("[[deployment]]",
                 "[[tool.planner.deployment]]").replace("[deployment.require]", "[tool.planner.deployment.require]"))
    assert len(load_policy(p).deployments) == 2


@pytest.mark.parametrize("text,key", [
    ("[[deployment]]\nname='a'\ntarget='x'\nmachine='m'\nmin_speed_up=1.2\n", "min_speed_up"),
    ("[[deployment]]\nname='a'\ntarget='x'\nmachine='m'\n[deployment.require]\nmin_headroom='lots'\n",
     "require.min_headroom"),
    ("[[deployment]]\nname='a'\ntarget='x'\nmachine='m'\nbatch='two'\n", "batch"),
    ("[[deployment]]\nname='a'\ntarget='x'\n", "machine"),
    ("[[deployment]]\nname='a'\nmachine='m'\n", "target"),
    ("[[deployment]]\nname='a'\ntarget='x'\nmachine='m'\n[deployment.require]\nmin_speedup='fast'\n",
     "require.min_speedup"),
    ("[[deployment]]\nname='a'\ntarget='x'\nmachine='m'\nacceptance=1.5\n", "acceptance"),
    ("title = 'x'\n", "title"),
    ("deployment = [\n", None),
])
def test_bad_policy_names_key(tmp_path, text, key):
    p = tmp_path / "planner.toml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_policy(p)
    msg = str(e.value)
    assert "\n" not in msg and str(p) in msg
    if key:
        assert e.value.key == key and key.split(".")[-1] in msg


def test_junit_counts_failures():
    xml = render([Case("chat", "h100: fits", True, "headroom 5 GiB"), Case("chat", "h100: min_speedup", False,
                  "1.05 < 1.1"), Case("edge", "rtx-4090: fits", False, "over by 2 GiB"),
                  Case("edge", "rtx-4090: min_speedup", True, skipped=True, message="no profile")])
    root = ET.fromstring(xml.split("\n", 1)[1])
    assert root.get("tests") == "4" and root.get("failures") == "2" and root.get("skipped") == "1"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert suites["chat"].get("failures") == "1" and suites["edge"].get("tests") == "2"
    assert suites["chat"].find("testcase[@name='h100: min_speedup']/failure").get("message") == "1.05 < 1.1"


def test_atomic_write_and_no_clobber(tmp_path):
    out = tmp_path / "sub" / "r.json"
    atomic_write(out, "one")
    atomic_write(out, "two")
    assert out.read_text() == "two" and [p.name for p in out.parent.iterdir()] == ["r.json"]
    src = tmp_path / "planner.toml"
    src.write_text("x")
    with pytest.raises(UsageError, match="also an input"):
        atomic_write(src, "y", inputs=[src])
    assert src.read_text() == "x"


EXTENDED = """
[defaults]
machines = ["h100-sxm", "rtx-4090"]
max_k = 6

[[deployment]]
name = "a"
target = "x"
engine = "llama-cpp"
acceptance = "tau=2.8@4"
k = 4
kv_dtype = "q8_0"
profile = { "h100-sxm" = "p/h100.json", "rtx-4090" = "/abs/4090.json" }
[deployment.require]
compatible = "allow_fallback"
speedup_estimate = "pessimistic"
max_total_memory = "60GiB"

[[deployment]]
name = "b"
target = "y"
machine = "l4"
profile = "one.json"
acceptance = 1
"""


def test_extended_keys(tmp_path):
    p = tmp_path / "planner.toml"
    p.write_text(EXTENDED)
    a, b = load_policy(p).deployments
    assert a.engine == "llama.cpp" and a.machines == ("h100-sxm", "rtx-4090") and a.max_k == 6 and a.k == 4
    assert a.gpus is None and a.tp is None and a.pp is None  # the machine's devices and the engine's layout
    assert a.require.compatible and a.require.allow_fallback and a.require.speedup_estimate == "pessimistic"
    assert a.require.max_total_bytes == 60 * 2**30 and a.acceptance == "tau=2.8@4"
    assert a.profile_for("h100-sxm") == str(tmp_path / "p" / "h100.json")
    assert a.profile_for("rtx-4090") == "/abs/4090.json" and a.profile_for("l4") is None
    assert b.machines == ("l4",) and b.profile_for("l4") == str(tmp_path / "one.json") and b.acceptance == 1
    assert not b.require.allow_fallback and b.require.speedup_estimate == "expected"


@pytest.mark.parametrize("extra,key", [
    ("engine = 'tensorrt'\n", "engine"),
    ("kv_dtype = 'fp7'\n", "kv_dtype"),
    ("weights_dtype = 'int3'\n", "weights_dtype"),
    ("acceptance = 'lots'\n", "acceptance"),
    ("k = 9\nmax_k = 8\n", "k"),
    ("max_k = 0\n", "max_k"),
    ("profile = { h100 = 3 }\n", "profile.h100"),
    ("[deployment.require]\ncompatible = 'mostly'\n", "require.compatible"),
    ("[deployment.require]\nspeedup_estimate = 'optimistic'\n", "require.speedup_estimate"),
])
def test_extended_keys_rejected(tmp_path, extra, key):
    p = tmp_path / "planner.toml"
    p.write_text("[[deployment]]\nname='a'\ntarget='x'\nmachine='m'\n" + extra)
    with pytest.raises(ConfigError) as e:
        load_policy(p)
    assert e.value.key == key and "\n" not in str(e.value) and "deployment 'a'" in str(e.value)


def test_machine_and_machines_together_rejected(tmp_path):
    p = tmp_path / "planner.toml"
    p.write_text("[[deployment]]\nname='a'\ntarget='x'\nmachine='l4'\nmachines=['a10']\n")
    with pytest.raises(ConfigError) as e:
        load_policy(p)
    assert e.value.key == "machines" and "both machine and machines" in str(e.value)
