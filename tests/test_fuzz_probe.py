"""Probe safety: a real out-of-memory failure is reported as one line, memory is given back, state restored.

The memory check before allocating is bypassed on purpose (`ProbeSettings.memory_bytes` claims 1 PB),
and the child process's address space is capped, so torch's CPU allocator really fails mid-build.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = """
import json, resource
import torch
from planner.core.errors import UsageError
from planner.probe.runner import run_synthetic
from planner.probe.settings import ProbeSettings
from planner.sources import load_spec

spec = load_spec("llama-3.1-8b")  # ~16 GB of bf16 weights: far above the cap below
threads = torch.get_num_threads()
vm = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (vm + 1536 * 2**20, resource.getrlimit(resource.RLIMIT_AS)[1]))
st = ProbeSettings(device="cpu", mode="full", memory_bytes=10**15, budget_s=60, max_k=1, context=16, repeats=1,
                   warmup=0, threads=1)
msg = None
try:
    run_synthetic(spec, None, st)
except UsageError as e:
    msg = str(e)
after = bytearray(1024 * 2**20)  # fits under the same cap only if the failed build's tensors were freed
print(json.dumps({"msg": msg, "threads": torch.get_num_threads() == threads, "after": len(after)}))
"""


def test_out_of_memory_is_one_line_and_memory_is_released():
    pytest.importorskip("torch", reason="the probe needs torch (extra 'probe')")
    if not Path("/proc/self/statm").exists():
        pytest.skip("the address-space cap needs Linux /proc")
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300,
                       cwd=Path(__file__).parent.parent)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["msg"] and "\n" not in out["msg"], out
    assert out["msg"].startswith("Cannot probe on 'cpu': the device ran out of memory"), out["msg"]
    assert out["threads"], "torch's thread count was not restored"
    assert out["after"] == 1024 * 2**20
