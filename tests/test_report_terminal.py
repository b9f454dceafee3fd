"""The machine-first report in the terminal, and the fleet's best machine by a stated rule (#31 item 11).

Why: `planner report --machine rtx-4090` without --out used to exit 2, and the fleet's "best machine"
was the biggest GPU for every row. The table printed must hold the JSON's figures, fit 80 columns,
and the best machine must follow the rule --best-by names (each checked against the JSON rows).
"""

from __future__ import annotations

import json

import pytest

from planner.cli import main
from planner.sources import catalog

TARGETS = "llama-3.1-8b-instruct,qwen2.5-7b-instruct,qwen2.5-32b-instruct"


def run(args, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as e:
        main(args)
    got = capsys.readouterr()
    return e.value.code, got.out, got.err


def test_report_machine_prints_a_table_within_80_columns(capsys, monkeypatch):
    code, out, err = run(["report", "--machine", "rtx-4090"], capsys, monkeypatch)
    assert code == 0, err
    assert max(len(x) for x in out.splitlines()) <= 80
    names = {e["id"].rsplit("/", 1)[-1] for e in catalog.entries()}
    rows = [x.split()[0] for x in out.splitlines() if x.split() and x.split()[0] in names]
    assert set(rows) == names  # one row per catalogued model


def test_the_table_holds_the_json_figures(capsys, monkeypatch):
    args = ["report", "--machine", "rtx-4090", "--targets", TARGETS]
    code, out, _ = run(args, capsys, monkeypatch)
    assert code == 0
    _, js, _ = run([*args, "--json"], capsys, monkeypatch)
    for r in json.loads(js)["rows"]:
        line = next(x for x in out.splitlines() if x.startswith(r["target"].rsplit("/", 1)[1] + " "))
        rate = r["tokens_per_s"]
        assert line.split()[-1] == ("-" if rate is None else f"{rate:.1f}")
        dtype = r.get("weights_dtype")
        assert line.split()[1] == ("NO" if not r["fits"] else dtype if dtype else "yes")


@pytest.mark.parametrize("by", ["smallest", "speed", "speed-per-gpu"])
def test_best_machine_follows_the_rule_it_names(by, capsys, monkeypatch):
    fleet = ["--machine", "rtx-4090", "--machine", "h100-sxm", "--machine", "2x-rtx-4090"]
    code, js, err = run(["report", *fleet, "--targets", TARGETS, "--best-by", by, "--json"], capsys, monkeypatch)
    assert code == 0, err
    doc = json.loads(js)
    assert doc["best_by"] == by
    mem = {m["name"]: m["devices"] * m["memory_bytes"] for m in doc["machines"]}
    devs = {m["name"]: m["devices"] for m in doc["machines"]}
    for tid, best in doc["best_machine"].items():
        rows = [r for r in doc["rows"] if r["target"] == tid and r["fits"]]
        stored = [r for r in rows if not r.get("weights_dtype")] or rows  # as stored before quantised
        if by == "smallest":
            want = min(stored, key=lambda r: (mem[r["machine"]], -r["tokens_per_s"]))["machine"]
        elif by == "speed":
            want = max(stored, key=lambda r: r["tokens_per_s"])["machine"]
        else:
            want = max(stored, key=lambda r: r["tokens_per_s"] / devs[r["machine"]])["machine"]
        assert best == want, (tid, by)
    if by == "smallest":  # an 8B fits as stored on a 24 GB card: the smallest box, not the biggest
        assert doc["best_machine"]["meta-llama/Llama-3.1-8B-Instruct"] == "rtx-4090"


def test_the_fleet_table_says_best_by_what(capsys, monkeypatch):
    code, out, _ = run(["report", "--machine", "rtx-4090", "--machine", "h100-sxm", "--targets", TARGETS],
                       capsys, monkeypatch)
    assert code == 0 and "best machine per target (--best-by smallest)" in out.replace("\n    ", " ")
    assert max(len(x) for x in out.splitlines()) <= 80


def test_an_unknown_rule_is_bad_input(capsys, monkeypatch):
    code, _, err = run(["report", "--machine", "rtx-4090", "--best-by", "cheapest"], capsys, monkeypatch)
    assert code == 2 and "--best-by cheapest" in err and "smallest" in err
