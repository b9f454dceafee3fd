"""`planner memory --weights-dtype bf16,int8,int4`: one call, one table, one ledger per format (#31 item 12).

Why: choosing a format is comparing them (accelerate's `estimate-memory` prints one row per dtype);
each row must be exactly the ledger the single-format call gives, so the sweep adds no figure of its own.
"""

from __future__ import annotations

import json

import pytest

from planner.cli import main
from planner.core.fmt import fmt_bytes

TARGET = "qwen2.5-32b-instruct"
ARGS = ["--engine", "vllm", "--context", "8k"]


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(["memory", TARGET, *ARGS, *args])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def test_each_row_is_the_single_format_ledger(capsys):
    code, out, _ = run(capsys, "--weights-dtype", "bf16,int8,int4", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["weights_dtypes"] == ["bf16", "int8", "int4"]
    for row in doc["sweep"]:
        _, one, _ = run(capsys, "--weights-dtype", row["weights_dtype"], "--json")
        single = json.loads(one)
        assert row["total_bytes"] == single["total_bytes"]
        assert row["models"][0]["weights_bytes"] == single["models"][0]["weights_bytes"]
    # Qwen2.5-32B by hand from its config (hidden 5120, 64 layers, MLP 27648, 8 KV heads x 128, vocab
    # 152064, untied, q/k/v biases): per layer q 5120*5120+5120, k and v 5120*1024+1024 each, o 5120*5120,
    # MLP 3*5120*27648, two norms 2*5120 = 487,605,248; x 64 = 31,206,735,872; + embed and lm_head
    # 2*152064*5120 = 1,557,135,360; + final norm 5120 = 32,763,876,352 parameters, 2 bytes each at bf16
    assert doc["sweep"][0]["models"][0]["weights_bytes"] == 2 * 32_763_876_352
    sizes = [r["models"][0]["weights_bytes"] for r in doc["sweep"]]
    assert sizes == sorted(sizes, reverse=True)  # fewer bits, fewer bytes


def test_the_table_has_one_row_per_format_within_80_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(capsys, "--weights-dtype", "bf16,int8,int4")
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 80
    _, js, _ = run(capsys, "--weights-dtype", "bf16,int8,int4", "--json")
    totals = {r["weights_dtype"]: fmt_bytes(r["total_bytes"]) for r in json.loads(js)["sweep"]}
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split()[:1] in (["bf16"], ["int8"],
                                                                                              ["int4"])}
    assert set(rows) == {"bf16", "int8", "int4"}
    for d, cells in rows.items():
        assert " ".join(cells[-2:]) == totals[d]  # the TOTAL column, "62.57 GiB"


def test_an_unknown_format_in_the_list_is_a_one_line_error(capsys):
    code, _, err = run(capsys, "--weights-dtype", "bf16,int9")
    assert code == 2 and "int9" in err and len(err.strip().splitlines()) == 1
