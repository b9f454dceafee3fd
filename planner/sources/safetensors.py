"""safetensors headers -> TensorInfo, without reading tensor data.

Format (safetensors docs): 8-byte little-endian header length N, then N bytes of
JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
then the data region. We read at most 8 + N bytes, N capped like huggingface_hub
(25 MB) and checked against the file size, and validate every entry: known dtype,
non-negative shape, end - begin == numel x itemsize, offsets inside the data
region and not overlapping. One `parse_header` serves local files and Hub bytes.
"""

from __future__ import annotations

import itertools
import struct
from pathlib import Path
from typing import Any

from ..core import dtypes, paths
from ..core.constants import MAX_SHARDS, SAFETENSORS_MAX_HEADER_BYTES
from ..core.errors import ConfigError, HeaderError, PlannerError
from ..core.jsonio import parse_json, read_json_object

RawTensor = tuple[str, str, tuple[int, ...]]  # name, dtype, shape


def parse_header(data: bytes, origin: str, *, data_size: int | None = None) -> list[RawTensor]:
    """Validate a header JSON blob (without the length prefix) and list its tensors.

    Args:
        data: the N header bytes.
        origin: file name or URL, for messages.
        data_size: bytes after the header when known (local files), to bound offsets.

    Raises:
        HeaderError: invalid JSON, unknown dtype, bad shape, or inconsistent offsets.
    """
    try:
        obj = parse_json(data, origin)
    except ConfigError as e:  # ConfigError -> HeaderError: this is a weights file
        raise HeaderError(f"Cannot parse safetensors header of '{origin}': {e}", origin) from e
    if not isinstance(obj, dict):
        raise HeaderError(f"Cannot parse safetensors header of '{origin}': expected a JSON object.", origin)
    return validate_entries(obj, origin, data_size=data_size)


def validate_entries(obj: dict[str, Any], origin: str, *, data_size: int | None = None) -> list[RawTensor]:
    """Check every header entry (dtype, shape, offsets, overlaps) and list the tensors.

    Raises:
        HeaderError: the first inconsistency found, naming the tensor.
    """
    tensors: list[RawTensor] = []
    spans: list[tuple[int, int, str]] = []
    for name, info in obj.items():
        if name == "__metadata__":
            continue
        dtype, shape, begin, end = _entry(name, info, origin)
        numel = 1
        for d in shape:
            numel *= d
        if end - begin != dtypes.nbytes(dtype, numel):
            raise HeaderError(f"Cannot read '{origin}': tensor '{name}' has {end - begin} data bytes but shape "
                              f"{list(shape)} of {dtype} needs {dtypes.nbytes(dtype, numel)}.", origin)
        if data_size is not None and end > data_size:
            raise HeaderError(f"Cannot read '{origin}': tensor '{name}' ends at byte {end} of the data region, "
                              f"past its end ({data_size} bytes): the file is truncated.", origin)
        tensors.append((name, dtype, shape))
        if end > begin:
            spans.append((begin, end, name))
    spans.sort()
    for (b0, e0, n0), (b1, _e1, n1) in itertools.pairwise(spans):
        if b1 < e0:
            raise HeaderError(f"Cannot read '{origin}': tensors '{n0}' and '{n1}' overlap "
                              f"(bytes {b0}-{e0} and {b1}-...).", origin)
    return tensors


def _entry(name: str, info: Any, origin: str) -> tuple[str, tuple[int, ...], int, int]:
    def bad(what: str) -> HeaderError:
        return HeaderError(f"Cannot read '{origin}': tensor '{name}' {what}.", origin)

    if not isinstance(info, dict):
        raise bad("is not an object")
    dtype = info.get("dtype")
    if not isinstance(dtype, str) or dtype not in dtypes.FORMATS or dtypes.FORMATS[dtype].block_elems != 1:
        raise bad(f"has unknown dtype {dtype!r:.30}")
    shape = info.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40
                                               for d in shape) or len(shape) > 8:
        raise bad(f"has an invalid shape {shape!r:.60}")
    offs = info.get("data_offsets")
    if (not isinstance(offs, list) or len(offs) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offs)
            or not 0 <= offs[0] <= offs[1]):
        raise bad(f"has invalid data_offsets {offs!r:.60}")
    return dtype, tuple(shape), offs[0], offs[1]


