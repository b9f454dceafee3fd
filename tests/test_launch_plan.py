"""The launch command printed anywhere is the plan (issue #31 item 3): full model ids, never a catalog
alias; the quantisation the plan chose, with its convert step where the engine needs one."""

from __future__ import annotations

import json
import shlex

from .cli_run import run_cli as run

TARGET, DRAFT = "llama-3.1-8b-instruct", "llama-3.2-1b-instruct"


def recommend_launch(capsys, *args):
    code, out, err = run(["recommend", *args, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)["recommendation"]["launch"]


def test_report_launches_the_full_draft_id_as_recommend_does(tmp_path, capsys):
    out = tmp_path / "r.md"
    code, _, err = run(["report", TARGET, "--draft", DRAFT, "--machine", "rtx-4090", "--machine", "m3-max-36gb",
                        "--out", str(out)], capsys)
    assert code == 0, err
    md = out.read_text()
    cmds = [ln for ln in md.splitlines() if ln.startswith(("vllm serve", "llama-server"))]
    assert len(cmds) == 2
    for cmd in cmds:
        assert DRAFT not in cmd  # the alias no engine resolves
    vllm = next(c for c in cmds if c.startswith("vllm"))
    config = json.loads(shlex.split(vllm)[shlex.split(vllm).index("--speculative-config") + 1])
    rec = recommend_launch(capsys, TARGET, "--candidates", DRAFT, "--machine", "rtx-4090", "--engine", "vllm")
    assert config["model"] == json.loads(rec["speculative_config"])["model"] == "meta-llama/Llama-3.2-1B-Instruct"
    assert "-md Llama-3.2-1B-Instruct-F16.gguf" in next(c for c in cmds if c.startswith("llama-server"))


def _flag(cmd: str, name: str) -> str:
    words = shlex.split(cmd)
    return words[words.index(name) + 1]


def test_an_mlx_plan_at_fewer_bits_converts_first_and_serves_what_it_converted(capsys):
    launch = recommend_launch(capsys, "qwen2.5-7b-instruct", "--candidates", "qwen2.5-0.5b-instruct",
                              "--machine", "m3-max-36gb", "--engine", "mlx", "--weights-dtype", "int4")
    target_step, draft_step = launch["convert"].split(" && ")
    assert _flag(target_step, "--hf-path") == "Qwen/Qwen2.5-7B-Instruct" and _flag(target_step, "--q-bits") == "4"
    assert _flag(draft_step, "--hf-path") == "Qwen/Qwen2.5-0.5B-Instruct" and _flag(draft_step, "--q-bits") == "4"
    assert _flag(launch["command"], "--model") == _flag(target_step, "--mlx-path")
    assert _flag(launch["command"], "--draft-model") == _flag(draft_step, "--mlx-path")


def test_an_mlx_plan_that_must_quantise_to_fit_launches_the_quantised_folder(capsys):
    # independently: at its own bf16 the 30B MoE + 0.6B draft does not fit a 64 GB M4 Max
    code, out, _ = run(["fit", "qwen3-30b-a3b", "--draft", "qwen3-0.6b", "--machine", "m4-max-64gb", "--engine",
                        "mlx", "--json"], capsys)
    assert code == 1 and json.loads(out)["fits"] is False
    launch = recommend_launch(capsys, "qwen3-30b-a3b", "--machine", "m4-max-64gb", "--engine", "mlx")
    step = launch["convert"].split(" && ")[0]
    assert _flag(step, "--hf-path") == "Qwen/Qwen3-30B-A3B" and _flag(step, "--q-bits") in ("8", "4")
    assert _flag(launch["command"], "--model") == _flag(step, "--mlx-path") != "Qwen/Qwen3-30B-A3B"


def test_a_16_bit_mlx_plan_has_no_convert_step(capsys):
    launch = recommend_launch(capsys, "qwen2.5-7b-instruct", "--candidates", "qwen2.5-0.5b-instruct",
                              "--machine", "m3-max-36gb", "--engine", "mlx")
    assert "convert" not in launch and _flag(launch["command"], "--model") == "Qwen/Qwen2.5-7B-Instruct"
