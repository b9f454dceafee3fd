"""Resources and absurd input (issue #19): each case reproduces an attack and checks the one-line answer.

GGUF headers read with bounded reads (a valid file bigger than the address space still reads), arrays of
arrays capped, nvidia-smi read to a cap with ASCII digits only, added_tokens_decoder keys that are
isdigit() but not int, thousands of digits on the command line, control characters in JUnit names and
hostile folder names in stdout and the Markdown report, and the CLI's last line of defence.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from planner import cli
from planner.core.errors import HeaderError
from planner.sources.gguf_header import ARRAY, UINT8, read_header
from planner.sources.tokenizer_special import decoder_added_tokens

from .conftest import CONFIGS
from .fuzz.harness import ROOT, run_cli
from .test_fuzz_gguf import F32, KV, TI, base_model, encode

BIG = 4 * 2**30  # a 4 GiB tensor: the file is sparse, its size is what an mmap would have to map


def _subprocess(code: str, env: dict[str, str] | None = None, limit_as: int | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "SPEC_PLANNER"))}
    full.update(HF_HUB_OFFLINE="1", **(env or {}))
    pre = (lambda: resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))) if limit_as else None
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, cwd=ROOT,
                          timeout=120, preexec_fn=pre)


def test_valid_gguf_larger_than_the_address_space_still_reads(tmp_path):
    """The reader used to mmap the whole file: under a 2 GiB address-space limit a 4 GiB GGUF was refused."""
    g = base_model()
    g.tensors.append(TI("extra.weight", [2**15, BIG // 4 // 2**15], F32))
    path = tmp_path / "big.gguf"
    head = encode(g)
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(len(head) + BIG + 2**20)
    r = _subprocess(f"from planner.sources.gguf_header import read_header\nh = read_header({str(path)!r})\n"
                    f"print(len(h.tensors), h.tensor_bytes)", limit_as=2 * 2**30)
    assert r.returncode == 0, r.stderr
    n, nbytes = map(int, r.stdout.split())
    assert n == len(g.tensors) and nbytes > BIG


def test_gguf_array_of_two_to_the_24_empty_arrays_is_refused_fast(tmp_path):
    """A sparse 200 MB array of 2^24 empty arrays took a minute per key; the count is refused at once."""
    g = base_model()
    n = 2**24
    body = struct.pack("<IQ", ARRAY, n)  # then n x (u32 type UINT8, u64 count 0) = 12 zero bytes each: sparse
    g.kvs.append(KV("x.nested", ARRAY, body))
    head = encode(g)
    cut = head.index(body) + len(body)
    path = tmp_path / "nested.gguf"
    with open(path, "wb") as fh:
        fh.write(head[:cut])
        fh.truncate(cut + 12 * n + len(head) - cut)
    assert UINT8 == 0  # zeros are valid empty UINT8 arrays: only the count can stop the walk
    t0 = time.perf_counter()
    with pytest.raises(HeaderError, match="more than the 65536 allowed"):
        read_header(path)
    assert time.perf_counter() - t0 < 2


def _fake_tool(tmp_path: Path, script: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / "nvidia-smi"
    tool.write_text("#!/bin/sh\n" + script + "\n")
    tool.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}


# Peak RSS from VmHWM: ru_maxrss survives fork+exec on Linux, so a child of a big pytest reports its parent's.
PEAK_RSS = "import re\ndef peak_kib():\n    return int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())[1])\n"
_DETECT = (PEAK_RSS + "from planner.cli import main\ntry:\n    main(['machines', 'detect', '--json'])\n"
           "except SystemExit as e:\n    print('rc', e.code, peak_kib())\n")


def test_nvidia_smi_output_is_read_to_a_cap(tmp_path):
    """3 GB from nvidia-smi used to be read whole (~6 GB RSS); now the pipe is read to 1 MiB and the tool killed."""
    env = _fake_tool(tmp_path, "head -c 3000000000 /dev/zero | tr '\\0' '1'")
    t0 = time.perf_counter()
    r = _subprocess(_DETECT, env)
    assert time.perf_counter() - t0 < 30
    rc, rss_kib = r.stdout.split()[-2:]
    assert rc == "2" and int(rss_kib) < 300 * 1024, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "more than 1048576 bytes" in lines[0], r.stderr


def test_nvidia_smi_unicode_digits_are_one_line(tmp_path):
    env = _fake_tool(tmp_path, "echo '0, NVIDIA Fake, \u00b2\u0663576, 1000'")
    r = _subprocess(_DETECT, env)
    assert r.stdout.split()[-2] == "2", (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "must be integers" in lines[0], r.stderr


def test_added_tokens_decoder_keys_that_are_not_ids():
    """'²'.isdigit() is True but int('²') fails; 5000 digits pass isdigit() and exceed the int limit."""
    tc = {"added_tokens_decoder": {"\u00b2": {"content": "<a>"}, "9" * 5000: {"content": "<b>"},
                                   "\u0663": {"content": "<c>"}, "7": {"content": "<d>"}}}
    assert decoder_added_tokens(tc) == {"<d>": 7}


@pytest.mark.parametrize("argv", [
    ["memory", "llama-3.1-8b-instruct", "--context", "9" * 5000],
    ["memory", "llama-3.1-8b-instruct", "--batch", "9" * 5000],
    ["fit", "llama-3.1-8b-instruct", "--gpu-memory", "9" * 5000 + "GiB"],
    ["fit", "llama-3.1-8b-instruct", "--gpu-memory", "24GiB", "--gpus", "9" * 300],
    ["memory", "llama-3.1-8b-instruct", "--overhead", "1e400GiB"],
    ["probe", "llama-3.1-8b-instruct", "--seed", "9" * 5000],
    ["probe", "llama-3.1-8b-instruct", "--seed", "99999999999999999999999"],
    ["probe", "llama-3.1-8b-instruct", "--budget-s", "1e400"],
    ["recommend", "llama-3.1-8b-instruct", "--temperature", "1e400"],
    ["recommend", "llama-3.1-8b-instruct", "--acceptance", "9" * 5000],
    ["memory", "~nosuchuser/model"],
    ["memory", "x" * 300 + "/config.json"],
    ["memory", "llama-3.1-8b-instruct", "--nope"],
])
def test_absurd_arguments_are_one_line(argv):
    r = run_cli(argv, ["Cannot", "Invalid value", "No such option", argv[-1][:30]], json_out=False)
    assert r.code == 2, r


def _evil_folder(tmp_path: Path) -> Path:
    d = tmp_path / "evil\nerror: forged <script>alert(1)"
    d.mkdir()
    (d / "config.json").write_text((CONFIGS / "SmolLM2-135M.json").read_text())
    return d


def test_hostile_folder_names_stay_on_their_line_and_out_of_the_markup(tmp_path, capsys):
    d = str(_evil_folder(tmp_path))
    for argv in (["memory", d], ["fit", d, "--machine", "rtx-4090"], ["recommend", d], ["pair", d, d]):
        r = run_cli(argv, [d], json_out=False)
        assert r.code in (0, 1), r
        assert not [ln for ln in r.out.splitlines() if ln.lstrip().startswith("error:")], (argv, r.out)
    md = tmp_path / "r.md"
    r = run_cli(["report", d, "--machine", "rtx-4090", "--out", str(md), "--no-plots"], [d], json_out=False)
    assert r.code in (0, 1), r
    text = md.read_text()
    outside_code = text.split("```")[0::2]  # fenced blocks are literal text in Markdown
    assert not [ln for part in outside_code for ln in part.splitlines() if ln.startswith("error:")]
    assert "<script" not in "".join(outside_code) and "&lt;script" in text


def test_junit_with_control_characters_stays_well_formed(tmp_path):
    pol = tmp_path / "planner.toml"
    pol.write_text('[[deployment]]\nname = "chat\\u0001\\u001b[31m"\ntarget = "llama-3.1-8b-instruct"\n'
                   'machine = "h100-sxm"\nengine = "vllm"\n')
    junit = tmp_path / "j.xml"
    r = run_cli(["check", "--config", str(pol), "--junit", str(junit), "--json"], [pol])
    assert r.code in (0, 1), r
    root = ET.parse(junit).getroot()  # the old writer put raw \x01 in: no parser accepted it
    assert root.find("testsuite").get("name") == "chat\\x01\\x1b[31m"


def test_last_line_of_defence(monkeypatch, capsys):
    """Any exception that is not a PlannerError: one line, exit 2, a hint; SPEC_PLANNER_DEBUG=1 shows it."""
    from planner.commands import catalog

    def boom(*a, **k):
        raise TypeError("line one\nline two")

    cli._register(("catalog",))
    monkeypatch.setattr(catalog.catalog, "entries", boom)
    with pytest.raises(SystemExit) as e:
        cli.main(["catalog"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: Unexpected TypeError: line one") and "SPEC_PLANNER_DEBUG=1" in err
    monkeypatch.setenv("SPEC_PLANNER_DEBUG", "1")
    with pytest.raises(TypeError):
        cli.main(["catalog"])


def test_fuzzed_folder_names_never_forge_lines(tmp_path):
    """Independent hostile names (every C0 control, DEL, a lone surrogate byte, markup): one line each."""
    names = [f"m{chr(c)}x" for c in range(1, 32) if chr(c) not in "/"] + ["m\x7fx", "m<img src=x>", "m&lt;x"]
    names.append(os.fsdecode(b"m\xff\xfex"))
    for name in names:
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(json.dumps(json.loads((CONFIGS / "SmolLM2-135M.json").read_text())))
        r = run_cli(["memory", str(d)], [d], json_out=False)
        assert r.code == 0 and all(ln.isprintable() for ln in r.out.splitlines()), (name, r.out)


@pytest.mark.parametrize("extra", ['profile = "~nosuchuser/p.json"', 'profile = "' + "p" * 300 + '.json"',
                                   'machine = "~nosuchuser/m.json"'])
def test_policy_paths_that_cannot_be_looked_at(tmp_path, extra):
    machine = "" if extra.startswith("machine") else 'machine = "h100-sxm"\n'
    pol = tmp_path / "planner.toml"
    pol.write_text(f'[[deployment]]\nname = "c"\ntarget = "llama-3.1-8b-instruct"\n{machine}engine = "vllm"\n'
                   f"{extra}\n")
    for argv in (["check", "--config", str(pol)], ["report", "--config", str(pol), "--out", str(tmp_path / "r.md")]):
        r = run_cli(argv, [pol], json_out=False)
        assert r.code == 2 and ("not found" in r.err or "No such file" in r.err or "too long" in r.err), r


def test_gguf_general_name_cannot_forge_lines(tmp_path):
    g = base_model()
    g.kvs = [KV(k.key, k.vtype, "x\nerror: forged\x1b[2J") if k.key == "general.name" else k for k in g.kvs]
    path = tmp_path / "named.gguf"
    path.write_bytes(encode(g))
    for argv in (["memory", str(path)], ["fit", str(path), "--machine", "rtx-4090"], ["pair", str(path), str(path)]):
        r = run_cli(argv, [path], json_out=False)
        assert r.code in (0, 1), r
        assert all(ln.isprintable() and not ln.lstrip().startswith("error:") for ln in r.out.splitlines()), r.out