def header_length(prefix: bytes, size: int | None, origin: str) -> int:
    """The header length N from the first 8 bytes, checked against the cap and the file size.

    One check for local files and Hub range reads: nothing is read or allocated for N bytes
    before N is known to fit in the file.

    Raises:
        HeaderError: fewer than 8 bytes, N over SAFETENSORS_MAX_HEADER_BYTES, or past the end of the file.
    """
    if len(prefix) < 8:
        raise HeaderError(f"Cannot read '{origin}': {size if size is not None else len(prefix)} bytes is too "
                          f"short for a safetensors file (expected an 8-byte header length).", origin)
    (n,) = struct.unpack("<Q", prefix[:8])
    if n > SAFETENSORS_MAX_HEADER_BYTES:
        raise HeaderError(f"Cannot read '{origin}': safetensors header length {n} is larger than the "
                          f"{SAFETENSORS_MAX_HEADER_BYTES}-byte maximum.", origin)
    if size is not None and n > size - 8:
        raise HeaderError(f"Cannot read '{origin}': header claims {n} bytes but the file has only "
                          f"{size - 8} after the length prefix (truncated).", origin)
    return n


def read_header(path: str | Path) -> list[RawTensor]:
    """Read and validate one local .safetensors file's header (at most 8 + 25 MB read).

    Raises:
        HeaderError: truncated file, oversized or inconsistent header.
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        with p.open("rb") as fh:
            n = header_length(fh.read(8), size, str(p))
            data = fh.read(n)
    except OSError as e:
        raise HeaderError(f"Cannot read '{p}': {e.strerror or e}.", p) from e
    return parse_header(data, str(p), data_size=size - 8 - n)


def read_index(path: str | Path) -> dict[str, str]:
    """`model.safetensors.index.json` -> {tensor name: shard file name}, names checked.

    Raises:
        HeaderError: no weight_map, a shard name that escapes the directory, too many shards.
    """
    p = Path(path)
    try:
        obj = read_json_object(p, what="safetensors index")
    except PlannerError as e:
        raise HeaderError(str(e), p) from e
    wmap = obj.get("weight_map")
    if not isinstance(wmap, dict) or not wmap:
        raise HeaderError(f"Cannot read '{p}': 'weight_map' is missing or empty.", p)
    shards = set()
    for tensor, shard in wmap.items():
        if not isinstance(shard, str) or not shard.endswith(".safetensors") or "/" in shard or "\\" in shard \
                or shard.startswith("."):
            raise HeaderError(f"Cannot read '{p}': tensor '{tensor}' maps to an invalid shard name "
                              f"{shard!r:.80} (expected a .safetensors file in the same directory).", p)
        shards.add(shard)
    if len(shards) > MAX_SHARDS:
        raise HeaderError(f"Cannot read '{p}': {len(shards)} shards is more than the {MAX_SHARDS} allowed.", p)
    return wmap


def read_dir_tensors(directory: Path) -> tuple[list[RawTensor], list[str]] | None:
    """All tensors of a local checkpoint directory (index + shards, or single files).

    Returns None when the directory holds no .safetensors file. The second item lists
    the files read. Tensors the index names must be found in their shard.

    Raises:
        HeaderError: a shard named by the index is missing, or any header is invalid.
    """
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        wmap = read_index(index)
        out: list[RawTensor] = []
        files = sorted(set(wmap.values()))
        for shard in files:
            sp = directory / shard
            if not paths.is_file(sp):  # a 300-byte shard name is missing, not an OSError
                raise HeaderError(f"Cannot read checkpoint '{directory}': the index names shard '{shard}', "
                                  f"which is missing.", sp)
            found = read_header(sp)
            names = {t[0] for t in found}
            wanted = [t for t, s in wmap.items() if s == shard]
            missing = [t for t in wanted if t not in names]
            if missing:
                raise HeaderError(f"Cannot read '{sp}': the index says it holds '{missing[0]}' "
                                  f"({len(missing)} tensor(s) missing).", sp)
            out.extend(found)
        return out, files
    singles = sorted(f.name for f in directory.glob("*.safetensors") if f.is_file())
    # Mistral repos ship the same weights twice: HF shards and mistral-inference's consolidated file
    hf_named = [s for s in singles if not s.startswith("consolidated")]
    if hf_named and len(hf_named) < len(singles) and (directory / "config.json").is_file():
        singles = hf_named
    if not singles:
        return None
    # One checkpoint only: Mistral repos ship consolidated.safetensors beside the HF files,
    # PEFT dirs an adapter; neither is the model transformers/vLLM load.
    if "model.safetensors" in singles:
        singles = ["model.safetensors"]
    else:
        singles = [s for s in singles if not s.startswith(("consolidated", "adapter_"))] or singles
    out = []
    for name in singles:
        out.extend(read_header(directory / name))
    return out, singles
