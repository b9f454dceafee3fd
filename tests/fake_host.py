"""An uncatalogued 64 GiB Linux CPU host for detection tests: no nvidia-smi, no torch, 40 GiB free.

Why one place: the machine-detection and machine-first report tests both pretend to be this host;
each then says how its bandwidth measures.
"""

from __future__ import annotations

from typing import Any

from planner.fits import machine_detect as D

GiB = 1 << 30


def fake_cpu_host(monkeypatch: Any) -> None:
    """Make `machine_detect` see 'Test CPU 9000' with 64 GiB RAM, 40 GiB of it available."""
    monkeypatch.setattr(D, "_run", lambda cmd: None)
    monkeypatch.setattr(D, "_virtual_memory", lambda: (64 * GiB, 40 * GiB))
    monkeypatch.setattr(D, "_platform", lambda: ("Linux", "x86_64"))
    monkeypatch.setattr(D, "_torch_installed", lambda: False)
    monkeypatch.setattr(D, "_cpu_name", lambda: "Test CPU 9000")
