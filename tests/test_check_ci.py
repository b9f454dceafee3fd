"""`planner check` in CI: GitHub Actions annotations and step summary, and the policy found from a subfolder."""

from __future__ import annotations

import json

from planner.render import github as gh

from .cli_run import run_cli as run
from .test_check import deployment, headroom_of, policy

FAILING = deployment(name="big", target="qwen2.5-14b-instruct", draft=None, machine="rtx-4090")


def test_annotations_and_step_summary_on_github_actions(tmp_path, capsys, monkeypatch):
    p = policy(tmp_path, FAILING)
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, err = run(["check", "--config", str(p), "--json"], capsys)
    assert code == 1 and out.lstrip().startswith("{")  # annotations never enter the JSON on stdout
    head, _ = headroom_of("rtx-4090", target="qwen2.5-14b-instruct", draft=None, context=4096)
    errors = [line for line in err.splitlines() if line.startswith("::error ")]
    assert errors and errors[0].startswith(f"::error file={p},title=planner check%3A big on rtx-4090%3A fits::")
    assert any(line.startswith("::warning ") and "compatible" in line for line in err.splitlines())  # skipped
    text = summary.read_text()
    assert text.startswith("earlier step\n### planner check")  # appended, as the runner expects
    assert "| big | rtx-4090 | fits | FAIL |" in text and "**FAILED: " in text
    assert f"{-head / 2**30:.2f} GiB" in text


def test_no_annotations_outside_github_actions(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    code, _, err = run(["check", "--config", str(policy(tmp_path, FAILING))], capsys)
    assert code == 1 and "::error" not in err


def test_escaping_follows_the_workflow_command_rules():
    line = gh.annotation("error", "50%\nnext", title="a: b, c", file="x,y.toml")
    assert line == "::error file=x%2Cy.toml,title=a%3A b%2C c::50%25%0Anext"


def test_policy_found_in_a_parent_folder_up_to_the_repository_root(tmp_path, capsys, monkeypatch):
    (tmp_path / ".git").mkdir()
    p = policy(tmp_path, deployment(name="small", target="qwen2.5-0.5b-instruct", draft=None, machine="h100-sxm"))
    deep = tmp_path / "services" / "chat"
    deep.mkdir(parents=True)
    (deep / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no [tool.planner] there: not a policy
    monkeypatch.chdir(deep)
    code, out, _ = run(["check"], capsys)
    assert code == 0 and f"({p})" in out
    # above the repository root nothing is searched
    inner = tmp_path / "inner"
    (inner / ".git").mkdir(parents=True)
    monkeypatch.chdir(inner)
    code, _, err = run(["check"], capsys)
    assert code == 2 and "Cannot find a policy" in err


def test_a_deployment_without_engine_gets_each_machines_default(tmp_path, capsys):
    text = ('[[deployment]]\nname = "any"\ntarget = "qwen2.5-0.5b-instruct"\n'
            'machines = ["h100-sxm", "m3-max-36gb", "cpu-ryzen-9-7950x-64gb"]\n')
    _, out, _ = run(["check", "--config", str(policy(tmp_path, text)), "--json"], capsys)
    engines_by_machine = {d["machine"]: d["engine"] for d in json.loads(out)["deployments"]}
    assert engines_by_machine == {"h100-sxm": "vllm", "m3-max-36gb": "llama.cpp", "cpu-ryzen-9-7950x-64gb": "llama.cpp"}


def test_a_parent_policy_is_named_on_the_first_line(tmp_path, capsys, monkeypatch):
    """Issue #34 class 3: planner.toml three folders up, no .git between: it gates, and says so first."""
    monkeypatch.setenv("HOME", "/nonexistent/home")  # not above tmp_path
    p = policy(tmp_path, deployment(name="small", target="qwen2.5-0.5b-instruct", draft=None, machine="h100-sxm"))
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    code, _, err = run(["check"], capsys)
    assert code == 0 and err.replace("\n    ", " ").splitlines()[0].startswith(f"warning: the policy that gates this run is '{p}'")
    monkeypatch.chdir(tmp_path)  # the policy of this folder: no warning
    code, _, err = run(["check"], capsys)
    assert code == 0 and err == ""


def test_the_search_stops_at_the_users_home(tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    work = home / "work" / "svc"
    work.mkdir(parents=True)
    policy(home, deployment(name="stray", target="qwen2.5-0.5b-instruct", draft=None, machine="h100-sxm"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    code, _, err = run(["check"], capsys)
    assert code == 2 and "Cannot find a policy" in err  # ~/planner.toml gates nothing below it
    monkeypatch.chdir(home)
    assert run(["check"], capsys)[0] == 0  # run in the home itself, it is this folder's policy


def test_a_parent_pyproject_counts_only_with_a_parsed_tool_planner_table(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HOME", "/nonexistent/home")  # not above tmp_path
    (tmp_path / ".git").mkdir()
    body = deployment(name="small", target="qwen2.5-0.5b-instruct", draft=None, machine="h100-sxm")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n# see [tool.planner] in the docs\n"
                                             "description = '[tool.planner]'\n")
    deep = tmp_path / "svc"
    deep.mkdir()
    monkeypatch.chdir(deep)
    code, _, err = run(["check"], capsys)
    assert code == 2 and "Cannot find a policy" in err  # a comment or a string is not the table
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n" + body.replace("[[deployment]]",
                                                                                      "[[tool.planner.deployment]]"))
    code, _, err = run(["check"], capsys)
    assert code == 0 and "pyproject.toml" in err.replace("\n    ", " ").splitlines()[0]
