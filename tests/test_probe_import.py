"""`planner probe --import`: llama-bench / llama-batched-bench / CSV parsers, torch-free.

Expected values are worked by hand from the fixture files (tests/fixtures/probe/README.md says
where each comes from): llama-bench t_v(n) = n / (t/s) or avg_ns / 1e9; batched-bench one step of
B sequences = T_TG / TG.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.core import constants
from planner.core.errors import ProfileError
from planner.probe.importers import import_file, interpolate, profile_from_import

from .cli_run import run_cli as run

FIX = Path(__file__).parent / "fixtures" / "probe"


def test_llama_bench_markdown_verify_curve():
    (run,) = import_file(FIX / "llama-bench-verify.md")
    # pp1 40 t/s, pp2 50, pp3 60, pp4 64, pp6 75, pp9 90 -> n / (t/s)
    measured = {1: 1 / 40, 2: 2 / 50, 3: 3 / 60, 4: 4 / 64, 6: 6 / 75, 9: 9 / 90}
    assert run.measured_n == (1, 2, 3, 4, 6, 9)
    assert len(run.verify_s) == 9
    for n, t in measured.items():
        assert run.verify_s[n - 1] == pytest.approx(t)
    assert run.verify_s[4] == pytest.approx((4 / 64 + 6 / 75) / 2)  # n=5 between 4 and 6
    assert run.verify_s[6] == pytest.approx(6 / 75 + (9 / 90 - 6 / 75) / 3)  # n=7
    assert (run.depth, run.backend, run.dtype, run.tool) == (4096, "Metal,BLAS", "Q4_K - Medium", "llama-bench")
    assert any("interpolated" in n for n in run.notes)


def test_llama_bench_readme_depth_table_uses_tg_for_one_token():
    (deep,) = import_file(FIX / "llama-bench-readme-depth.md")
    # pp512 is prefill (n > 65): only tg128 @ d512 remains, 116.71 t/s -> one step = 1 / 116.71
    assert deep.verify_s == pytest.approx((1 / 116.71,))
    assert deep.depth == 512
    assert any("tg test" in n for n in deep.notes) and any("-p 1,2,3" in n for n in deep.notes)
    (shallow,) = import_file(FIX / "llama-bench-readme-depth.md", context=0)
    assert shallow.verify_s == pytest.approx((1 / 120.60,))


def test_llama_bench_csv():
    (run,) = import_file(FIX / "llama-bench.csv")
    # avg_ns 8.2, 8.5, 9.1 ms at n = 1, 2, 4; tg128 ignored since pp1 exists; n = 3 interpolated
    assert run.verify_s == pytest.approx((0.0082, 0.0085, 0.0088, 0.0091))
    assert run.measured_n == (1, 2, 4)
    assert (run.device, run.backend, run.size_bytes) == ("NVIDIA GeForce RTX 4080", "CUDA", 4677120000)


def test_llama_bench_json_two_models_larger_first():
    target, draft = import_file(FIX / "llama-bench.json")
    assert target.model.endswith("Qwen2.5-7B-Instruct-Q4_K_M.gguf")
    assert target.verify_s == pytest.approx((0.0082, 0.0085, 0.0088))
    assert draft.model.endswith("Qwen2.5-0.5B-Instruct-Q8_0.gguf")
    assert draft.verify_s == pytest.approx((0.0015,))
    prof = profile_from_import(target, draft)
    assert prof.draft.step_s / prof.target.step_s == pytest.approx(0.0015 / 0.0082)
    assert prof.overhead_s == 0.0 and "not in the imported output" in prof.notes[0]
    (jl,) = import_file(FIX / "llama-bench.jsonl")
    assert jl.verify_s == pytest.approx(target.verify_s)


def test_batched_bench_readme_table_is_a_labelled_proxy():
    (run,) = import_file(FIX / "batched-bench-readme.md")
    # deepest rows: PP 128, TG 256 (depth 128 + 256/2); step of B sequences = T_TG / 256
    t_tg = {1: 6.329, 2: 10.239, 4: 13.960, 8: 15.110, 16: 18.073, 32: 19.223}
    assert run.depth == 256 and run.tool == "llama-batched-bench"
    assert run.measured_n == (1, 2, 4, 8, 16, 32)
    for b, t in t_tg.items():
        assert run.verify_s[b - 1] == pytest.approx(t / 256)
    assert any("proxy" in n for n in run.notes)
    (short,) = import_file(FIX / "batched-bench-readme.md", context=192)
    assert short.verify_s[0] == pytest.approx(3.079 / 128)


def test_batched_bench_jsonl():
    (run,) = import_file(FIX / "batched-bench.jsonl")
    # t_tg / tg = 0.640/32, 0.704/32, 0.768/32 at pl = 1, 2, 4; pl = 3 interpolated
    assert run.verify_s == pytest.approx((0.02, 0.022, 0.023, 0.024))
    assert run.depth == 2048 + 16


def test_plain_csv_and_interpolation():
    (run,) = import_file(FIX / "curve.csv")
    assert run.verify_s == pytest.approx((0.02, 0.021, 0.0222, 0.0236, 0.025))
    assert run.tool == "csv"
    assert interpolate({1: 1.0, 3: 2.0}) == ((1.0, 1.5, 2.0), (1, 3))


@pytest.mark.parametrize(("content", "message"), [
    ("", "the file is empty"),
    ("n,seconds\nx,y\n", "not n,seconds"),
    ("n,seconds\n1,-2\n", "out of range"),
    ("n,seconds\n2,0.1\n", "one-token point"),
    ('{"a": 1}', "neither n_prompt"),
    ('[1, 2]', "not a list of records"),
    ("[{", "not valid JSON"),
    ("| model | test | t/s |\n| --- | --- | --- |\n| m | pp512 | 100 |\n", "one-token point"),
    ("| model | test | t/s |\n| --- | --- | --- |\n| m | pg | 100 |\n", "no usable measurement"),
    ("| model | test | t/s |\n| --- | --- | --- |\n| m | pp1 | 0 ± 0 |\n", "not positive"),
])
def test_bad_inputs_are_one_line_profile_errors(tmp_path, content, message):
    p = tmp_path / "bench.txt"
    p.write_text(content)
    with pytest.raises(ProfileError, match=message) as e:
        import_file(p)
    assert str(e.value).startswith(f"Cannot import measurements from '{p}'")
    assert "\n" not in str(e.value)


def test_size_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(constants, "PROBE_IMPORT_MAX_BYTES", 64)
    with pytest.raises(ProfileError, match="too large"):
        import_file(FIX / "llama-bench-verify.md")


def test_cli_import_json_schema_and_out(tmp_path, capsys):
    out = tmp_path / "profile.json"
    code, stdout, err = run(["probe", "--import", str(FIX / "llama-bench.json"), "--out", str(out), "--json"],
                            capsys)
    assert code == 0, err
    data = json.loads(stdout)
    assert {"device", "backend", "dtype", "context", "target", "draft", "overhead_s", "acceptance",
            "diagnosis"} <= set(data)
    assert data["target"]["verify_s"] == pytest.approx([0.0082, 0.0085, 0.0088])
    assert data["draft"]["step_s"] == pytest.approx(0.0015)
    assert data["acceptance"] is None
    assert data["backend"] == "llama.cpp (CUDA) via llama-bench"
    assert "taken as the target" in err
    assert data.pop("schema_version") == 1  # the CLI's JSON version (docs/json.md); the file has its own "schema"
    assert json.loads(out.read_text()) == data


def test_cli_import_draft_file_and_table(capsys):
    code, stdout, _ = run(["probe", "--import", str(FIX / "llama-bench-verify.md"), "--import-draft",
                           str(FIX / "curve.csv"), "--draft", "my-draft"], capsys)
    assert code == 0
    assert "t_v(n)/t_v(1)" in stdout and "interpolated" in stdout
    # t_v(9)/t_v(1) = (9/90)/(1/40) = 4.00; t_d/t_v(1) = 0.02 / 0.025 = 0.800
    assert "t_v(9)/t_v(1) = 4.00" in stdout
    assert "draft my-draft (imported:csv): t_d = 20.000 ms, t_d/t_v(1) = 0.800" in stdout
    assert "[problem] the draft step is too slow" in stdout


def test_cli_refuses_to_overwrite_the_import(tmp_path, capsys):
    src = tmp_path / "bench.md"
    src.write_bytes((FIX / "llama-bench-verify.md").read_bytes())
    code, _, err = run(["probe", "--import", str(src), "--out", str(src)], capsys)
    assert code == 2
    assert "also an input" in err
    assert src.read_bytes() == (FIX / "llama-bench-verify.md").read_bytes()


def test_cli_bad_import_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("n,seconds\nfoo,bar\n")
    code, _, err = run(["probe", "--import", str(bad)], capsys)
    assert code == 2
    assert err.startswith("error: Cannot import measurements") and err.count("\n") == 1


def test_import_path_never_imports_torch():
    src = str(FIX / "llama-bench.csv")
    code = (f"import sys\nfrom planner.cli import main\ntry:\n    main(['probe', '--import', {src!r}, '--json'])\n"
            "except SystemExit as e:\n    assert e.code == 0, e.code\nassert 'torch' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
