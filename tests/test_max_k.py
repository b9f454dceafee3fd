"""`--max-k` is honoured by recommend as check and report honour `max_k` (issue #31 item 4).

The user's command: `planner recommend llama-3.1-8b-instruct --candidates llama-3.2-1b-instruct --machine rtx-4090
--engine llama.cpp --max-k 8` gave K=16 (an explicit 8 read as "not given" and widened to llama-server's n_max),
while `planner check` judged the same deployment at K=8.
"""

from __future__ import annotations

import json

from planner.core.constants import ADAPTIVE_MAX_K

from .cli_run import run_cli as run
from .test_check import deployment, policy

TARGET, DRAFT = "llama-3.1-8b-instruct", "llama-3.2-1b-instruct"
ARGS = ["recommend", TARGET, "--candidates", DRAFT, "--machine", "rtx-4090", "--engine", "llama.cpp"]


def recommend(capsys, *extra):
    code, out, err = run([*ARGS, *extra, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)["recommendation"]


def test_explicit_max_k_caps_k_and_agrees_with_check(tmp_path, capsys):
    rec = recommend(capsys, "--max-k", "8")
    assert rec["k"] <= 8
    p = policy(tmp_path, deployment(target=TARGET, draft=DRAFT, machine="rtx-4090", engine="llama.cpp",
                                    extra="max_k = 8\n", require="min_speedup = 1.0"))
    code, out, err = run(["check", "--config", str(p), "--json"], capsys)
    assert code == 0, err
    (dep,) = json.loads(out)["deployments"]
    assert (dep["speed"]["k"], dep["speed"]["speedup"]) == (rec["k"], rec["speedup"])
    # and the launch command drafts at most that K
    code, text, _ = run([*ARGS, "--max-k", "8"], capsys)
    assert code == 0 and f"--spec-draft-n-max {rec['k']}" in text


def test_unset_max_k_keeps_llama_servers_n_max_and_a_smaller_one_lowers_k(capsys):
    default, four = recommend(capsys), recommend(capsys, "--max-k", "4")
    assert 8 < default["k"] <= ADAPTIVE_MAX_K  # the confidence stop's default: common/common.h n_max = 16
    assert four["k"] <= 4 and four["speedup"] <= default["speedup"]


def test_k_above_an_explicit_max_k_is_refused(capsys):
    code, out, err = run([*ARGS, "--k", "9", "--max-k", "8"], capsys)
    assert code == 2 and out == "" and err.strip() == "error: Cannot use --k 9 with --max-k 8: expected K <= --max-k."
