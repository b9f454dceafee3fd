"""`planner check`: exit 0/1/2, requirement boundaries, hand-computed speed-ups, JUnit that CI can count."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from planner import engines
from planner.fits import fit
from planner.fits.machine_lookup import get_machine
from planner.fits.memory import Settings
from planner.plan.assess import load_curve
from planner.plan.check import check
from planner.plan.load import crossover_batch
from planner.plan.policy import load_policy
from planner.plan.scenario import machines_for, scenarios
from planner.sources import load_spec

from .cli_run import run_cli as run

TARGET, DRAFT = "llama-3.1-8b-instruct", "llama-3.2-1b-instruct"


def policy(tmp_path, text, name="planner.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def deployment(name="chat", target=TARGET, draft=DRAFT, machine="h100-sxm", engine="vllm", extra="", require=""):
    d = f'[[deployment]]\nname = "{name}"\ntarget = "{target}"\nmachine = "{machine}"\nengine = "{engine}"\n'
    d += f'draft = "{draft}"\n' if draft else ""
    return d + extra + ("\n[deployment.require]\n" + require if require else "") + "\n"


def write_profile(path, *, verify=(0.02, 0.0205, 0.021, 0.0215, 0.022), t_d=0.002, t_o=0.0005, context=8192):
    """A probe profile with known costs (planner/speed/profile.py schema, docs/probe.md)."""
    doc = {"schema": 1, "device": "cuda", "device_name": "test GPU", "backend": "torch-synthetic (cuda)",
           "dtype": "BF16", "context": context,
           "target": {"id": "meta-llama/Llama-3.1-8B-Instruct", "verify_s": list(verify), "step_s": verify[0],
                      "method": "synthetic"},
           "draft": {"id": "meta-llama/Llama-3.2-1B-Instruct", "step_s": t_d, "method": "synthetic"},
           "overhead_s": t_o, "acceptance": None, "diagnosis": [], "versions": {}, "timestamp": "2026-01-01T00:00:00",
           "notes": []}
    path.write_text(json.dumps(doc))
    return path


def speedup_by_hand(alpha, k, verify, t_d, t_o):
    # S(K) = E(K) * t_v(1) / (K t_d + t_v(K+1) + t_o),  E(K) = (1 - a^(K+1)) / (1 - a)
    e = (1 - alpha ** (k + 1)) / (1 - alpha)
    return e * verify[0] / (k * t_d + verify[k] + t_o)


def headroom_of(machine, target=TARGET, draft=DRAFT, engine="vllm", context=8192, k_rows=8):
    """Independent fit of the same deployment: what check must report as headroom."""
    s = Settings(context=context, resolved_engine=engines.get(engine), spec_tokens=k_rows if draft else 0)
    m = get_machine(machine)
    p = fit.Problem(load_spec(target), m, s, fit.default_layout(m.n_devices, engines.get(engine)),
                    draft=load_spec(draft) if draft else None)
    devs = fit.evaluate(p, context, 1)
    return min(d.headroom_bytes for d in devs), sum(d.used_bytes for d in devs)


# --- exit codes ------------------------------------------------------------------------------

def test_fitting_policy_exits_0_with_exact_headroom(tmp_path, capsys):
    head, total = headroom_of("h100-sxm")
    p = policy(tmp_path, '[defaults]\ncontext = "8k"\n' + deployment(
        require=f'fits = true\nmin_headroom = {head}\nmax_total_memory = {total}\ncompatible = true\n'
                'min_speedup = "no_slowdown"\n'))
    code, out, err = run(["check", "--config", str(p), "--json"], capsys)
    assert code == 0, out + err
    data = json.loads(out)
    by_req = {r["requirement"]: r for r in data["results"]}
    assert list(by_req) == ["fits", "min_headroom", "max_total_memory", "compatible", "min_speedup"]
    assert all(r["status"] == "pass" for r in data["results"]) and data["passed"] is True
    # the bounds sit exactly on the computed values: >= and <= are inclusive
    assert by_req["fits"]["value"] == head == by_req["min_headroom"]["value"] == by_req["min_headroom"]["bound"]
    assert by_req["max_total_memory"]["value"] == total
    assert data["counts"] == {"pass": 5, "fail": 0, "skip": 0}
    dep = data["deployments"][0]
    assert dep["machine"] == "h100-sxm" and dep["engine"] == "vllm" and dep["context"] == 8192
    assert dep["speed"]["costs_source"].startswith("roofline (h100-sxm)") and dep["speed"]["speedup"] >= 1.0


def test_one_byte_past_the_bounds_fails_exit_1(tmp_path, capsys):
    head, total = headroom_of("h100-sxm")
    p = policy(tmp_path, '[defaults]\ncontext = 8192\n' + deployment(
        require=f'min_headroom = {head + 1}\nmax_total_memory = {total - 1}\n'))
    code, out, _ = run(["check", "--config", str(p), "--json"], capsys)
    assert code == 1
    status = {r["requirement"]: r["status"] for r in json.loads(out)["results"]}
    assert status == {"fits": "pass", "min_headroom": "fail", "max_total_memory": "fail", "compatible": "pass"}


def test_non_fitting_policy_exits_1_and_table_says_why(tmp_path, capsys):
    head, _ = headroom_of("rtx-4090", target="qwen2.5-14b-instruct", draft=None)
    assert head < 0  # 14B bf16 weights alone exceed a 24 GB card
    p = policy(tmp_path, deployment(target="qwen2.5-14b-instruct", draft=None, machine="rtx-4090", extra="context = 8192\n"))
    code, out, _ = run(["check", "--config", str(p)], capsys)
    assert code == 1
    lines = [ln for ln in out.splitlines() if ln.startswith("chat")]
    assert any("fits" in ln and "FAIL" in ln for ln in lines)  # the row; its detail below it at 80 columns
    why = out.replace("\n    ", " ")  # a wrapped detail line read whole
    assert any(ln.startswith("FAIL chat") and "fits:" in ln and "over budget by" in ln for ln in why.splitlines())
    assert any("compatible" in ln and "skip" in ln for ln in lines)  # no draft: not applicable
    assert "FAILED: 0 passed, 1 failed, 1 skipped" in out


@pytest.mark.parametrize("text,key", [
    (deployment(extra="min_speed_up = 1.2\n"), "min_speed_up"),
    (deployment(engine="vlm"), "engine"),
    (deployment(machine="h100-sxmm"), "h100-sxmm"),
    (deployment(target="no-such-model-anywhere"), "no-such-model-anywhere"),
    (deployment(extra="kv_dtype = \"fp7\"\n"), "kv_dtype"),
    (deployment(require="compatible = \"sometimes\"\n"), "require.compatible"),
    (deployment(extra='acceptance = "fast"\n'), "acceptance"),
    (deployment(extra='profile = "missing.json"\n', require="min_speedup = 1.1\n"), "profile"),
    ('[[deployment]]\nname = "a"\ntarget = "llama-3.1-8b"\ngpu_memory = "24GiB"\ndraft = "llama-3.2-1b"\n'
     '[deployment.require]\nmin_speedup = 1.1\n', "require.min_speedup"),
    ("[[deployment]\nname = 1\n", "invalid TOML"),
])
def test_broken_policy_exits_2_with_one_line(tmp_path, capsys, text, key):
    p = policy(tmp_path, text)
    code, out, err = run(["check", "--config", str(p)], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err
    assert key in lines[0] and str(p) in lines[0]


def test_missing_policy_file_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["check"], capsys)
    assert code == 2 and "no planner.toml or pyproject.toml" in err


# --- requirements ---------------------------------------------------------------------------

QWEN = dict(target="qwen2.5-14b-instruct", draft="qwen2.5-1.5b-instruct")


def test_compatible_plain_vs_fallback(tmp_path):
    # Qwen2.5-14B pads its embedding to 152064 rows, the 1.5B to 151936: vLLM refuses the plain
    # draft_model algorithm (vocab_size), llama.cpp accepts (|difference| = 128 <= 128).
    strict = policy(tmp_path, deployment(**QWEN), "strict.toml")
    (r,) = [x for x in check(load_policy(strict)).results if x.requirement == "compatible"]
    assert r.status == "fail" and "vocab_size" in r.message and "use_heterogeneous_vocab" in r.message
    assert 'allow_fallback' in r.message
    loose = policy(tmp_path, deployment(**QWEN, require='compatible = "allow_fallback"\n'), "loose.toml")
    (r,) = [x for x in check(load_policy(loose)).results if x.requirement == "compatible"]
    assert r.status == "pass" and r.value == "fallback" and "use_heterogeneous_vocab" in r.message
    lcpp = policy(tmp_path, deployment(**QWEN, engine="llama.cpp"), "lcpp.toml")
    (r,) = [x for x in check(load_policy(lcpp)).results if x.requirement == "compatible"]
    assert r.status == "pass" and r.value is True


def test_min_speedup_from_profile_by_hand(tmp_path, monkeypatch):
    verify, t_d, t_o = (0.02, 0.0205, 0.021, 0.0215, 0.022), 0.002, 0.0005
    (tmp_path / "profiles").mkdir()
    write_profile(tmp_path / "profiles" / "h100.json", verify=verify, t_d=t_d, t_o=t_o)
    s3 = speedup_by_hand(0.8, 3, verify, t_d, t_o)  # 2.952 * 0.02 / 0.028 = 2.10857...
    assert s3 == pytest.approx(2.952 * 0.02 / 0.028)
    text = deployment(extra='context = 8192\nk = 3\nacceptance = "0.7-0.9"\nprofile = "profiles/h100.json"\n',
                      require=f"min_speedup = {round(s3, 3) - 0.001}\n")
    p = policy(tmp_path, text)
    monkeypatch.chdir(tmp_path.parent)  # the profile path is relative to the policy file, not the cwd
    rep = check(load_policy(p))
    (r,) = [x for x in rep.results if x.requirement == "min_speedup"]
    assert r.status == "pass" and r.value == round(s3, 4) and "K=3 (policy k)" in r.message
    sp = rep.assessments[0].speed
    assert sp.costs.source == "profile (measured)" and sp.k == 3
    assert sp.speedup_low == pytest.approx(speedup_by_hand(0.7, 3, verify, t_d, t_o))
    assert sp.speedup_high == pytest.approx(speedup_by_hand(0.9, 3, verify, t_d, t_o))
    # judged on the pessimistic end (alpha 0.7: 2.5331 * 0.02 / 0.028 = 1.809) the same bound fails
    pess = policy(tmp_path, text.replace("min_speedup", 'speedup_estimate = "pessimistic"\nmin_speedup'), "p2.toml")
    (r2,) = [x for x in check(load_policy(pess)).results if x.requirement == "min_speedup"]
    assert r2.status == "fail" and r2.value == round(speedup_by_hand(0.7, 3, verify, t_d, t_o), 4)


def test_profile_table_per_machine_and_best_k(tmp_path):
    verify, t_d, t_o = (0.01, 0.0101, 0.0102, 0.0103, 0.0104, 0.0105), 0.0004, 0.0
    write_profile(tmp_path / "a.json", verify=verify, t_d=t_d, t_o=t_o)
    text = deployment(machine="", extra='machines = ["h100-sxm", "a100-80gb"]\nacceptance = 0.75\ncontext = 8192\n'
                      'profile = { "h100-sxm" = "a.json" }\n', require="min_speedup = 1.0\n")
    rep = check(load_policy(policy(tmp_path, text.replace('machine = ""\n', ""))))
    by_machine = {a.scenario.label: a.speed for a in rep.assessments}
    best = max(range(1, 6), key=lambda k: speedup_by_hand(0.75, k, verify, t_d, t_o))
    h100 = by_machine["h100-sxm"]
    assert h100.costs.source == "profile (measured)" and h100.k == best and not h100.fixed_k
    assert h100.speedup == pytest.approx(speedup_by_hand(0.75, best, verify, t_d, t_o))
    assert by_machine["a100-80gb"].costs.source.startswith("roofline (a100-80gb)")


def test_no_draft_skips_speed_and_layout_too_big_fails(tmp_path, capsys):
    text = (deployment(name="solo", draft=None, require="min_speedup = 1.2\n")
            + deployment(name="wide", extra="tp = 2\n"))
    code, out, _ = run(["check", "--config", str(policy(tmp_path, text)), "--json"], capsys)
    assert code == 1
    res = {(r["deployment"], r["requirement"]): r for r in json.loads(out)["results"]}
    assert res[("solo", "min_speedup")]["status"] == "skip" and res[("solo", "fits")]["status"] == "pass"
    assert res[("wide", "fits")]["status"] == "fail" and "tp 2 x pp 1 = 2 devices" in res[("wide", "fits")]["message"]


def test_machine_override_and_pyproject_discovery(tmp_path, capsys, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[[tool.planner.deployment]]\nname = "chat"\ntarget = "llama-3.1-8b-instruct"\n'
        'machine = "h100-sxm"\n')
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["check", "--json", "--machine", "rtx-4090,l4"], capsys)
    data = json.loads(out)
    assert [d["machine"] for d in data["deployments"]] == ["rtx-4090", "l4"] and data["policy"] == "pyproject.toml"
    head = {d["machine"]: d["headroom_bytes"] for d in data["deployments"]}
    assert head["rtx-4090"] == headroom_of("rtx-4090", draft=None, context=4096)[0]
    assert code == (0 if all(h >= 0 for h in head.values()) else 1)


# --- JUnit ------------------------------------------------------------------------------------

def test_junit_parses_and_counts_failures(tmp_path, capsys):
    text = (deployment(name="ok", require='min_headroom = "1GiB"\n')
            + deployment(name="big", target="qwen2.5-14b-instruct", draft=None, machine="rtx-4090",
                         require='min_headroom = "1GiB"\nmin_speedup = 1.1\n'))
    p = policy(tmp_path, text)
    junit = tmp_path / "out" / "junit.xml"
    code, out, _ = run(["check", "--config", str(p), "--junit", str(junit), "--json"], capsys)
    data = json.loads(out)
    assert code == 1
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites"
    assert int(root.get("tests")) == len(data["results"]) == 7  # ok: 3, big: 4
    assert int(root.get("failures")) == data["counts"]["fail"] == 2
    assert int(root.get("skipped")) == data["counts"]["skip"] == 2
    cases = {(tc.get("classname"), tc.get("name")): tc for tc in root.iter("testcase")}
    assert cases[("big", "rtx-4090: fits")].find("failure") is not None
    assert cases[("big", "rtx-4090: min_speedup")].find("skipped") is not None
    assert cases[("ok", "h100-sxm: fits")].find("failure") is None


def test_junit_never_overwrites_the_policy(tmp_path, capsys):
    p = policy(tmp_path, deployment())
    before = p.read_text()
    code, _, err = run(["check", "--config", str(p), "--junit", str(p)], capsys)
    assert code == 2 and "also an input" in err and p.read_text() == before


def test_check_is_torch_and_matplotlib_free(tmp_path):
    import subprocess
    import sys

    p = policy(tmp_path, deployment(require="min_speedup = 1.0\n"))
    code = ("import sys\nfrom planner.cli import main\ntry:\n    main(['check', '--config', sys.argv[1]])\n"
            "except SystemExit as e:\n    rc = e.code\n"
            "bad = [m for m in ('torch', 'matplotlib') if m in sys.modules]\nprint(rc, bad)\n")
    out = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert out.stdout.strip().splitlines()[-1] == "0 []", out.stderr


# --- the shipped examples ------------------------------------------------------------------------

EXAMPLES = __import__("pathlib").Path(__file__).parent.parent / "docs" / "examples"


def test_example_policy_passes(capsys):
    code, out, err = run(["check", "--config", str(EXAMPLES / "planner.toml"), "--json"], capsys)
    assert code == 0, out + err
    data = json.loads(out)
    assert {d["deployment"] for d in data["deployments"]} == {"chat-14b", "edge-8b", "batch-70b"}
    assert data["counts"]["fail"] == 0 and data["counts"]["pass"] >= 10


def _planner_commands(text):
    """`planner ...` command lines in a YAML example (run: / entry: values)."""
    import shlex

    out = []
    for line in text.splitlines():
        s = line.strip()
        for key in ("run: ", "entry: "):
            if s.startswith(key) and s[len(key):].startswith("planner "):
                out.append(shlex.split(s[len(key):])[1:])
    return out


def test_ci_examples_run_real_commands(tmp_path, capsys, monkeypatch):
    import shutil

    shutil.copy(EXAMPLES / "planner.toml", tmp_path / "planner.toml")
    monkeypatch.chdir(tmp_path)
    cmds = [c for f in ("github-actions.yml", "pre-commit-config.yaml")
            for c in _planner_commands((EXAMPLES / f).read_text())]
    assert [c[0] for c in cmds] == ["check", "report", "check"]
    for args in cmds:
        code, _, err = run(args, capsys)
        assert code == 0, (args, err)
    root = ET.parse(tmp_path / "planner-junit.xml").getroot()
    assert root.get("failures") == "0" and int(root.get("tests")) >= 10
    assert (tmp_path / "planner-report.html").stat().st_size > 10_000


def test_max_crossover_below_fails_when_speculation_stops_paying_at_the_peak(tmp_path, capsys):
    """8B + 1B on one H100 (vLLM, fp8 KV, 512 tokens): the curve at 1, 2, 4, ... N sequences is the same
    one `recommend --batch` prints; at a peak of 1024 it has crossed 1.0, at a peak of 4 it has not."""
    extra = 'kv_dtype = "fp8"\ncontext = 512\n'
    for peak, code in ((1024, 1), (4, 0)):
        p = policy(tmp_path, deployment(extra=extra, require=f"max_crossover_below = {peak}\n"))
        rc, out, _ = run(["check", "--config", str(p), "--json"], capsys)
        res = [r for r in json.loads(out)["results"] if r["requirement"] == "max_crossover_below"]
        assert rc == code and len(res) == 1
        pol = load_policy(p)
        d = pol.deployments[0]
        (sc,) = scenarios(d, machines_for(d, (), origin=pol.path), base=tmp_path, cache={}, origin=pol.path)
        curve = load_curve(sc, peak)
        assert [pt.batch for pt in curve] == [b for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if b <= peak]
        assert res[0]["value"] == crossover_batch(curve)
        assert (res[0]["status"] == "fail") == (crossover_batch(curve) is not None)
    # the same plan through recommend: the crossover it reports at these batches is the one check found
    rc, out, _ = run(["recommend", TARGET, "--candidates", DRAFT, "--machine", "h100-sxm", "--engine", "vllm",
                      "--kv-dtype", "fp8", "--context", "512", "--batch", "1,2,4,8,16,32,64,128,256,512,1024",
                      "--json"], capsys)
    assert json.loads(out)["plans"][0]["crossover_batch"] == res_value_at_1024(tmp_path, capsys, extra)


def res_value_at_1024(tmp_path, capsys, extra):
    p = policy(tmp_path, deployment(extra=extra, require="max_crossover_below = 1024\n"))
    _, out, _ = run(["check", "--config", str(p), "--json"], capsys)
    return next(r["value"] for r in json.loads(out)["results"] if r["requirement"] == "max_crossover_below")


def test_max_crossover_below_must_be_a_concurrency(tmp_path, capsys):
    p = policy(tmp_path, deployment(require="max_crossover_below = 0\n"))
    rc, _, err = run(["check", "--config", str(p)], capsys)
    assert rc == 2 and "max_crossover_below" in err and len(err.strip().splitlines()) == 1
