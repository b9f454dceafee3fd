"""recommend's default answer is one screen; -v / --explain adds the reasoning, the notes and where each
figure came from; --json keeps everything (#31 item 12).

Why: the answer (plans, choice, launch) was 40-60 lines with citations inline; a newcomer reads the
first screen. What the brief face leaves out must still be one flag away, and the launch it prints
must be the same command.
"""

from __future__ import annotations

import json

import pytest

from planner.cli import main
from planner.render import width

JOBS = [["qwen2.5-7b-instruct", "--machine", "rtx-4090"],  # the README's main job on a catalogued GPU
        ["llama-3.1-8b-instruct", "--machine", "m3-max-36gb", "--engine", "llama.cpp"]]
SCREEN = 25  # lines: what an 80 x 25 terminal shows without scrolling


def run(capsys, monkeypatch, *args: str) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main(["recommend", *args])
    return capsys.readouterr().out


@pytest.mark.parametrize("job", JOBS)
def test_the_default_answer_fits_one_screen_and_keeps_the_launch(capsys, monkeypatch, job):
    brief = run(capsys, monkeypatch, *job)
    lines = brief.splitlines()
    assert len(lines) <= SCREEN and max(map(len, lines)) <= 80
    rec = json.loads(run(capsys, monkeypatch, *job, "--json"))
    command = rec["recommendation"]["launch"]["command"]
    assert "\n".join(width.command_lines(command, indent="  ")) in brief  # the same command, as printed
    assert lines[-1].endswith("-v / --explain)")  # and says where the rest is


@pytest.mark.parametrize("flag", ["-v", "--explain"])
def test_explain_prints_every_note_reason_and_source(capsys, monkeypatch, flag):
    job = JOBS[0]
    full = run(capsys, monkeypatch, *job, flag)
    rec = json.loads(run(capsys, monkeypatch, *job, "--json"))
    flat = " ".join(full.split())  # wrapped lines joined back
    for note in rec["notes"]:
        assert " ".join(note.split()) in flat
    for reason in rec["recommendation"]["reasons"]:
        assert " ".join(reason.split()) in flat
    assert "costs: " in full and "acceptance: catalog" in flat
    brief = run(capsys, monkeypatch, *job)
    assert "costs: " not in brief and not any(note in " ".join(brief.split()) for note in rec["notes"])
    assert len(full.splitlines()) > len(brief.splitlines())


def test_a_note_on_the_whole_plan_stays_in_the_brief_answer(capsys, monkeypatch):
    # the 70B fits 2x4090 only re-sized (the cheapest combination): the user must see that without -v;
    # why MTP is not offered (a note on one method) waits behind --explain
    job = ["llama-3.3-70b-instruct", "--machine", "2x-rtx-4090"]
    notes = json.loads(run(capsys, monkeypatch, *job, "--json"))["notes"]
    plan_notes = [n for n in notes if n.startswith("the target does not fit as asked")]
    method_notes = [n for n in notes if n.startswith("mtp: ")]
    assert plan_notes and method_notes
    brief = " ".join(run(capsys, monkeypatch, *job).split())
    assert all(" ".join(n.split()) in brief for n in plan_notes)
    assert not any(" ".join(n.split()) in brief for n in method_notes)
