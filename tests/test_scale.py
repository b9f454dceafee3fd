"""Scale (issue #33): the tokenizer-family index, and fleet rows equal to running machines one by one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner import engines
from planner.core import memo, pool
from planner.core.errors import UsageError
from planner.fits import fit
from planner.fits.machine_lookup import get_machine
from planner.fits.memory import Settings
from planner.plan import fleet as F
from planner.sources import catalog

from .cli_run import run_cli

REPO = Path(__file__).resolve().parents[1]


def test_family_index_holds_exactly_what_a_scan_finds_in_file_order():
    scanned: dict[str, list[str]] = {}
    for e in catalog.entries():
        fam = (e.get("tokenizer") or {}).get("family")
        if fam:
            scanned.setdefault(fam, []).append(e["id"])
    assert len(scanned) > 5  # the bundled catalog has many families: the comparison is not vacuous
    for fam, ids in scanned.items():
        assert [e["id"] for e in catalog.with_tokenizer_family(fam)] == ids
    assert catalog.with_tokenizer_family("no-such-family") == ()


def _report(args: list[str], capsys) -> dict:
    code, out, err = run_cli(["report", *args, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


def test_fleet_rows_equal_each_machine_alone(capsys):
    """Machine-independent work is shared across a fleet (core/memo.py): it must never change a row."""
    machines = ("rtx-4090", "2x-rtx-4090", "m3-max-36gb")
    narrow = ["--family", "qwen2.5,smollm2"]  # two lineages with catalog drafts: speculation priced on each machine
    fleet = _report([x for m in machines for x in ("--machine", m)] + narrow, capsys)
    assert {r["machine"] for r in fleet["rows"]} == set(machines)
    for m in machines:
        memo.clear()  # each machine as its own run would compute it: cold
        alone = _report(["--machine", m, *narrow], capsys)
        assert [r for r in fleet["rows"] if r["machine"] == m] == alone["rows"]
        assert any(r["draft"] for r in alone["rows"]) or m == "m3-max-36gb"


def test_a_model_whose_heads_do_not_split_over_every_gpu_runs_on_fewer():
    """SmolLM2-135M has 9 attention heads: vLLM on 2 GPUs cannot shard them, so the row is tp 1 (not a failed report)."""
    m, t = get_machine("2x-rtx-4090"), F.target("HuggingFaceTB/SmolLM2-135M")
    assert fit.heads_refuse_tp(t.spec, 2, engines.get("vllm"))
    row = F.row(t, m, F.Options(context=4096, engine=engines.get("vllm")))
    one = fit.Problem(t.spec, m, Settings(context=4096, batch=1, resolved_engine=engines.get("vllm"), spec_tokens=0),
                      fit.default_layout(2, engines.get("vllm"), tp=1, pp=1))
    assert row.error is None and row.fits
    assert row.headroom_bytes == (row.choice.headroom_bytes if row.choice.draft else fit.headroom(one))


@pytest.mark.parametrize("ref", ["llama-3.1-8b", "google/gemma-2-9b-it", "deepseek-v3", "Qwen/Qwen3-Next-80B-A3B-Thinking", "tiiuae/Falcon-H1-0.5B-Base"])
def test_kv_ledger_by_distinct_layers_equals_the_sum_over_every_layer(ref):
    """The KV ledger sums distinct layers x their count (fleet speed); the layer-by-layer sum is the reference."""
    from planner import engines
    from planner.fits import memory as M
    from planner.fits.split import shard_spec
    from planner.sources import load_spec

    spec = load_spec(ref)
    for engine in ("vllm", "llama.cpp", "transformers"):
        for context, batch, k in ((4096, 1, 0), (33_000, 4, 3)):
            s = Settings(context=context, batch=batch, resolved_engine=engines.get(engines.canonical(engine)), spec_tokens=k)
            fmt, swa = M.kv_format(s.kv_dtype, spec.dtype, s.resolved_engine), M.runs_swa(spec, s)
            kv = sum(M.layer_token_bytes(x, fmt, s.resolved_engine) * M.layer_tokens_held(x, s, context, swa=swa)
                     for x in spec.layers if x.has_kv)
            copies = 1 + k if s.resolved_engine.state_copies_per_spec_token and k else 1
            state = batch * copies * sum(M.state_bytes_per_sequence(x, s, spec.dtype, spec.state_dtype)
                                         for x in spec.layers)
            assert M.kv_cache(spec, s, context) == (kv + state, state)
    half = shard_spec(spec, (0, spec.n_layers // 2), 2, engines.get("vllm"), last=False)
    assert shard_spec(spec, (0, spec.n_layers // 2), 2, engines.get("vllm"), last=False) is half  # one part per layout
    assert half.n_layers == spec.n_layers // 2 and half.vocab == 0


# --- --jobs: a process pool whose rows are the serial run's ---------------------------------------

def _square_or_fail(x: int) -> int:
    if x < 0:
        raise ValueError(f"negative {x}")
    return x * x


def test_pool_keeps_input_order_and_reports_each_piece():
    seen: list[tuple[int, int, int]] = []
    items = list(range(7))
    assert pool.map_in_order(_square_or_fail, items, 3, lambda d, t, x: seen.append((d, t, x))) == [x * x for x in items]
    assert sorted(x for _, _, x in seen) == items and [d for d, _, _ in seen] == list(range(1, 8))
    assert all(t == 7 for _, t, _ in seen) and seen[0][2] == 0  # the first piece runs here, first


def test_pool_raises_the_first_failure_in_input_order():
    with pytest.raises(ValueError, match="negative -2"):
        pool.map_in_order(_square_or_fail, [1, -2, 3, -4], 2)


def test_jobs_out_of_range_is_a_usage_error():
    assert pool.check_jobs(3) == 3 and pool.check_jobs(0) >= 1
    with pytest.raises(UsageError, match="--jobs 999"):
        pool.check_jobs(999)


def test_fleet_report_with_jobs_equals_the_serial_run(capsys):
    args = [x for m in ("rtx-4090", "l4", "h100-sxm") for x in ("--machine", m)] + ["--family", "qwen2.5", "--json"]
    code, serial, _ = run_cli(["report", *args], capsys)
    memo.clear()
    code_j, parallel, err = run_cli(["report", *args, "--jobs", "2"], capsys)
    assert code == code_j == 0 and parallel == serial
    assert sorted(line.split("] ", 1)[1].split(":")[0] for line in err.splitlines()) == ["h100-sxm", "l4", "rtx-4090"]


def test_check_with_jobs_equals_the_serial_run(capsys):
    args = ["check", "--config", str(REPO / "docs" / "examples" / "planner.toml"), "--json"]
    code, serial, _ = run_cli(args, capsys)
    memo.clear()
    code_j, parallel, err = run_cli([*args, "--jobs", "3"], capsys)
    assert code == code_j and parallel == serial and json.loads(serial)["results"]
    assert len(err.splitlines()) == len({(r["deployment"], r["machine"]) for r in json.loads(serial)["results"]})
