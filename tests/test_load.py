"""Speculation under load (plan/load.py): the per-batch curve and its crossover."""

from __future__ import annotations

import json

import pytest

from planner.cli import main
from planner.core.errors import UsageError
from planner.core.units import parse_batches
from planner.plan.load import BatchPoint, crossover_batch


def _point(batch: int, speedup: float) -> BatchPoint:
    return BatchPoint(batch=batch, k=1, speedup=speedup, speedup_interval=(speedup, speedup), verdict="x",
                      tokens_per_s_per_seq=1.0, tokens_per_s=float(batch), baseline_tokens_per_s=1.0, fits=True,
                      headroom_bytes=0)


def test_crossover_is_the_first_batch_that_stops_paying():
    assert crossover_batch([_point(1, 1.6), _point(32, 1.3), _point(256, 0.98), _point(1024, 0.7)]) == 256
    assert crossover_batch([_point(1, 1.6), _point(8, 1.2)]) is None


def test_parse_batches():
    assert parse_batches("1,8, 32,128") == (1, 8, 32, 128) and parse_batches("32") == (32,)
    for bad in ("0", "-1", "8,x", "²", "9" * 40, ""):
        with pytest.raises(UsageError, match="--batch"):
            parse_batches(bad)


def test_per_batch_curve_through_the_cli(capsys):
    """Llama-3.3-70B + 3.2-1B on 8x H100 (vLLM, fp8 KV, 512 tokens): at 1024 sequences one verify forward
    is 2048+ token rows per step: compute-bound, and speculation no longer pays."""
    with pytest.raises(SystemExit) as e:
        main(["recommend", "llama-3.3-70b-instruct", "--candidates", "llama-3.2-1b-instruct", "--machine",
              "8x-h100-sxm", "--engine", "vllm", "--kv-dtype", "fp8", "--context", "512", "--batch",
              "1,32,256,1024", "--json"])
    assert e.value.code == 0
    plan = json.loads(capsys.readouterr().out)["plans"][0]
    pts = plan["per_batch"]
    assert [p["batch"] for p in pts] == [1, 32, 256, 1024]
    assert set(pts[0]) >= {"batch", "k", "speedup", "speedup_interval", "tokens_per_s_per_seq", "tokens_per_s"}
    assert pts[-1]["speedup"] < 1.0 and plan["crossover_batch"] == 1024
    assert pts[-1]["k"] <= pts[0]["k"]  # the best K falls as the load grows
    for p in pts:  # aggregate = per sequence x concurrency
        assert p["tokens_per_s"] == pytest.approx(p["tokens_per_s_per_seq"] * p["batch"], rel=1e-3)
