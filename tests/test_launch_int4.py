"""An int4 plan on vLLM or SGLang serves an int4 checkpoint, on every face that prints a launch (#31 Done
when 3): a catalogued AWQ/GPTQ repo with the engine's Marlin flag, else llm-compressor's convert step
and the folder it writes. `planner check` prints no launch command (its table judges requirements).

Why: vLLM and SGLang do not quantise a 16-bit checkpoint to AWQ/GPTQ at load; the commands once
served the 16-bit model with a note. What a command must hold is read here from the catalog file and
from the engines' documented flag names (vLLM QuantizationMethods / SGLang QUANTIZATION_CHOICES:
"awq_marlin", "gptq_marlin", "compressed-tensors"), not from the planner's own output.
"""

from __future__ import annotations

import ast
import json
import shlex
from pathlib import Path

import pytest

from planner.cli import main
from planner.sources import quantised

CATALOG = json.loads((Path(__file__).resolve().parents[1] / "catalogs/quantised/int4.json").read_text())
FLAG = {"awq": "awq_marlin", "gptq": "gptq_marlin"}  # the engines' Marlin kernels for each format


def _repo(base: str) -> dict:
    return next(r for r in CATALOG["repos"] if r["base"] == base)  # the first listed wins


def run(capsys, *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        main(list(args))
    return int(e.value.code or 0), capsys.readouterr().out


def launch(capsys, *args: str) -> dict:
    code, out = run(capsys, "recommend", *args, "--json")
    assert code == 0
    return json.loads(out)["recommendation"]["launch"]


def _served(cmd: str, model_flag: str | None) -> tuple[str, str]:
    """(model the command serves, its --quantization value)."""
    words = shlex.split(cmd)
    model = words[words.index(model_flag) + 1] if model_flag else words[2]
    return model, words[words.index("--quantization") + 1]


def test_every_catalogued_repo_is_a_real_id_with_its_source():
    entries = quantised.entries()
    assert len(entries) == len(CATALOG["repos"]) == 6
    for e in entries:
        assert e.repo.count("/") == 1 and e.source.startswith("https://")
        assert e.method in FLAG and e.bits == 4 and e.group_size == 128  # the ledger's int4 group (Settings)


@pytest.mark.parametrize("target, base", [("qwen2.5-32b-instruct", "Qwen/Qwen2.5-32B-Instruct"),
                                          ("llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct")])
def test_vllm_int4_serves_the_catalogued_checkpoint(capsys, target, base):
    out = launch(capsys, target, "--machine", "rtx-4090", "--engine", "vllm", "--weights-dtype", "int4")
    repo = _repo(base)
    assert _served(out["command"], None) == (repo["repo"], FLAG[repo["method"]])
    assert base not in shlex.split(out["command"])  # never the 16-bit model
    assert json.dumps(base) not in out.get("convert", "")  # nor a convert of it (the draft's may be there)
    assert "weights sized as" not in out.get("note", "")


def test_the_72b_prefers_the_awq_repo_on_sglang(capsys):
    # two catalogued (AWQ, GPTQ): the AWQ one stores no g_idx, as the ledger's int4 counts
    out = launch(capsys, "qwen2.5-72b-instruct", "--machine", "2x-rtx-4090", "--engine", "sglang",
                 "--weights-dtype", "int4")
    assert _served(out["command"], "--model-path") == ("Qwen/Qwen2.5-72B-Instruct-AWQ", "awq_marlin")
    assert "--torchao-config" not in out["command"]


def test_an_uncatalogued_int4_target_converts_then_serves_the_folder_written(capsys):
    out = launch(capsys, "qwen2.5-14b-instruct", "--machine", "rtx-4090", "--engine", "vllm",
                 "--weights-dtype", "int4")
    steps = [shlex.split(step) for step in out["convert"].split(" && ")]  # the target's first, then the draft's
    assert all(step[:2] == ["python", "-c"] and len(step) == 3 for step in steps)
    call = ast.parse(steps[0][2]).body[-1].value  # oneshot(model=..., recipe=GPTQModifier(scheme="W4A16"), ...)
    kw = {k.arg: k.value for k in call.keywords}
    assert ast.literal_eval(kw["model"]) == "Qwen/Qwen2.5-14B-Instruct"
    assert {k.arg: ast.literal_eval(k.value) for k in kw["recipe"].keywords}["scheme"] == "W4A16"
    written = ast.literal_eval(kw["output_dir"])
    assert _served(out["command"], None) == (written, "compressed-tensors")


def test_recommend_text_prints_the_same_command_and_pastes_back(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, text = run(capsys, "recommend", "qwen2.5-14b-instruct", "--machine", "rtx-4090", "--engine", "vllm",
                     "--weights-dtype", "int4")
    assert code == 0 and max(len(line) for line in text.splitlines()) <= 80
    # what the user pastes: the lines between one heading and the next (the program's own lines start at
    # column 0 inside its quotes, so the headings are found by name)
    convert = text.split("\nconvert:\n", 1)[1].split("\ncommand:\n", 1)[0]
    after = text.split("\ncommand:\n", 1)[1].splitlines()
    command = "\n".join(after[:next(i for i, ln in enumerate(after) if not ln.startswith("  "))])

    want = launch(capsys, "qwen2.5-14b-instruct", "--machine", "rtx-4090", "--engine", "vllm",
                  "--weights-dtype", "int4")
    step = shlex.split(convert)
    assert step[:2] == ["python", "-c"]
    assert ast.dump(ast.parse(step[2])) == ast.dump(ast.parse(shlex.split(want["convert"])[2]))
    pasted = shlex.split(command.replace("\\\n", " "))  # the shell drops a backslash-newline
    spec = pasted.index("--speculative-config") + 1
    wanted = shlex.split(want["command"])
    assert pasted[:spec] == wanted[:spec] and json.loads(pasted[spec]) == json.loads(wanted[spec])


def test_report_and_fleet_launch_the_quantised_repo(capsys, tmp_path):
    repo = _repo("Qwen/Qwen2.5-32B-Instruct")
    out = tmp_path / "r.md"
    code, _ = run(capsys, "report", "qwen2.5-32b-instruct", "--machine", "rtx-4090", "--engine", "vllm",
                  "--weights-dtype", "int4", "--out", str(out))
    assert code == 0
    cmds = [ln for ln in out.read_text().splitlines() if ln.startswith("vllm serve")]
    assert cmds and all(_served(c, None) == (repo["repo"], FLAG[repo["method"]]) for c in cmds)
    # machine first: the fleet picks the weights itself; 32.8B parameters fit 24 GiB only at 4 bits (8-bit
    # weights alone are 32.8 GB > 25.8 GB), so its row is an int4 plan and must launch the int4 repo
    code, text = run(capsys, "report", "--machine", "rtx-4090", "--targets", "qwen2.5-32b-instruct",
                     "--engine", "vllm", "--json")
    assert code == 0
    rows = [r for r in _rows(json.loads(text)) if r.get("launch")]
    assert rows and all(r["weights_dtype"] == "int4" for r in rows)
    assert all(_served(r["launch"]["command"], None) == (repo["repo"], FLAG[repo["method"]]) for r in rows)


def _rows(doc: object) -> list[dict]:
    """Every object holding a "launch" key in the fleet JSON, wherever it nests."""
    if isinstance(doc, dict):
        return ([doc] if "launch" in doc else []) + [r for v in doc.values() for r in _rows(v)]
    if isinstance(doc, list):
        return [r for v in doc for r in _rows(v)]
    return []


def test_vllm_loads_the_int4_draft_the_ledger_sized(capsys):
    # --weights-dtype int4 re-sizes the draft too: its speculative config names the draft's int4 repo and
    # the format (SpeculativeConfig.quantization), never the 16-bit draft
    out = launch(capsys, "llama-3.1-70b-instruct", "--candidates", "llama-3.1-8b-instruct", "--machine", "h100-sxm",
                 "--engine", "vllm", "--weights-dtype", "int4")
    target, draft = _repo("meta-llama/Llama-3.1-70B-Instruct"), _repo("meta-llama/Llama-3.1-8B-Instruct")
    assert _served(out["command"], None) == (target["repo"], FLAG[target["method"]])
    spec = json.loads(out["speculative_config"])
    assert (spec["model"], spec["quantization"]) == (draft["repo"], FLAG[draft["method"]])


def test_an_uncatalogued_int4_draft_is_converted_too(capsys):
    out = launch(capsys, "qwen2.5-32b-instruct", "--candidates", "qwen2.5-0.5b-instruct", "--machine", "rtx-4090",
                 "--engine", "vllm", "--weights-dtype", "int4")
    (step,) = out["convert"].split(" && ")  # the 32B has a catalogued repo: only the draft converts
    call = ast.parse(shlex.split(step)[2]).body[-1].value
    kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg in ("model", "output_dir")}
    assert kw["model"] == "Qwen/Qwen2.5-0.5B-Instruct"
    spec = json.loads(out["speculative_config"])
    assert (spec["model"], spec["quantization"]) == (kw["output_dir"], "compressed-tensors")


def test_the_int4_ledger_is_the_size_of_the_checkpoint_it_serves(capsys):
    # Qwen/Qwen2.5-32B-Instruct-AWQ's five shards as the Hub lists them (GB, rounded to 10 MB each:
    # https://huggingface.co/Qwen/Qwen2.5-32B-Instruct-AWQ/tree/251a85a7dfd47d23dc308c69d2df71cf75b338f5):
    # 3.94 + 3.98 + 3.95 + 3.98 + 3.48 = 19.33 GB, +-25 MB. The ledger at int4 sizes that format (4-bit
    # weights, fp16 scales and zeros per 128 inputs, embeddings and lm_head kept 16-bit).
    with pytest.raises(SystemExit):
        main(["memory", "qwen2.5-32b-instruct", "--weights-dtype", "int4", "--engine", "vllm", "--json"])
    weights = json.loads(capsys.readouterr().out)["models"][0]["weights_bytes"]
    shards = [3.94e9, 3.98e9, 3.95e9, 3.98e9, 3.48e9]
    assert abs(weights - sum(shards)) <= 5 * 0.005e9


def test_sglang_loads_the_int4_draft_with_its_own_quantisation_flag(capsys):
    # SGLang's draft takes --speculative-draft-model-quantization, never the target's --quantization
    out = launch(capsys, "llama-3.1-70b-instruct", "--candidates", "llama-3.1-8b-instruct", "--machine", "h100-sxm",
                 "--engine", "sglang", "--weights-dtype", "int4")
    draft = _repo("meta-llama/Llama-3.1-8B-Instruct")
    words = shlex.split(out["command"])
    assert words[words.index("--speculative-draft-model-path") + 1] == draft["repo"]
    assert words[words.index("--speculative-draft-model-quantization") + 1] == FLAG[draft["method"]]


def test_sglang_sizes_an_uncatalogued_draft_as_stored_because_it_loads_it_so(capsys):
    # no int4 checkpoint of Qwen2.5-7B (base) is catalogued, and SGLang cannot quantise a draft on its own
    # (Engine.draft_int4_needs_checkpoint): the command loads it as stored, so the ledger must size it so.
    # Truth: Qwen/Qwen2.5-7B's model.safetensors.index.json total_size, 15,231,233,024 B (bf16 as stored).
    assert quantised.int4_repo("Qwen/Qwen2.5-7B") is None
    code, out = run(capsys, "recommend", "qwen2.5-32b-instruct", "--candidates", "qwen2.5-7b", "--machine",
                    "h100-sxm", "--engine", "sglang", "--weights-dtype", "int4", "--json")
    assert code == 0
    plan = json.loads(out)["plans"][0]
    assert plan["draft"] == "Qwen/Qwen2.5-7B"
    assert plan["draft_weights_bytes"] == 15_231_233_024
    words = shlex.split(plan["launch"]["command"])
    assert words[words.index("--speculative-draft-model-path") + 1] == "Qwen/Qwen2.5-7B"
    assert "--speculative-draft-model-quantization" not in words
    assert "sizes it so" in plan["launch"]["note"]
