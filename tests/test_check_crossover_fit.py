"""`max_crossover_below` cannot pass where the deployment does not fit, and prints as a concurrency (issue #31 item 9).

The user's check: Qwen2.5-32B + 0.5B on one RTX 4090 at 32k context with `max_crossover_below = 16` printed
the bound as "16 B" and PASSed although every batch of the curve was "does not fit".
"""

from __future__ import annotations

import json

from planner.render.check_values import format_value

from .cli_run import run_cli as run
from .test_check import deployment, policy

TARGET, DRAFT = "qwen2.5-32b-instruct", "qwen2.5-0.5b-instruct"


def test_crossover_fails_where_the_deployment_does_not_fit(tmp_path, capsys):
    # independently: planner fit says the deployment does not fit even one sequence
    code, out, _ = run(["fit", TARGET, "--draft", DRAFT, "--machine", "rtx-4090", "--engine", "vllm",
                        "--context", "32768", "--json"], capsys)
    assert code == 1 and json.loads(out)["fits"] is False
    p = policy(tmp_path, deployment(target=TARGET, draft=DRAFT, machine="rtx-4090", engine="vllm",
                                    extra="context = 32768\n", require="max_crossover_below = 16\n"))
    code, out, _ = run(["check", "--config", str(p), "--json"], capsys)
    (res,) = [r for r in json.loads(out)["results"] if r["requirement"] == "max_crossover_below"]
    assert code == 1 and res["status"] == "fail" and res["value"] == 1 and res["bound"] == 16
    assert "does not fit at 1 concurrent sequence (<= the peak 16)" in res["message"]
    code, text, _ = run(["check", "--config", str(p)], capsys)
    row = next(ln for ln in text.splitlines() if "max_crossover_below" in ln)
    assert "B=1" in row and "B=16" in row and "16 B" not in row


def test_concurrency_values_are_counts_not_bytes():
    assert [format_value("max_crossover_below", v) for v in (16, 1024, None)] == ["B=16", "B=1,024", "-"]
