"""A candidate draft whose attention heads do not divide the target's tensor parallelism is refused in its own
row; the recommendation goes on with the others (it used to end with 'Choose a --tp that divides them', a --tp
the user never gave).

Head counts from the catalogued configs: Qwen2.5-0.5B has 14 query heads (14 % 8 = 6), Qwen2.5-1.5B 12
(12 % 8 = 4), Qwen2.5-7B 28 (28 % 4 = 0 at tp 4, 28 % 8 = 4 at tp 8); Qwen2.5-72B 64 (divides 8).
"""

from __future__ import annotations

import json

from .cli_run import run_cli


def _recommend(capsys, *args: str) -> dict:
    code, out, err = run_cli(["recommend", "qwen2.5-72b-instruct", *args, "--json"], capsys)
    assert code in (0, 1), err
    return json.loads(out)


def test_undividable_drafts_are_refused_in_their_rows_not_fatal(capsys):
    doc = _recommend(capsys, "--machine", "8x-h100-sxm", "--candidates", "qwen2.5-0.5b-instruct,qwen2.5-1.5b-instruct")
    rows = {p["draft"]: p for p in doc["plans"]}
    for draft, heads in (("Qwen/Qwen2.5-0.5B-Instruct", 14), ("Qwen/Qwen2.5-1.5B-Instruct", 12)):
        assert rows[draft]["compatible"] is False
        assert rows[draft]["launch"] == {}
        assert f"its {heads} attention heads do not divide by 8" in rows[draft]["reasons"][0]
        assert "--draft-device" in rows[draft]["reasons"][0]
    assert doc["recommendation"]["draft"] is None  # nothing left that runs: plain decoding


def test_a_dividable_draft_beside_them_still_plans(capsys):
    doc = _recommend(capsys, "--machine", "h100-sxm", "--gpus", "4", "--candidates", "qwen2.5-0.5b-instruct,qwen2.5-7b-instruct")
    rows = {p["draft"]: p for p in doc["plans"]}
    assert rows["Qwen/Qwen2.5-0.5B-Instruct"]["compatible"] is False  # 14 % 4 = 2
    assert rows["Qwen/Qwen2.5-7B-Instruct"]["compatible"] is True  # 28 % 4 = 0
    assert doc["recommendation"]["draft"] == "Qwen/Qwen2.5-7B-Instruct"
