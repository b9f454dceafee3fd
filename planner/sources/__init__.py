"""Model sources -> ModelSpec. The only package that reads model files.

`load_spec(ref)` resolves a path, HF id or catalog alias (resolve.py), normalises
config.json (config.py), derives shapes and layer kinds (arch/), and sizes the
weights from safetensors headers when present, else from the config's shapes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..core import quant, quant_checkpoint
from ..core.errors import UnsupportedArchitecture, one_line
from ..core.spec import ModelSpec, TensorInfo, WeightInventory
from . import meta_inventory
from .arch import derive
from .arch.base import ArchSpec, Tensors, token_ids
from .arch.towers import TOWER_KEYS, size_towers
from .confidence import level, structural_unread
from .config import is_nested, normalise
from .located import INSTRUCT_NAME, Located
from .mlx_export import mlx_export
from .resolve import locate
from .tensors import (
    active_params,
    headless_reason,
    inventory_from_header,
    mtp_from_header,
    routed_expert_params,
)
from .tokenizer import fingerprint_from_located

__all__ = ["load_spec", "locate", "spec_from_located"]

# A catalog spec is a pure function of its catalog entry, so each is built once per entry object
# (sources/catalog.py keeps the same dicts while its cache holds the directory): a fleet report asks
# for every draft candidate once per target x machine (plan/recommend.catalog_candidates), and
# building a spec from its config is most of that time. Key: (catalog file, ref) -> (entry, spec).
_CATALOG_SPECS: dict[tuple[str, str], tuple[dict[str, Any], ModelSpec]] = {}


def load_spec(ref: str, *, revision: str | None = None, inventory: str = "analytic",
              tokens: bool = True) -> ModelSpec:
    """Resolve `ref` and describe the model.

    Args:
        ref: a local directory, a config.json or .gguf path, a Hugging Face id, or a catalog alias.
        revision: Hub revision (branch, tag or commit); skips the catalog.
        inventory: where a header-less config's tensors come from (`meta_inventory.MODES`): "analytic"
            (the layer-kind formulas), "auto" (transformers on the meta device when those are low
            confidence) or "meta" (always try it first); docs/ledger.md "Inventory sources".
        tokens: False for a ledger that will not be paired: a GGUF's token table is then walked and
            bounds-checked but not decoded, and its tokenizer has basis "count" (the length, no strings).

    Returns:
        The ModelSpec, with `provenance` naming where weights, shapes and dtype came from.

    Raises:
        ModelNotFound, OfflineError, ConfigError, HeaderError, UnsupportedArchitecture.

    Example:
        >>> load_spec("llama-3.1-8b").weights.resident_bytes
        16060522496
    """
    meta_inventory.check_mode(inventory)
    loc = locate(ref, revision=revision, tokens=tokens)
    entry = loc.catalog_entry
    if loc.source != "catalog" or entry is None or inventory != "analytic":
        return spec_from_located(loc, inventory=inventory)
    key = (str(entry.get("_file")), ref)
    hit = _CATALOG_SPECS.get(key)
    if hit is not None and hit[0] is entry:  # the same entry object: the same spec
        return hit[1]
    spec = spec_from_located(loc)
    _CATALOG_SPECS[key] = (entry, spec)
    return spec


def spec_from_located(loc: Located, *, inventory: str = "analytic") -> ModelSpec:
    """Interpret located files: arch shapes + weight inventory + provenance (`inventory`: see load_spec)."""
    if loc.gguf is not None:
        from .gguf import spec_from_gguf  # start-up (issue #33): only a GGUF's ledger loads the GGUF reader

        return spec_from_gguf(loc)
    text, vision, wrapper = normalise(loc.config, loc.config_origin)
    built: meta_inventory.MetaInventory | meta_inventory.MetaRefusal | None = None
    try:
        arch, arch_name, warnings = derive(text, origin=loc.config_origin, nested=is_nested(loc.config))
    except UnsupportedArchitecture:
        # the formulas cannot even read the config (its own spellings): transformers' config class may
        if not meta_inventory.wanted(inventory, has_headers=loc.tensors is not None, low=True):
            raise
        built = meta_inventory.meta_inventory(loc.config)
        if isinstance(built, meta_inventory.MetaRefusal):
            raise
        text = {**built.standard, **text}
        arch, arch_name, warnings = derive(text, origin=loc.config_origin, nested=is_nested(loc.config))
    guesses = list(arch.guesses)
    weight_guesses: list[str] = []  # what only the weights rest on: moot once headers give them
    logical = _config_tensors(arch, vision, loc.config, wrapper, loc.config_origin, weight_guesses)
    headless = headless_reason(loc)
    if headless:
        logical = [t for t in logical if t.group != "lm_head"]
        if headless.startswith("guess"):
            weight_guesses.append(headless)
    if loc.tensors is None:
        guesses += weight_guesses
    total = sum(t.numel for t in logical)
    active = _active(arch, logical, total)
    provenance: dict[str, str] = {}
    origin_label = {"local": "config.json", "hf-cache": "config.json (HF cache)", "hub": "config.json (Hub)",
                    "catalog": "catalog config"}[loc.source]
    mtp, stored_extra, quant_guess = arch.mtp, 0, []
    # mlx-lm writes `quantization` (and, since mlx-lm #957, the same dict as quantization_config)
    qc = text.get("quantization_config") or text.get("quantization")
    types = tuple(str(c.get("model_type")) for c in (loc.config, text) if isinstance(c, dict))
    scheme = quant_checkpoint.from_quantization_config(qc, types) if isinstance(qc, dict) and loc.tensors is None \
        else None
    if loc.tensors is not None:
        inv = inventory_from_header(loc.tensors, n_layers=len(arch.layers), tied=arch.tied,
                                    logical=(total, active),
                                    moe=(arch.moe.experts, arch.moe.experts_per_token) if arch.moe else None)
        provenance["weights"] = f"header ({len(loc.tensor_files)} safetensors file(s), exact)"
        mtp = mtp_from_header(loc.tensors, len(arch.layers))
        stored_extra = inv.excluded_bytes - (mtp.nbytes if mtp else 0)
    else:
        stored: Sequence[TensorInfo] = logical  # re-sized as a tuple under a quantization_config
        stored_only = quant.apply(arch.stored_tensors, scheme) if scheme is not None else arch.stored_tensors
        stored_extra = sum(x.nbytes for x in stored_only)
        if scheme is not None:
            stored = quant.apply(logical, scheme)
            if mtp is not None and arch.mtp_tensors:
                mtp = dataclasses.replace(mtp, nbytes=sum(x.nbytes for x in quant.apply(arch.mtp_tensors, scheme)))
        elif isinstance(qc, dict):
            quant_guess.append(f"quantization_config {qc.get('quant_method', '?')!r} not modelled: weights sized "
                               f"unquantised")
            guesses += quant_guess
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
    guesses += _unread_guesses(text, arch, arch_name, loc.config, wrapper)
    kv_ok, meta_note = False, None
    if built is None and meta_inventory.wanted(inventory, has_headers=loc.tensors is not None, low=bool(guesses)):
        built = meta_inventory.meta_inventory(loc.config)
    if built is not None:
        if isinstance(built, meta_inventory.MetaRefusal):
            meta_note = f"meta-device inventory not built ({built.status}): {built.reason}"
        else:  # transformers' structure replaces the formulas' weights; the layer plan still sizes the KV
            inv, meta_mtp, stored_extra = meta_inventory.meta_weights(
                built, n_layers=len(arch.layers), tied=arch.tied, headless=bool(headless), scheme=scheme,
                moe=(arch.moe.experts, arch.moe.experts_per_token) if arch.moe else None)
            mtp = meta_mtp or mtp
            provenance["weights"] = built.label + (f", {scheme.name} per quantization_config" if scheme else "")
            kv_ok = meta_inventory.kv_widths_agree(built, arch.layers)
            guesses = [*arch.guesses, *quant_guess,
                       *_unread_guesses(text, arch, arch_name, loc.config, wrapper, meta_kv=kv_ok,
                                        also_read=built.aliased)]
    exported = mlx_export(loc.config) if mtp is not None and mtp.source == "config" else None
    if exported and mtp is not None:
        mtp = dataclasses.replace(mtp, in_checkpoint=False)
    shaped = [k for k in arch.defaults_used if k in _SHAPE_DEFAULTS]
    assumptions = [*guesses, *([f"transformers {arch_name} defaults for absent keys: {', '.join(shaped[:6])}"]
                               if shaped and arch_name != "generic" else []),
                   *([] if text.get("torch_dtype") else ["no dtype key: weights assumed bf16"]),
                   *([headless] if headless and not headless.startswith("guess") else []),
                   *([f"{mtp.layers} MTP layer(s) declared by the config counted as stored (checkpoint_bytes); a "
                      f"derivative re-saved without them stores less"] if mtp and mtp.source == "config"
                     and not exported else []),
                   *([f"{mtp.layers} MTP layer(s) declared by the config not counted in checkpoint_bytes: {exported}, "
                      f"whose converters save mtp.* apart from the model's weights, if at all"]
                     if exported and mtp is not None else []),
                   *([meta_note] if meta_note else [])]
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
        warnings=tuple(dict.fromkeys(warnings + notes + ([meta_note] if meta_note and inventory == "meta" else []))),  # loc.notes are also the inventory's notes: once each
        mtp=mtp, stored_extra_bytes=stored_extra,
        confidence=level(registered=arch_name != "generic" or kv_ok, from_headers=loc.tensors is not None, guesses=guesses),
        assumptions=tuple(dict.fromkeys(assumptions)))


# Absent keys whose class default decides a shape or the cache (worth listing as an assumption).
_SHAPE_DEFAULTS = frozenset({
    "tie_word_embeddings", "head_dim", "num_key_value_heads", "intermediate_size", "vocab_size", "hidden_size",
    "num_hidden_layers", "num_attention_heads", "sliding_window", "moe_intermediate_size",
    "num_experts", "num_local_experts", "n_routed_experts", "n_shared_experts", "first_k_dense_replace",
    "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank", "q_lora_rank", "global_head_dim",
    "num_nextn_predict_layers", "layer_types", "full_attention_interval", "shared_expert_intermediate_size"})

# Sub-configs a tower sizer or the text path reads; any other *_config object is a part not sized.
_READ_SUBCONFIGS = ("text_config", "llm_config", "language_config", "vision_config", "vision_tower_config",
                    "quantization_config", "rope_scaling", "rope_parameters")


def _unread_guesses(text: dict[str, Any], arch: ArchSpec, arch_name: str, top: dict[str, Any],
                    wrapper: str, *, meta_kv: bool | None = None, also_read: tuple[str, ...] = ()) -> list[str]:
    """Why the figures are a guess: unregistered type, structural keys nothing read, towers ignored.

    `meta_kv` is None on the analytic path; once transformers built the weights on the meta device it says
    whether its K/V projections confirmed the layer plan's KV widths: then only what may still change
    the cache stays a guess (an unread key about windows, heads or layer kinds; an unconfirmed plan)."""
    out = []
    if arch_name == "generic" and not meta_kv:
        out.append(f"model_type '{text.get('model_type')}' is not a registered architecture: sized by the "
                   f"standard decoder rule" + ("" if meta_kv is None else " (KV widths not confirmed by the "
                                                                         "meta-device K/V projections)"))
    unread = structural_unread(text, arch.read_keys | TOWER_KEYS | set(also_read))
    if meta_kv is not None:
        unread = meta_inventory.kv_relevant(unread)
    if unread:
        out.append(f"config keys that look structural but no rule reads them: {', '.join(unread[:8])}")
    ignored = [k for k, v in top.items() if isinstance(v, dict) and k.endswith("_config")
               and k not in _READ_SUBCONFIGS and k not in arch.read_keys]
    if ignored and meta_kv is None:
        out.append(f"sub-config(s) not sized: {', '.join(ignored[:4])}")
    return out


def _config_tensors(arch: ArchSpec, vision: dict[str, Any] | None, top: dict[str, Any], wrapper: str,
                    origin: str, guesses: list[str]) -> list[TensorInfo]:
    tensors = list(arch.tensors)
    t = Tensors(arch.dtype)
    note, approximated = size_towers(t, top, vision, wrapper, arch.hidden, origin)
    if approximated and note:
        guesses.append(note)
    return tensors + t.items


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
