"""A .gguf file (or split set) -> Located -> ModelSpec, from the header alone.

The header reader is gguf_header.py, the architecture keys are read by gguf_arch.py
(llama.cpp's per-arch rules), the tokenizer by gguf_tokenizer.py. This module finds the
parts of a split model (`<prefix>-00001-of-00003.gguf`, llama.cpp `llama_split_path`:
the first part holds the metadata and `split.count`; every part holds its own tensor
infos and data), and assembles the ModelSpec: weights are exact (sum of GGUF tensor
bytes per ggml block layout), KV layout follows llama.cpp.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from ..core import dtypes, ggml_types
from ..core.constants import GGUF_MAX_HEADER_BYTES, GGUF_MAX_SPLITS, GGUF_MAX_TENSORS
from ..core.errors import ConfigError, HeaderError, ModelNotFound, one_line
from ..core.spec import ModelSpec, MoESpec, MtpSpec, TensorInfo, WeightInventory
from .gguf_arch import derive
from .gguf_header import DEFAULT_SKIP, INTEGER_TYPES, LEDGER_SKIP, GGUFHeader, SkippedArray, read_header
from .gguf_tokenizer import fingerprint
from .located import INSTRUCT_NAME, Located
from .tensors import active_params, classify, routed_expert_params

__all__ = ["locate_gguf", "read_gguf", "spec_from_gguf"]

_SPLIT_NAME = re.compile(r"^(?P<prefix>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")


def split_path(prefix: str, index: int, count: int) -> str:
    """llama.cpp `llama_split_path`: "%s-%05d-of-%05d.gguf" with a 1-based index."""
    return f"{prefix}-{index:05d}-of-{count:05d}.gguf"


def read_gguf(path: str | Path, *, skip: frozenset[str] = DEFAULT_SKIP) -> GGUFHeader:
    """The header of a GGUF model: one file, or every part of a split model merged.

    Given any part of a split model, reads the first part's metadata and all parts'
    tensor infos (each part's tensors must fit in that part's own data section). `skip`: keys
    whose arrays are walked and bounds-checked but kept only as their length (`SkippedArray`).

    Raises:
        HeaderError: an invalid header, or parts that disagree (split.no / split.count /
            split.tensors.count, a tensor name in two parts).
        ModelNotFound: a part of a split model is missing.
    """
    p = Path(path)
    head = read_header(p, skip=skip)
    count = _split_int(head, "split.count", 1)
    if count <= 1:
        return head
    if count > GGUF_MAX_SPLITS:
        raise HeaderError(f"Cannot read GGUF header of '{p}': split.count {count} is more than the "
                          f"{GGUF_MAX_SPLITS} allowed.", p)
    m = _SPLIT_NAME.match(p.name)
    if not m or int(m.group("count")) != count:
        raise HeaderError(f"Cannot read split GGUF '{p}': split.count is {count} but the file name does not "
                          f"follow '<prefix>-NNNNN-of-{count:05d}.gguf', so the other parts cannot be found. "
                          f"Rename the parts as llama-gguf-split wrote them.", p)
    paths = [p.with_name(split_path(m.group("prefix"), i + 1, count)) for i in range(count)]
    headers = []
    # One budget for all parts (a part may not claim the whole cap again: 8 parts of 2^20 tensors each
    # cost 3.7 GB): what the part already read used, the others get what is left.
    tensors_left = GGUF_MAX_TENSORS - len(head.tensors)
    bytes_left = GGUF_MAX_HEADER_BYTES - head.data_offset
    for i, part in enumerate(paths):
        if not part.is_file():
            raise ModelNotFound(f"Cannot read split GGUF '{paths[0]}': part {i + 1} of {count} ('{part.name}') "
                                f"is missing. Download every part into '{p.parent}'.", part)
        if part == p:
            h = head
        else:
            h = read_header(part, skip=skip, file_index=i, max_tensors=max(tensors_left, 0), max_bytes=max(bytes_left, 0))
            tensors_left -= len(h.tensors)
            bytes_left -= h.data_offset
            if bytes_left < 0:
                raise HeaderError(f"Cannot read split GGUF '{paths[0]}': the headers of its parts run past "
                                  f"{GGUF_MAX_HEADER_BYTES} bytes in all (at '{part.name}'), more than any real "
                                  f"model's. The files are corrupt or hostile.", part)
        if part == p and i:
            h = h._replace(tensors=tuple(t._replace(file_index=i) for t in h.tensors))
        no = _split_int(h, "split.no", -1)
        if no != i or _split_int(h, "split.count", -1) != count:
            raise HeaderError(f"Cannot read split GGUF '{part}': its split.no/split.count are {no}/"
                              f"{_split_int(h, 'split.count', -1)} (expected {i}/{count}).", part)
        headers.append(h)
    return _merge(headers, paths)


def _split_int(h: GGUFHeader, key: str, default: int) -> int:
    if key not in h.metadata:
        return default
    v = h.metadata[key]
    if h.value_types[key] not in INTEGER_TYPES:
        raise HeaderError(f"Cannot read GGUF header of '{h.path}': key '{key}' must be an integer "
                          f"(got {v!r:.40}).", h.path)
    return int(v)


def _merge(headers: list[GGUFHeader], paths: list[Path]) -> GGUFHeader:
    first = headers[0]
    tensors = [t for h in headers for t in h.tensors]
    names: dict[str, int] = {}
    for t in tensors:
        if t.name in names:
            raise HeaderError(f"Cannot read split GGUF '{paths[0]}': tensor '{t.name}' is in part "
                              f"{names[t.name] + 1} and part {t.file_index + 1}.", paths[t.file_index])
        names[t.name] = t.file_index
    want = _split_int(first, "split.tensors.count", len(tensors))
    if want != len(tensors):
        raise HeaderError(f"Cannot read split GGUF '{paths[0]}': the parts hold {len(tensors)} tensors but "
                          f"split.tensors.count is {want}.", paths[0])
    return first._replace(path=str(paths[0]), tensors=tuple(tensors),
                          file_size=sum(h.file_size for h in headers), parts=tuple(str(q) for q in paths))


def locate_gguf(path: Path, ref: str, *, tokens: bool = True) -> Located:
    """Read a .gguf file's header (all parts if split) into a Located with source "gguf".

    `tokens` False: the token table is walked but not decoded (`LEDGER_SKIP`: a plain ledger needs its
    length only); the spec's tokenizer then has basis "count" and cannot be paired.

    `config` holds the scalar metadata (no arrays, no chat template) for display;
    `gguf` holds the GGUFHeader that spec_from_gguf interprets.

    Raises:
        HeaderError, ModelNotFound: see read_gguf.
    """
    h = read_gguf(path, skip=DEFAULT_SKIP if tokens else LEDGER_SKIP)
    config = {k: v for k, v in h.metadata.items()
              if not isinstance(v, (tuple, SkippedArray)) and k != "tokenizer.chat_template"}
    return Located(ref=ref, source="gguf", config=config, config_origin=f"GGUF metadata ({h.path})",
                   path=Path(h.path), tensor_files=[Path(q).name for q in h.parts], gguf=h)


def spec_from_gguf(loc: Located) -> ModelSpec:
    """Interpret a located GGUF header: layers (llama.cpp rules), exact weights, tokenizer.

    Raises:
        ConfigError: general.architecture or a required `{arch}.*` key is missing or invalid.
    """
    h = loc.gguf
    if h is None:  # spec_from_located sends only a located GGUF here
        raise ConfigError(f"Cannot read '{loc.ref}' as GGUF: no GGUF header was located.", loc.ref)
    arch = h.architecture
    if not arch:
        raise ConfigError(f"Cannot size the model from '{h.path}': GGUF key 'general.architecture' is missing "
                          f"or not a string. Re-convert the model with a current llama.cpp.", h.path,
                          key="general.architecture")
    kind = _str(h.metadata, "general.type") or ("mmproj" if arch == "clip" else "model")
    if kind != "model":
        raise ConfigError(f"Cannot size the model from '{h.path}': it is a GGUF {kind} (general.type), not a "
                          f"language model (expected general.type 'model'). Pass the model's own .gguf; a "
                          f"projector or adapter is loaded beside it.", h.path, key="general.type")
    tok = fingerprint(h)
    a = derive(h, arch, tok.vocab_size if tok and tok.basis in ("tokens", "count") else None)
    inv = _inventory(h, a.excluded, a.moe)
    provenance = {"weights": "GGUF header (exact)", **a.provenance, "dtype": _dtype_source(inv),
                  "tokenizer": "GGUF tokenizer.ggml.* (llama.cpp defaults for absent keys)" if tok else "none in file",
                  "kv_layout": "llama.cpp rules for this architecture (llama-model.cpp load_hparams)"}
    meta = h.metadata
    return ModelSpec(
        id=one_line(gguf_label(h, _file_type(h, inv))), model_type=arch,
        architecture=arch, source="gguf", layers=a.layers, hidden=a.hidden, intermediate=a.intermediate,
        vocab=a.vocab, tied_embeddings=a.tied, max_context=a.max_context, dtype=_float_dtype(inv),
        weights=inv, moe=a.moe, family=_str(meta, "general.basename") or arch, path=h.path, tokenizer=tok,
        bos_token_id=tok.bos_id if tok else None, eos_token_ids=tok.eos_ids if tok else (),
        quantization=_file_type(h, inv), instruct=_instruct(h), llamacpp_swa=a.llamacpp_swa,
        provenance=provenance, warnings=tuple(a.notes) + inv.notes,
        # every weight from the GGUF header, layer kinds from llama.cpp's own rules for the arch
        confidence="exact", mtp=_mtp(h, a.excluded))


def _mtp(h: GGUFHeader, excluded: tuple[str, ...]) -> MtpSpec | None:
    """The nextn (MTP) layers llama.cpp skips for plain decoding, exactly as stored (their own ledger row)."""
    skip = set(excluded)
    gone = [t for t in h.tensors if t.name in skip]
    if not gone:
        return None
    blocks = {t.name.split(".")[1] for t in gone if t.name.startswith("blk.") and t.name.count(".") >= 2}
    return MtpSpec(layers=len(blocks) or 1, params=sum(math.prod(t.shape) for t in gone), nbytes=sum(t.nbytes for t in gone),
                   source="gguf")


# File names that say nothing about the model (llama.cpp's converter once wrote ggml-model-f16.gguf).
GENERIC_STEMS = re.compile(r"^(ggml-model|model|weights|consolidated)([-._].*)?$", re.IGNORECASE)
SPLIT_SUFFIX = re.compile(r"-\d{5}-of-\d{5}$")  # gguf-split shards: name-00001-of-00003.gguf


def gguf_label(h: GGUFHeader, quant: str | None) -> str:
    """How a GGUF model is named in tables: its file name ('SmolLM2-135M-Instruct.Q4_1.gguf', a split's shard
    number dropped), or for a generic file name general.basename + general.size_label + the quant
    ('gemma-3-270M-Q4_K_M').
    Never general.name: converters fill it from config strings ('Smollm2 135M 8k Lc100K Mix1 Ep2')."""
    stem = SPLIT_SUFFIX.sub("", Path(h.path).name.removesuffix(".gguf"))  # one name for every split file
    base = _str(h.metadata, "general.basename")
    if (stem and not GENERIC_STEMS.match(stem)) or not base:
        return f"{stem}.gguf" if stem else Path(h.path).name
    return "-".join(x for x in (base, _str(h.metadata, "general.size_label"), quant) if x)


def _inventory(h: GGUFHeader, excluded: tuple[str, ...], moe: MoESpec | None) -> WeightInventory:
    """Every stored tensor at its exact size; MTP (nextn) layers stored but not loaded are excluded."""
    skip = set(excluded)
    groups: dict[tuple[str, int], str] = {}
    kept = [TensorInfo(t.name, t.shape, t.dtype, t.nbytes, _group(t.name, len(t.shape), groups))
            for t in h.tensors if t.name not in skip]
    gone = sum(t.nbytes for t in h.tensors if t.name in skip)
    total = sum(t.numel for t in kept)
    active = active_params(total, routed_expert_params(kept), moe.experts, moe.experts_per_token) if moe else total
    notes = (f"{gone} B of MTP (nextn) layer tensors stored but not loaded for plain decoding: not counted",) \
        if gone else ()
    return WeightInventory(tensors=tuple(kept), source="gguf", params_total=total, params_active=active,
                           excluded_bytes=gone, notes=notes)


def _group(name: str, ndim: int, seen: dict[tuple[str, int], str]) -> str:
    """`classify` once per kind of block tensor: 'blk.7.attn_q.weight' is grouped as 'blk.0.attn_q.weight' is.

    Why that holds: no rule of tensors._RULES matches inside a 'blk.<digits>.' prefix, and a rule anchored at
    the start (`^output\\.`) never matches after it, so the layer number cannot change the group. A GGUF has
    a few dozen kinds over hundreds of tensors (Gemma-3-270M: 236 tensors, 27 kinds), and the rules are
    regex searches (issue #33)."""
    head, dot, rest = name.partition(".")
    num, dot2, suffix = rest.partition(".")
    if head != "blk" or not dot or not dot2 or not num.isdigit():
        return classify(name, ndim)
    key = (suffix, ndim)
    hit = seen.get(key)
    if hit is None:
        hit = seen[key] = classify(name, ndim)
    return hit


def _float_dtype(inv: WeightInventory) -> str:
    """Dominant float format of the non-quantised matrices, else F16.

    1-D tensors (norms, biases) are F32 in every GGUF by converter convention, so they say
    nothing about the model's float type and are left out.
    """
    by: dict[str, int] = {}
    for t in inv.tensors:
        fmt = dtypes.FORMATS[t.dtype]
        if fmt.is_float and fmt.block_elems == 1 and len(t.shape) >= 2:
            by[t.dtype] = by.get(t.dtype, 0) + t.nbytes
    return max(by, key=by.__getitem__) if by else "F16"


def _dtype_source(inv: WeightInventory) -> str:
    fmt = _float_dtype(inv)
    if any(len(t.shape) >= 2 and t.dtype == fmt for t in inv.tensors):
        return f"GGUF header: {fmt} is the dominant float type of the unquantised matrices"
    return "assumed F16 (every matrix is block-quantised)"


def _file_type(h: GGUFHeader, inv: WeightInventory) -> str | None:
    """general.file_type as llama.cpp names it (LLAMA_FTYPE_MOSTLY_Q4_K_M -> "Q4_K_M")."""
    ft = h.metadata.get("general.file_type")
    if isinstance(ft, int) and not isinstance(ft, bool) and ft in ggml_types.LLAMA_FILE_TYPES:
        return ggml_types.LLAMA_FILE_TYPES[ft]  # an id newer than the table: sized below
    quantised = {t.dtype: t.nbytes for t in inv.tensors if dtypes.FORMATS[t.dtype].block_elems > 1}
    return max(quantised, key=quantised.__getitem__) if quantised else None


def _str(meta: Any, key: str) -> str | None:
    v = meta.get(key)
    return v if isinstance(v, str) and v.strip() else None


def _instruct(h: GGUFHeader) -> bool | None:
    for text in (_str(h.metadata, "general.finetune"), _str(h.metadata, "general.name"), Path(h.path).name):
        if text and INSTRUCT_NAME.search(text):
            return True
    return None
