"""`--gpus N` on a one-GPU entry is an N-GPU box (fits/machine.with_overrides): named so, its ranks linked
(PCIe assumed and said so where the entry catalogues no link), and tensor parallelism priced with the
all-reduce per layer (speed/roofline.allreduce_s). Figures worked by hand."""

from __future__ import annotations

import json

import pytest

from planner import engines
from planner.core.constants import ASSUMED_LINK_BYTES_PER_S, ASSUMED_LINK_LATENCY_S
from planner.fits import fit as F
from planner.fits.machine import with_overrides
from planner.fits.machine_lookup import get_machine
from planner.fits.memory import Settings
from planner.plan.roof import roofline_machine
from planner.sources import load_spec
from planner.speed import roofline

from .cli_run import run_cli as run


def test_two_copies_of_a_one_gpu_entry_are_a_two_gpu_box_on_an_assumed_pcie_link():
    one = get_machine("h100-sxm")
    assert one.interconnect is None
    two = with_overrides(one, n_devices=2)
    assert (two.name, two.display_name, two.n_devices) == ("2x-h100-sxm", "2 x NVIDIA H100 SXM 80GB", 2)
    assert two.interconnect == (32_000_000_000, 1.01e-05) == (ASSUMED_LINK_BYTES_PER_S, ASSUMED_LINK_LATENCY_S)
    assert two.sources["interconnect"].startswith("assumed PCIe 4.0 x16")
    # a catalogued box keeps its own name and link; one device stays the entry itself
    box = get_machine("8x-h100-sxm")
    assert with_overrides(box, n_devices=2).name == "8x-h100-sxm"
    assert with_overrides(box, n_devices=2).interconnect == box.interconnect
    assert with_overrides(one, n_devices=1).name == "h100-sxm"


def test_the_all_reduce_of_a_one_token_forward_by_hand():
    # Llama-3.1-8B: 32 layers, hidden 4096; TP 2 over 32 GB/s, 10.1 us a small all-reduce.
    # per all-reduce: 10.1e-6 + 2 (2-1)/2 x (1 x 4096 x 2 B) / 32e9 = 10.1e-6 + 0.256e-6 s; 2 per layer x 32
    spec = load_spec("llama-3.1-8b-instruct")
    roof = roofline_machine(with_overrides(get_machine("h100-sxm"), n_devices=2), F.Layout(tp=2), engines.get("vllm"))
    want = 2 * 32 * (1.01e-05 + 4096 * 2 / 32e9)
    assert roofline.allreduce_s(spec, roof, 1) == pytest.approx(want) == pytest.approx(6.6278e-4, rel=1e-4)
    c = roofline.forward_cost(spec, roof, n=1, context=4096, settings=Settings(context=4096, resolved_engine=engines.get("vllm")))
    assert c.comm_s == pytest.approx(want)
    # 4 sequences x 5 verified tokens: the bytes grow with batch x n, the latency does not
    assert roofline.allreduce_s(spec, roof, 20) == pytest.approx(2 * 32 * (1.01e-05 + 20 * 4096 * 2 / 32e9))


def test_recommend_reports_the_box_and_says_what_the_ranks_pay(capsys):
    code, out, err = run(["recommend", "llama-3.1-8b-instruct", "--machine", "h100-sxm", "--gpus", "2",
                          "--engine", "vllm", "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["machine"] == "2x-h100-sxm"
    notes = " ".join(d["notes"])
    assert "tensor parallel 2: 2 all-reduces per layer x 32 layers" in notes and "assumed PCIe 4.0 x16" in notes
