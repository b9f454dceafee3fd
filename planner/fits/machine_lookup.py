"""Machine lookup: a `--machine` reference and the override flags -> the one Machine to plan for.

Why one module: a reference is `auto` (detect this host), a catalog slug or a JSON file, and the
flags `--gpu-memory` / `--gpus` adjust it or, alone, describe a custom GPU box. This is the only
place that chooses between the catalog (machine_catalog.py) and detection (machine_detect.py),
so neither of those needs the other's import.
"""

from __future__ import annotations

import difflib
from dataclasses import replace

from ..core import paths
from ..core.errors import MachineError
from .machine import Machine, custom_gpu, with_overrides
from .machine_catalog import catalog_entries, machine_from_entry, read_entry
from .machine_detect import detect, with_host_measurements
from .machine_profile import apply_saved


def detect_auto(remeasure: bool = False) -> Machine:
    """This host: catalog figures when detection knows the device; else, for a CPU, the saved machine profile's
    measured figures (machine_profile.py) when it fits this hardware and is recent; else measured now
    (`remeasure` skips the profile), with a note saying why a profile there was not used."""
    if remeasure:
        return detect()
    live = detect(measure=False)
    if live.bandwidth_bytes_per_s or live.kind != "cpu":  # catalog figures, or a GPU nothing here can time
        return live
    saved, why = apply_saved(live)
    if saved is not None:
        return saved
    m = with_host_measurements(live)
    return replace(m, notes=(*m.notes, why)) if why.startswith("ignored") else m


def get_machine(ref: str, remeasure: bool = False) -> Machine:
    """`auto` (detect this host, or its saved profile), a catalog slug (`rtx-4090`), or a JSON file in the
    catalog schema.

    Raises:
        MachineError: unknown name (with the closest catalog names) or a bad file.
    """
    key = ref.strip()
    if key.lower() == "auto":
        return detect_auto(remeasure)
    p = paths.expand(key)
    if key.endswith(".json") or paths.is_file(p):
        if not paths.is_file(p):
            raise MachineError(f"Cannot read machine from '{key}': file not found. Give a catalog name "
                               f"(planner machines list) or an existing JSON file.")
        return machine_from_entry(read_entry(p), str(p), "file")
    entries = catalog_entries()
    slug = key.lower()
    if slug in entries:
        return machine_from_entry(entries[slug], f"catalogs/machines/{slug}.json")
    close = difflib.get_close_matches(slug, list(entries), n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise MachineError(f"Cannot find machine '{ref}' in the catalog ({len(entries)} machines).{hint} "
                       f"See 'planner machines list', or pass a JSON file or 'auto'.")


def resolve_machine(ref: str | None, gpu_memory_bytes: int | None = None, gpus: int | None = None,
                    remeasure: bool = False) -> Machine:
    """The machine the CLI flags describe: `--machine` (default auto), with `--gpu-memory`/`--gpus`
    overrides; `--gpu-memory` alone describes a custom GPU box.

    Raises:
        MachineError: unknown name, bad file, or bad override.
    """
    if ref is None and gpu_memory_bytes is not None:
        return custom_gpu(gpu_memory_bytes, gpus or 1)
    m = get_machine(ref or "auto", remeasure)
    if gpus is not None and m.kind != "gpu" and gpus != m.n_devices:  # a CPU or a Mac has no GPUs to count
        raise MachineError(f"Cannot use --gpus {gpus} on '{m.display_name}': it is a {m.kind} machine with "
                           f"{m.n_devices} device(s). Name a GPU machine (--machine) or drop --gpus.")
    if gpu_memory_bytes is not None or gpus is not None:
        m = with_overrides(m, memory_bytes=gpu_memory_bytes, n_devices=gpus)
    return m
