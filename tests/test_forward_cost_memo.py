"""forward_cost memoised by value (issue #33): a Roof rebuilt with the same figures reuses the cost, a Roof
that differs in any field, or another engine build, is priced afresh, and memo.clear() forgets."""

from __future__ import annotations

from dataclasses import replace

from planner import engines
from planner.core import memo
from planner.engines import versions
from planner.fits.memory import Settings
from planner.sources import load_spec
from planner.speed import roofline

ROOF = roofline.Roof(bandwidth_bytes_per_s=1.0e12, peak_flops={"bf16": 1.0e14, "fp16": 1.0e14}, name="m")


def _cost(roof, **kw):
    spec = load_spec("llama-3.1-8b")
    s = Settings(context=4096, resolved_engine=engines.get("llama.cpp"))
    return roofline.forward_cost(spec, roof, n=4, context=4096, settings=s, **kw)


def test_an_equal_roof_reuses_the_cost_and_any_changed_field_does_not():
    first = _cost(ROOF)
    assert _cost(replace(ROOF)) is first  # a new Roof object with the same figures
    half = _cost(replace(ROOF, bandwidth_bytes_per_s=0.5e12))
    assert half.memory_s == 2 * first.memory_s  # the same bytes at half the bandwidth
    assert _cost(replace(ROOF, peak_flops={"bf16": 1.0e14, "fp16": 1.0e14, "fp8": 2.0e14})) is not first
    assert _cost(ROOF, overhead_s=0.0).seconds == first.seconds - first.overhead_s


def test_the_engine_build_and_a_reset_are_part_of_the_key():
    first = _cost(ROOF)
    with versions.selected({"llama.cpp": 8000}):
        assert _cost(ROOF) is not first
    memo.clear()
    again = _cost(ROOF)
    assert again is not first and again == first
