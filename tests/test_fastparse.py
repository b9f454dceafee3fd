"""Option values without pydantic (commands/_fastparse.py): the same values and the same errors as typer's
own converter, and a `planner memory` run that never imports pydantic.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from planner.cli import main


def _run(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_memory_run_does_not_import_pydantic(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
                               "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
                               "torch_dtype": "bfloat16"}))
    code = ("import sys\nfrom planner.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('pydantic' in sys.modules, 'typer._adapters' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code, "memory", str(tmp_path), "--context", "8k", "--batch", "2"],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.split("\n")[-2] == "False False", r.stdout + r.stderr
    assert "8,192 tok x 2" in r.stdout  # the values arrived converted


def test_values_convert_as_typer_does(capsys):
    _, out, _ = _run(["fit", "llama-3.1-8b", "--machine", "rtx-4090", "--engine", "vllm", "--utilization", "0.8",
                         "--gpus", "2", "--tp", "2", "--json"], capsys)
    d = json.loads(out)
    assert d["tp"] == 2 and len(d["devices"]) == 2
    assert d["devices"][0]["budget_bytes"] == int(d["devices"][0]["memory_bytes"] * 0.8) - d["margin_bytes"]


@pytest.mark.parametrize("args, message", [
    (["--gpus", "0"], "Input should be greater than or equal to 1"),  # out of range: typer's own check
    (["--gpus", "two"], "Input should be a valid integer"),
    (["--utilization", "x"], "Input should be a valid number"),
])
def test_bad_values_get_typers_error(args, message, capsys):
    code, _, err = _run(["fit", "llama-3.1-8b", *args], capsys)
    assert code == 2 and message in err
