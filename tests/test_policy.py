"""Policy parsing (strict keys, types, sizes), JUnit rendering, atomic writes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from planner.atomic import atomic_write
from planner.errors import ConfigError, UsageError
from planner.junit import Case, render
from planner.policy import load_policy

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
