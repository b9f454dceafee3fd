"""`planner machines list | show NAME | detect`: the machine catalog and what this host has."""

from __future__ import annotations

from typing import Annotated

import typer

from ..core.fmt import fmt_bytes
from ..fits.machine import Machine, describe
from ..fits.machine_catalog import catalog_entries
from ..fits.machine_detect import detect
from ..fits.machine_lookup import get_machine
from ..fits.machine_profile import save as save_profile
from ..render import width
from ._common import app, emit, say
from ._options import JsonOpt, VerboseOpt, WideOpt

machines_app = typer.Typer(no_args_is_help=True, help="Machines: the bundled catalog and detection of this host.")
app.add_typer(machines_app, name="machines")

NameArg = Annotated[str, typer.Argument(help="Catalog name (e.g. rtx-4090, m3-max-36gb) or a JSON file.")]


def _flops(n: int | None) -> str:
    return "-" if n is None else f"{n / 1e12:.1f}"


@machines_app.command("list")
def list_cmd(as_json: JsonOpt = False, wide: WideOpt = False) -> None:
    """List the bundled machines: memory, bandwidth and dense BF16/FP16 TFLOP/s.

    \b
    Examples:
      planner machines list
      planner machines list --json
    """
    width.set_wide(wide)
    entries = catalog_entries()
    if as_json:
        emit(list(entries.values()))
        return
    rows = [[e["name"], e["kind"], f"{e['devices']} x {fmt_bytes(e['memory_bytes'])}",
             f"{e['bandwidth_bytes_per_s'] / 1e9:.0f}", _flops(e["peak_flops"]["bf16"]),
             _flops(e["peak_flops"]["fp16"]), e["display_name"]] for e in entries.values()]
    # fp16 TF (the bf16 figure but on Pascal) is the first to go on a narrow terminal; --wide keeps it
    say(width.table(rows, ["name", "kind", "memory", "GB/s", "bf16 TF", "fp16 TF", "machine"], shrink=(6,),
                    floor=16, drop=(5,)))


@machines_app.command("show")
def show_cmd(name: NameArg, as_json: JsonOpt = False, wide: WideOpt = False, verbose: VerboseOpt = False) -> None:
    """One machine with every figure and its source.

    \b
    Examples:
      planner machines show h100-sxm
      planner machines show h100-sxm -v
      planner machines show ./my-box.json --json
    """
    width.set_wide(wide)
    m = get_machine(name)
    data = describe(m)
    if as_json:
        emit(data)
        return
    lines = [f"{m.display_name} [{m.name}] ({m.kind}, {m.vendor}, {m.origin})",
             f"memory: {m.n_devices} x {fmt_bytes(m.memory_bytes)} ({m.memory_bytes:,} B)"]
    if m.usable_fraction is not None:
        lines.append(f"usable share: {m.usable_fraction:.4g}")
    if m.gpu_cores:
        lines.append(f"GPU cores: {m.gpu_cores}")
    if m.bandwidth_bytes_per_s:
        kind = f" ({m.memory_type.upper()})" if m.memory_type else ""
        lines.append(f"bandwidth: {m.bandwidth_bytes_per_s / 1e9:,.1f} GB/s{kind}")
    lines.append("peak dense FLOP/s: " + ", ".join(f"{k} {_flops(v)} T" for k, v in m.peak_flops.items()))
    if verbose:  # the citations (URLs past 80 columns among them) on request: one screen by default
        lines += [f"source ({k}): {v}" for k, v in m.sources.items()]
    elif m.sources:
        lines.append(f"sources: {', '.join(m.sources)} (each with its citation: -v or --json)")
    lines += [f"note: {n}" for n in m.notes]
    say("\n".join(x for line in lines for x in width.wrap(line)))  # long sources wrap; --wide: whole


SaveOpt = Annotated[bool, typer.Option(
    "--save", help="Write the measured figures as this host's machine profile (the user's cache directory, or "
                   "SPEC_PLANNER_PROFILE_DIR); --machine auto then reads them instead of measuring.")]


def measured_lines(m: Machine) -> list[str]:
    """Each measured figure with its spread, trial count, time taken and when it was measured."""
    lines = []
    for key, s in m.measured.items():
        unit, div = ("GB/s", 1e9) if key == "bandwidth" else ("", 1.0)
        lines.append(f"  {key}: {s.median / div:,.1f} {unit} (IQR {s.q1 / div:,.1f}-{s.q3 / div:,.1f}, "
                     f"{s.kept} of {s.trials} trials kept, {s.seconds:.2f} s, {s.clock}), measured {m.measured_at}")
    if m.measured and m.peak_flops.get("bf16"):
        lines.append(f"  FLOP/s: {_flops(m.peak_flops['bf16'])} T bf16 ({m.sources.get('flops', 'estimate')})")
    return lines


@machines_app.command("detect")
def detect_cmd(as_json: JsonOpt = False, save: SaveOpt = False) -> None:
    """What this host has: GPUs (nvidia-smi, else torch), Apple unified memory, or CPU RAM; an uncatalogued
    CPU's bandwidth measured now (repeated trials, with their spread).

    \b
    Examples:
      planner machines detect
      planner machines detect --save
      planner machines detect --json
    """
    m = detect()
    saved = save_profile(m) if save else None
    if as_json:
        emit({**describe(m), **({"saved_profile": str(saved)} if saved else {})})
        return
    lines = [f"{m.display_name} ({m.kind}, {m.vendor}); memory from {m.sources['memory']}"]
    for d in m.devices:
        free = f", {fmt_bytes(d.free_bytes)} free" if d.free_bytes is not None else ""
        share = f", usable share {d.usable_fraction:.4g}" if d.usable_fraction is not None else ""
        lines.append(f"  device {d.index}: {d.name}: {fmt_bytes(d.memory_bytes)}{free}{share}")
    if m.host_memory_bytes is not None and m.kind == "gpu":
        lines.append(f"  host RAM: {fmt_bytes(m.host_memory_bytes)}")
    lines += measured_lines(m)
    lines += [f"  note: {n}" for n in m.notes]
    if saved:
        lines.append(f"saved the machine profile to {saved}")
    say("\n".join(lines))
