"""Machines: the catalog schema (every entry, every figure sourced), lookup, overrides, and detection
from faked psutil / nvidia-smi / torch / sysctl answers (no GPU on the test machines)."""

from __future__ import annotations

import json
import re
import sys
from types import SimpleNamespace

import pytest

from planner.core.constants import GiB, MiB
from planner.core.errors import MachineError
from planner.fits import machine as M
from planner.fits import machine_catalog as C
from planner.fits import machine_detect as D
from planner.fits import machine_lookup as L
from planner.fits.measure_stats import Spread

from .cli_run import run_cli as run

ENTRIES = C.catalog_entries()
REQUIRED = ["rtx-3060-12gb", "rtx-3080", "rtx-3090", "rtx-4060-ti-16gb", "rtx-4070-ti-super", "rtx-4080",
            "rtx-4090", "rtx-5080", "rtx-5090", "t4", "a10", "a10g", "l4", "l40s", "a100-40gb", "a100-80gb",
            "h100-pcie", "h100-sxm", "h200", "b200", "mi300x"]
SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
# a source is a public document (URL), a tool's output, or an estimate/assumption that says so
BASIS = re.compile(r"https?://|nvidia-smi|rocm-smi|estimate|computed|assumed|preset")


def test_catalog_size_and_required_machines():
    assert len(ENTRIES) >= 30
    assert not [n for n in REQUIRED if n not in ENTRIES]
    for chip in ("m1", "m2", "m3", "m4"):
        for tier in ("", "-pro", "-max"):
            assert any(n.startswith(f"{chip}{tier}-") and n[len(chip + tier) + 1:-2].isdigit() for n in ENTRIES), \
                chip + tier
        assert chip == "m4" or any(n.startswith(f"{chip}-ultra-") for n in ENTRIES)
    assert sum(e["kind"] == "cpu" for e in ENTRIES.values()) >= 3


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_catalog_entry_schema(name):
    path = C.machines_dir() / f"{name}.json"
    e = C.read_entry(path)
    assert e["name"] == name and SLUG.match(name)
    assert e["kind"] in M.KINDS and isinstance(e["memory_bytes"], int) and e["memory_bytes"] >= 8 * GiB
    assert 50e9 <= e["bandwidth_bytes_per_s"] <= 10e12
    for key in ("memory", "bandwidth", "flops"):
        assert BASIS.search(e["sources"][key]), (key, e["sources"][key])
    flops = e["peak_flops"]
    assert set(flops) == set(M.FLOP_DTYPES)
    dense = [v for v in (flops["bf16"], flops["fp16"]) if v]
    assert dense and max(dense) <= 2.5e15  # B200 dense BF16 is 2.25 PFLOP/s: nothing sparsity-doubled
    if flops["fp8"]:
        assert flops["fp8"] >= max(dense)
    if e["kind"] == "apple":
        assert e["usable_fraction"] in (0.666667, 0.75) and BASIS.search(e["sources"]["usable_fraction"])
        assert e["memory_bytes"] % GiB == 0
    elif e["kind"] == "cpu":
        assert 0.5 < e["usable_fraction"] < 1 and e["sources"]["usable_fraction"].startswith("assumed")
    else:
        assert e["usable_fraction"] is None
    m = C.machine_from_entry(e, str(path))
    assert m.n_devices == e["devices"] and all(d.memory_bytes == e["memory_bytes"] for d in m.devices)


