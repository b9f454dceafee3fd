"""recommend --profile: a warning when the profile's backend or dtype is not what the printed command runs."""

from __future__ import annotations

import json

import pytest

from planner import engines
from planner.cli import main

from .conftest import FIXTURES

PROFILE = FIXTURES / "probe" / "profile-cpu.json"  # torch-synthetic (cpu), BF16, Llama-3.1-8B


def _err(args, capsys):
    with pytest.raises(SystemExit):
        main(args)
    return capsys.readouterr().err


def _with_backend(tmp_path, backend):
    d = json.loads(PROFILE.read_text())
    d["backend"] = backend
    p = tmp_path / "p.json"
    p.write_text(json.dumps(d))
    return str(p)


def test_measured_by_maps_backends_to_engines():
    assert engines.measured_by("llama.cpp (cuda)") == "llama.cpp"
    assert engines.measured_by("transformers (cpu)") == "transformers"
    assert engines.measured_by("torch-synthetic (cuda)") is None


def test_synthetic_profile_for_a_vllm_command_warns(capsys):
    err = _err(["recommend", "llama-3.1-8b", "--machine", "rtx-4090", "--engine", "vllm", "--profile", str(PROFILE)],
               capsys)
    assert "measured with torch-synthetic (cpu), and the command runs vllm" in err


def test_matching_backend_and_dtype_do_not_warn(tmp_path, capsys):
    p = _with_backend(tmp_path, "llama.cpp (cpu)")
    err = _err(["recommend", "llama-3.1-8b", "--machine", "cpu-ryzen-9-7950x-64gb", "--engine", "llama.cpp",
                "--profile", p], capsys)
    assert "the command runs" not in err and "measured at" not in err
    err = _err(["recommend", "llama-3.1-8b", "--machine", "cpu-ryzen-9-7950x-64gb", "--engine", "llama.cpp",
                "--weights-dtype", "q4_k", "--profile", p], capsys)
    assert "the profile was measured at BF16, the plan sizes weights as q4_k" in err
