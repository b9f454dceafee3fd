"""The launch command recommend prints is the plan (#31 item 3): full model ids, the quantisation the
plan sized as a flag the engine takes (or the convert steps that write the files it loads).

Why: commands once named catalog aliases and served 16-bit checkpoints for int4 plans. Each case is
a catalogued pair as a user runs it; what the command must hold is read from the engine's own
documented flags (engines/*.py cite them), not from the planner's output.
"""

from __future__ import annotations

import json
import shlex

import pytest

from planner.cli import main


def plan(capsys, *args):
    with pytest.raises(SystemExit):
        main(["recommend", *args, "--json"])
    return json.loads(capsys.readouterr().out)["recommendation"]


def _written(step: str) -> str:
    argv = shlex.split(step)
    return argv[2] if argv[0] == "llama-quantize" else argv[argv.index("--outfile") + 1]


@pytest.mark.parametrize("engine, machine, dtype, flag", [
    ("vllm", "rtx-4090", "fp8", "--quantization fp8"),
    ("vllm", "rtx-4090", "nf4", "--quantization bitsandbytes"),
    ("sglang", "rtx-4090", "int4", "--torchao-config int4wo-128"),
    ("sglang", "h100-sxm", "int8", "--torchao-config int8wo"),
])
def test_server_engines_quantise_as_planned(capsys, engine, machine, dtype, flag):
    rec = plan(capsys, "qwen2.5-14b-instruct", "--draft", "qwen2.5-0.5b-instruct", "--machine", machine,
               "--engine", engine, "--weights-dtype", dtype)
    cmd = rec["launch"]["command"]
    assert flag in cmd
    assert "Qwen/Qwen2.5-14B-Instruct" in shlex.split(cmd)  # the full id, never the alias
    if rec["draft"]:  # the draft by its id (speculative config or flag); plain decoding names none
        assert rec["draft"] == "Qwen/Qwen2.5-0.5B-Instruct" and rec["draft"] in cmd
    assert "weights sized as" not in rec["launch"].get("note", "")  # nothing left for the user to find


def test_llamacpp_converts_then_loads_the_files_it_wrote(capsys):
    rec = plan(capsys, "llama-3.1-8b-instruct", "--draft", "llama-3.2-1b-instruct", "--machine", "m3-max-36gb",
               "--engine", "llama.cpp", "--weights-dtype", "q4_k")
    steps = rec["launch"]["convert"].split(" && ")
    argv = shlex.split(rec["launch"]["command"])
    loads = [argv[argv.index(f) + 1] for f in ("-m", "-md")]
    assert loads == ["Llama-3.1-8B-Instruct-Q4_K_M.gguf", "Llama-3.2-1B-Instruct-Q4_K_M.gguf"]
    assert all(f in [_written(s) for s in steps] for f in loads)
    # the sources are the full Hub ids (convert_hf_to_gguf.py --remote REPO)
    assert "--remote meta-llama/Llama-3.1-8B-Instruct" in steps[0]
    assert "--remote meta-llama/Llama-3.2-1B-Instruct" in steps[2]