def test_spot_figures_match_their_sources():
    assert ENTRIES["rtx-4090"]["memory_bytes"] == 24564 * MiB  # nvidia-smi total
    assert ENTRIES["h100-sxm"]["memory_bytes"] == 81559 * MiB
    assert ENTRIES["mi300x"]["memory_bytes"] == 205_822_885_888  # rocm-smi VRAM total
    assert ENTRIES["h100-sxm"]["peak_flops"]["bf16"] == 989_500_000_000_000  # 1979 with sparsity / 2
    assert ENTRIES["rtx-4090"]["peak_flops"]["bf16"] == 165_200_000_000_000  # FP32 accumulate, Ada whitepaper
    assert ENTRIES["m2-ultra-192gb"]["memory_bytes"] == 192 * GiB
    assert ENTRIES["m2-ultra-192gb"]["bandwidth_bytes_per_s"] == 800e9
    assert ENTRIES["cpu-epyc-9654-384gb"]["bandwidth_bytes_per_s"] == 12 * 8 * 4800 * 10**6
    assert ENTRIES["8x-h100-sxm"]["devices"] == 8
    # NVLink 4: 900 GB/s per GPU in both directions = 450 GB/s each way (H100 datasheet)
    assert C.machine_from_entry(ENTRIES["8x-h100-sxm"], "x").interconnect == (450_000_000_000, 10.1e-6)


