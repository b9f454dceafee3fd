"""Model sources -> ModelSpec. The only package that reads model files.

`load_spec(ref)` resolves a path, HF id or catalog alias (resolve.py), normalises
config.json (config.py), derives shapes and layer kinds (arch/), and sizes the
weights from safetensors headers when present, else from the config's shapes.
"""

from __future__ import annotations

from typing import Any

from ..core import quant
from ..core.errors import one_line
from ..core.spec import ModelSpec, TensorInfo, WeightInventory
from .arch import derive
from .arch.base import ArchSpec, Tensors, token_ids, vision_tower
from .config import normalise
from .gguf import spec_from_gguf
from .located import INSTRUCT_NAME, Located
from .resolve import locate
from .tensors import active_params, inventory_from_header, routed_expert_params
from .tokenizer import fingerprint_from_located

__all__ = ["load_spec", "locate", "spec_from_located"]


def load_spec(ref: str, *, revision: str | None = None) -> ModelSpec:
    """Resolve `ref` and describe the model.

    Args:
        ref: a local directory, a config.json or .gguf path, a Hugging Face id, or a catalog alias.
        revision: Hub revision (branch, tag or commit); skips the catalog.

    Returns:
        The ModelSpec, with `provenance` naming where weights, shapes and dtype came from.

    Raises:
        ModelNotFound, OfflineError, ConfigError, HeaderError, UnsupportedArchitecture.

    Example:
        >>> load_spec("llama-3.1-8b").weights.resident_bytes
        16060522496
    """
    return spec_from_located(locate(ref, revision=revision))


def spec_from_located(loc: Located) -> ModelSpec:
    """Interpret located files: arch shapes + weight inventory + provenance."""
    if loc.gguf is not None:
        return spec_from_gguf(loc)
    text, vision, wrapper = normalise(loc.config, loc.config_origin)
    arch, arch_name, warnings = derive(text, origin=loc.config_origin)
    logical = _config_tensors(arch, vision, text, loc.config_origin)
    total = sum(t.numel for t in logical)
    active = _active(arch, logical, total)
    provenance: dict[str, str] = {}
    origin_label = {"local": "config.json", "hf-cache": "config.json (HF cache)", "hub": "config.json (Hub)",
                    "catalog": "catalog config"}[loc.source]
    if loc.tensors is not None:
        inv = inventory_from_header(loc.tensors, n_layers=len(arch.layers), tied=arch.tied,
                                    logical=(total, active),
                                    moe=(arch.moe.experts, arch.moe.experts_per_token) if arch.moe else None)
        provenance["weights"] = f"header ({len(loc.tensor_files)} safetensors file(s), exact)"
    else:
        stored = logical
        qc = text.get("quantization_config")
        scheme = quant.from_quantization_config(qc) if isinstance(qc, dict) else None
        if scheme is not None:
            stored = quant.apply(logical, scheme)
        inv = WeightInventory(tensors=tuple(stored), source="config", params_total=total, params_active=active,
                              notes=tuple(loc.notes))
        provenance["weights"] = f"config shapes ({origin_label})" + (f", {scheme.name} per quantization_config"
                                                                     if scheme else "")
    provenance["shapes"] = origin_label
    if loc.catalog_entry:
        provenance["config_source"] = str(loc.catalog_entry.get("source", "unknown"))
    provenance["dtype"] = "config torch_dtype/dtype" if text.get("torch_dtype") else "assumed bf16 (no dtype key)"
    if arch.defaults_used and arch_name != "generic":
        provenance["defaults"] = f"transformers {arch_name} defaults for absent keys"
    gen = loc.generation_config or {}
    eos = token_ids(gen.get("eos_token_id")) or arch.eos_token_ids
    bos_ids = token_ids(gen.get("bos_token_id"))
    entry = loc.catalog_entry or {}
    notes = list(arch.notes) + list(loc.notes) + list(inv.notes)
    return ModelSpec(
        id=entry.get("id") or _model_id(loc), model_type=str(text.get("model_type")), architecture=arch_name,
        source=loc.source, layers=arch.layers, hidden=arch.hidden, intermediate=arch.intermediate,
        vocab=arch.vocab, tied_embeddings=arch.tied, max_context=arch.max_context, dtype=arch.dtype,
        weights=inv, moe=arch.moe, family=entry.get("family") or _family_guess(text, wrapper),
        revision=loc.revision, path=str(loc.path) if loc.path else None,
        tokenizer_files=tuple(str(p) for p in loc.tokenizer_files.values()),
        tokenizer=fingerprint_from_located(loc, text),  # cheap: never parses tokenizer.json
        bos_token_id=bos_ids[0] if bos_ids else arch.bos_token_id, eos_token_ids=eos,
        quantization=_quant_method(text), instruct=_instruct(loc, entry),
        state_dtype=arch.state_dtype, llamacpp_swa=arch.llamacpp_swa, provenance=provenance,
        warnings=tuple(dict.fromkeys(warnings + notes)))  # loc.notes are also the inventory's notes: once each


def _config_tensors(arch: ArchSpec, vision: dict[str, Any] | None, text: dict[str, Any],
                    origin: str = "config.json") -> list[TensorInfo]:
    tensors = list(arch.tensors)
    if vision:
        t = Tensors(arch.dtype)
        vision_tower(t, vision, arch.hidden, origin=origin)
        tensors.extend(t.items)
    return tensors


def _active(arch: ArchSpec, tensors: list[TensorInfo], total: int) -> int:
    if arch.moe is None:
        return total
    return active_params(total, routed_expert_params(tensors), arch.moe.experts, arch.moe.experts_per_token)


def _model_id(loc: Located) -> str:
    """The model's display name; one printable line (a folder named "x\nerror: ..." must not forge output)."""
    if loc.source in ("hf-cache", "hub"):
        return one_line(loc.ref)
    name = loc.config.get("_name_or_path")
    base = loc.path.name if loc.path else loc.ref
    return one_line(str(name) if isinstance(name, str) and name and loc.path is None else base)


def _family_guess(text: dict[str, Any], wrapper: str) -> str:
    return str(wrapper or text.get("model_type"))


def _quant_method(text: dict[str, Any]) -> str | None:
    qc = text.get("quantization_config")
    return str(qc.get("quant_method")) if isinstance(qc, dict) and qc.get("quant_method") else None


def _instruct(loc: Located, entry: dict[str, Any]) -> bool | None:
    if "instruct" in entry:
        return bool(entry["instruct"])
    name = entry.get("id") or loc.ref
    if INSTRUCT_NAME.search(str(name).rsplit("/", 1)[-1]):
        return True
    return None