BAD = {
    "missing": {"name": "x"},
    "kind": {"kind": "tpu"},
    "flops_keys": {"peak_flops": {"bf16": 1}},
    "flops_float": {"peak_flops": {"bf16": 1.5, "fp16": None, "fp8": None, "int8": None}},
    "no_source": {"sources": {"memory": "x", "bandwidth": "", "flops": "y"}},
    "fraction": {"usable_fraction": 1.5},
    "unknown_key": {"price": 3},
    "memory": {"memory_bytes": -1},
    "devices": {"devices": 10**9},
    "interconnect_keys": {"interconnect": {"bytes_per_s": 10**9}},
    "interconnect_latency": {"interconnect": {"bytes_per_s": 10**9, "latency_s": 5}},
    "interconnect_unsourced": {"interconnect": {"bytes_per_s": 10**9, "latency_s": 1e-5}},
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_schema_rejects(case, tmp_path):
    entry = dict(ENTRIES["rtx-4090"])
    if case == "missing":
        entry = BAD[case]
    else:
        entry.update(BAD[case])
    p = tmp_path / "box.json"
    p.write_text(json.dumps(entry))
    with pytest.raises(MachineError) as e:
        L.get_machine(str(p))
    assert str(e.value).startswith(f"Cannot read machine from '{p}'")


def test_lookup_file_and_overrides(tmp_path):
    m = L.get_machine("RTX-4090")
    assert m.name == "rtx-4090" and m.origin == "catalog" and m.memory_bytes == 24564 * MiB
    entry = dict(ENTRIES["l4"], name="my-box", devices=4)
    p = tmp_path / "my-box.json"
    p.write_text(json.dumps(entry))
    f = L.get_machine(str(p))
    assert f.origin == "file" and f.n_devices == 4
    o = M.with_overrides(m, memory_bytes=20 * GiB, n_devices=3)
    assert [d.memory_bytes for d in o.devices] == [20 * GiB] * 3 and [d.index for d in o.devices] == [0, 1, 2]
    assert "given" in o.sources["memory"]
    with pytest.raises(MachineError, match="--gpus 0"):
        M.with_overrides(m, n_devices=0)
    with pytest.raises(MachineError, match="Did you mean rtx-4090"):
        L.get_machine("rtx-4909")
    with pytest.raises(MachineError, match="file not found"):
        L.get_machine(str(tmp_path / "nope.json"))


# --- detection with faked answers ------------------------------------------------------------

SMI = "0, NVIDIA GeForce RTX 4090, 24564, 23000\n1, NVIDIA GeForce RTX 4090, 24564, [N/A]\n"


@pytest.fixture
def host(monkeypatch):
    """A fake host: answers for commands, psutil, platform and torch are set per test."""
    state = SimpleNamespace(commands={}, torch=None, platform=("Linux", "x86_64"), torch_calls=0, gpu_nodes=True)

    def run(cmd):
        return state.commands.get(tuple(cmd))

    def import_torch():
        state.torch_calls += 1
        if state.torch is None:
            raise AssertionError("torch imported although it should not be")
        return state.torch

    monkeypatch.setattr(D, "_run", run)
    monkeypatch.setattr(D, "_virtual_memory", lambda: (64 * GiB, 40 * GiB))
    monkeypatch.setattr(D, "_platform", lambda: state.platform)
    monkeypatch.setattr(D, "_torch_installed", lambda: state.torch is not None)
    monkeypatch.setattr(D, "_import_torch", import_torch)
    monkeypatch.setattr(D, "_gpu_device_nodes", lambda: state.gpu_nodes)
    monkeypatch.setattr(D, "_cpu_name", lambda: "AMD Ryzen 9 7950X 16-Core Processor")
    return state


def fake_torch(*, cuda=None, hip=None, mps_limit=None):
    cuda_ns = SimpleNamespace(is_available=lambda: cuda is not None,
                              device_count=lambda: len(cuda or []),
                              get_device_name=lambda i: cuda[i][0],
                              mem_get_info=lambda i: (cuda[i][2], cuda[i][1]))
    mps_ns = SimpleNamespace(is_available=lambda: mps_limit is not None)
    return SimpleNamespace(cuda=cuda_ns, version=SimpleNamespace(hip=hip),
                           backends=SimpleNamespace(mps=mps_ns),
                           mps=SimpleNamespace(recommended_max_memory=lambda: mps_limit))


def test_detect_nvidia_smi_never_imports_torch(host):
    host.commands[D.NVIDIA_SMI_QUERY] = SMI
    host.torch = fake_torch(cuda=[("NVIDIA H100 80GB HBM3", 80 * GiB, 80 * GiB)])
    m = D.detect()
    assert host.torch_calls == 0
    assert m.kind == "gpu" and m.vendor == "nvidia" and m.n_devices == 2
    assert [d.memory_bytes for d in m.devices] == [24564 * MiB] * 2
    assert [d.free_bytes for d in m.devices] == [23000 * MiB, None]
    assert m.bandwidth_bytes_per_s == 1008 * 10**9 and "rtx-4090" in m.notes[0]  # matched in the catalog
    assert m.host_memory_bytes == 64 * GiB and m.display_name == "2 x NVIDIA GeForce RTX 4090"


def test_detect_cuda_through_torch(host):
    host.torch = fake_torch(cuda=[("NVIDIA A100-SXM4-80GB", 81920 * MiB, 70 * GiB)])
    m = D.detect()
    assert host.torch_calls == 1
    assert m.kind == "gpu" and m.vendor == "nvidia" and m.devices[0].free_bytes == 70 * GiB
    assert m.bandwidth_bytes_per_s == 2039 * 10**9 and m.sources["memory"] == "torch.cuda.mem_get_info"
    # the speed model's chip facts come with the catalog match: HBM (llama.cpp's own share there)
    assert m.memory_type == "hbm" and m.sources["memory_type"].startswith("catalog a100-80gb: HBM2e")


def test_detect_rocm_through_torch(host):
    host.torch = fake_torch(cuda=[("AMD Instinct MI300X", 205_822_885_888, 200 * GiB)], hip="6.2")
    m = D.detect()
    assert m.vendor == "amd" and m.memory_bytes == 205_822_885_888
    assert m.peak_flops["bf16"] == ENTRIES["mi300x"]["peak_flops"]["bf16"]


def test_detect_apple_through_torch_mps(host):
    host.platform = ("Darwin", "arm64")
    host.commands[("sysctl", "-n", "machdep.cpu.brand_string")] = "Apple M2 Max\n"
    host.torch = fake_torch(mps_limit=48 * GiB)
    m = D.detect()
    assert m.kind == "apple" and m.memory_bytes == 64 * GiB
    assert m.usable_fraction == 0.75 and m.devices[0].free_bytes == 40 * GiB
    assert m.bandwidth_bytes_per_s == 400 * 10**9  # matched m2-max-64gb
    assert m.gpu_cores == ENTRIES["m2-max-64gb"]["gpu_cores"] and m.memory_type is None


def test_detect_apple_without_torch(host):
    host.platform = ("Darwin", "arm64")
    host.commands[("sysctl", "-n", "machdep.cpu.brand_string")] = "Apple M3 Max\n"
    host.commands[("sysctl", "-n", "iogpu.wired_limit_mb")] = "0\n"
    m = D.detect()
    assert host.torch_calls == 0 and m.kind == "apple" and m.usable_fraction == 0.75  # 64 GiB default
    host.commands[("sysctl", "-n", "iogpu.wired_limit_mb")] = "57344\n"  # user raised it to 56 GiB
    m = D.detect()
    assert m.usable_fraction == 57344 * MiB / (64 * GiB)


def test_detect_cpu_only(host, monkeypatch):
    monkeypatch.setattr(D, "measure_bandwidth", lambda: Spread(12.5e9, 12.5e9, 12.5e9, 7, 7, 0.5, "thread CPU time"))
    m = D.detect()
    assert m.kind == "cpu" and m.memory_bytes == 64 * GiB and m.devices[0].free_bytes == 40 * GiB
    # an uncatalogued CPU gets a measured copy bandwidth (labelled) so the roofline can run
    assert m.display_name.startswith("AMD Ryzen 9 7950X") and m.bandwidth_bytes_per_s == 12_500_000_000
    assert m.sources["bandwidth"].startswith("measured") and m.sources["flops"].startswith("estimate")
    assert L.get_machine("auto").kind == "cpu"
    host.torch = fake_torch()  # torch installed, but no accelerator
    assert D.detect().kind == "cpu" and host.torch_calls == 1
    assert D.detect(use_torch=False).kind == "cpu" and host.torch_calls == 1
    host.gpu_nodes = False  # no /dev/nvidia* or /dev/kfd: torch is not even imported
    assert D.detect().kind == "cpu" and host.torch_calls == 1


def test_parse_nvidia_smi():
    devs = D.parse_nvidia_smi("3, NVIDIA A100-SXM4-80GB, 81920, 81000\n")
    assert devs[0].index == 3 and devs[0].name == "NVIDIA A100-SXM4-80GB" and devs[0].free_bytes == 81000 * MiB
    with pytest.raises(MachineError, match="Cannot read nvidia-smi output"):
        D.parse_nvidia_smi("garbage\n")
    with pytest.raises(MachineError, match="must be"):
        D.parse_nvidia_smi("0, GPU, lots, 1\n")


def test_run_is_bounded_and_quiet():
    assert D._run(("definitely-not-a-command-xyz",)) is None
    assert D._run((sys.executable, "-c", "print('hi')")).strip() == "hi"
    assert D._run((sys.executable, "-c", "raise SystemExit(3)")) is None


# --- CLI ----------------------------------------------------------------------------------------


def test_cli_machines(capsys, host):
    code, out, _ = run(["machines", "list", "--json"], capsys)
    assert code == 0 and len(json.loads(out)) == len(ENTRIES)
    code, out, _ = run(["machines", "list"], capsys)
    assert code == 0 and "rtx-4090" in out and "m3-max-36gb" in out
    code, out, _ = run(["machines", "show", "h200", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["memory_bytes"] == 143771 * MiB and data["sources"]["bandwidth"]
    code, out, _ = run(["machines", "show", "h200", "-v"], capsys)  # the citations behind -v
    assert code == 0 and "source (flops)" in out
    code, _, err = run(["machines", "show", "nope"], capsys)
    assert code == 2 and err.startswith("error: Cannot find machine 'nope'")
    host.commands[D.NVIDIA_SMI_QUERY] = SMI
    code, out, _ = run(["machines", "detect", "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["devices"] == 2 and data["device_list"][1]["free_bytes"] is None
    code, out, _ = run(["machines", "detect"], capsys)
    assert code == 0 and "device 1: NVIDIA GeForce RTX 4090" in out
