"""Where a model reference lives -> the raw files that describe it.

Order (docs/ledger.md "Where the model description comes from", offline-first): an existing path (directory or .gguf) -> the
local HF cache (the user's real files, no network) -> the bundled catalog -> the
Hub (only when online). `.bin`/`.pt`/`.pth` weights are pickles: noticed, never opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core import paths
from ..core.constants import is_offline
from ..core.errors import ConfigError, HeaderError, ModelNotFound, OfflineError
from ..core.jsonio import read_json_object
from ..core.quant_checkpoint import from_hf_quant_config
from . import catalog, hub, hub_cache, mistral_format
from .located import Located
from .safetensors import read_dir_tensors, read_index

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".ckpt")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
                   "vocab.json", "merges.txt", "chat_template.jinja", "chat_template.json")


def locate(ref: str, *, revision: str | None = None, tokens: bool = True) -> Located:
    """Find `ref` (path, HF id or catalog alias) and read its JSON files and weight headers.

    `tokens` False: a .gguf's token table is read as its length only (a plain ledger; see locate_gguf).

    Raises:
        ModelNotFound: nothing matches `ref`.
        OfflineError: only the Hub could answer and the network is off or unreachable.
        ConfigError / HeaderError: the files found are invalid.
    """
    p = paths.expand(ref)
    if paths.is_dir(p):
        return _from_dir(p, ref, source="local")
    if paths.is_file(p):
        if p.suffix == ".gguf":
            # start-up (issue #33): a folder's ledger never loads the GGUF reader
            from .gguf import locate_gguf

            return locate_gguf(p, ref, tokens=tokens)
        if p.name == "config.json":
            return _from_dir(p.parent, ref, source="local")
        raise ModelNotFound(f"Cannot use '{ref}': a model is a directory with config.json, a .gguf file, a "
                            f"Hugging Face id or a catalog name (got a {p.suffix or 'plain'} file).", ref)
    if hub.looks_like_repo_id(ref):
        snap = hub.cached_snapshot(ref, revision)
        if snap is not None:
            hub_cache.refuse_links_out(snap)  # a cache symlink to a file outside it is never read
            loc = _from_dir(snap, ref, source="hf-cache", partial_ok=True)
            loc.revision = revision or snap.name
            return loc
    entry = catalog.find(ref) if revision is None else None
    if entry is not None:
        return _from_catalog(entry, ref)
    if not hub.looks_like_repo_id(ref) or "/" not in ref:
        hint = catalog.suggestions(ref)
        extra = f" Did you mean: {', '.join(hint)}?" if hint else " See 'planner catalog' for bundled names."
        raise ModelNotFound(f"Cannot find model '{ref}': no such file or directory, and not a bundled catalog "
                            f"name or Hugging Face id (org/name).{extra}", ref)
    try:
        snap, tensors, rev = hub.fetch_from_hub(ref, revision)
    except OfflineError as e:
        fallback = _fallback(ref, revision)
        if fallback is None:
            raise OfflineError(f"{e}{_did_you_mean(ref)}") from e
        return fallback
    except ModelNotFound as e:  # a Hub id typo (meta-llama/Llama-3.1-8B-Instruc): name the catalogued id
        raise ModelNotFound(f"{e}{_did_you_mean(ref)}", e.path) from e
    hub_cache.refuse_links_out(snap)
    loc = _from_dir(snap, ref, source="hub", read_weights=False)
    loc.tensors, loc.revision = tensors, rev
    if tensors is not None:
        loc.tensor_files = ["(Hub range reads)"]
    return loc


def _did_you_mean(ref: str) -> str:
    """' Did you mean: ID?' naming the bundled catalog's ids closest to `ref` (as the catalog spells them), else ''."""
    ids = list(dict.fromkeys(e["id"] for e in map(catalog.find, catalog.suggestions(ref)) if e is not None))
    return f" Did you mean: {', '.join(ids)}?" if ids else ""


def _fallback(ref: str, revision: str | None) -> Located | None:
    """The Hub did not answer: any cached snapshot of `ref`, else its catalog entry, with a note saying so."""
    why = "offline mode is on" if is_offline() else "the Hugging Face Hub could not be reached"
    wanted = f"revision '{revision}'" if revision else "the latest revision"
    snap = hub.any_cached_snapshot(ref)
    if snap is not None:
        hub_cache.refuse_links_out(snap)
        loc = _from_dir(snap, ref, source="hf-cache", partial_ok=True)
        loc.revision = snap.name
        loc.notes.append(f"{why}, so {wanted} of '{ref}' was not read: using the cached snapshot {snap.name[:12]} "
                         f"instead (it may differ)")
        return loc
    entry = catalog.find(ref)
    if entry is not None:
        loc = _from_catalog(entry, ref)
        loc.notes.append(f"{why}, so {wanted} of '{ref}' was not read: using the bundled catalog entry instead "
                         f"(source: {entry.get('source', 'unknown')}; it may differ)")
        return loc
    return None


def _from_dir(d: Path, ref: str, *, source: str, partial_ok: bool = False, read_weights: bool = True) -> Located:
    cfg_path = d / "config.json"
    if not cfg_path.is_file() and (d / "params.json").is_file():
        return _from_mistral_dir(d, ref, source=source, read_weights=read_weights)
    if not cfg_path.is_file():
        ggufs = sorted(d.glob("*.gguf"))
        hint = f" It holds GGUF files; pass one directly, e.g. '{ggufs[0]}'." if ggufs else ""
        raise ConfigError(f"Cannot use model directory '{d}': it has no config.json.{hint}", cfg_path)
    loc = Located(ref=ref, source=source, config=read_config(cfg_path),
                  config_origin=str(cfg_path), path=d)
    gen = d / "generation_config.json"
    if gen.is_file():
        loc.generation_config = read_json_object(gen, what="generation_config.json")
    _modelopt_side_file(loc, d)
    loc.tokenizer_files = {n: d / n for n in TOKENIZER_FILES if (d / n).is_file()}
    if read_weights:
        _read_weights(loc, d, partial_ok)
    return loc


def _modelopt_side_file(loc: Located, d: Path) -> None:
    """A ModelOpt export may describe its quantisation only in hf_quant_config.json (vLLM reads that file:
    modelopt.py get_config_filenames); it becomes the config's quantization_config unless one is there."""
    side = d / "hf_quant_config.json"
    if not side.is_file() or isinstance(loc.config.get("quantization_config"), dict):
        return
    qc = from_hf_quant_config(read_json_object(side, what="hf_quant_config.json"))
    if qc is not None:
        loc.config = {**loc.config, "quantization_config": qc}
        loc.notes.append("quantisation read from hf_quant_config.json (ModelOpt export)")


def read_config(path: Path) -> dict[str, Any]:
    """config.json as Python's json reads it: NaN/Infinity allowed, since real configs hold them
    (Nemotron-H `time_step_limit: [0.0, Infinity]`); every key an architecture reads is still type- and
    range-checked (arch/base.py `_check`), and the size and integer-digit caps stay."""
    return read_json_object(path, what="config.json", allow_nonfinite=True)


def _from_mistral_dir(d: Path, ref: str, *, source: str, read_weights: bool) -> Located:
    """A Mistral-format folder: params.json renamed to HF keys; weights from consolidated*.safetensors."""
    params_path = d / "params.json"
    params = read_json_object(params_path, what="params.json", allow_nonfinite=True)
    loc = Located(ref=ref, source=source, config=mistral_format.hf_config(params),
                  config_origin=str(params_path), path=d)
    loc.notes.append("Mistral-format folder: params.json read with vLLM's key names (--config-format mistral)")
    loc.tokenizer_files = {n: d / n for n in TOKENIZER_FILES if (d / n).is_file()}
    if read_weights:
        _read_weights(loc, d, False)
    return loc


def _read_weights(loc: Located, d: Path, partial_ok: bool) -> None:
    pickles = sorted(f.name for f in d.iterdir() if f.suffix in PICKLE_SUFFIXES and f.is_file())
    index = d / "model.safetensors.index.json"
    if partial_ok and index.is_file():
        shards = set(read_index(index).values())
        if not all((d / s).is_file() for s in shards):
            loc.notes.append("the cache holds only part of the safetensors shards: weights computed from config")
            return
    try:
        found = read_dir_tensors(d)
    except HeaderError:
        raise
    if found is not None:
        loc.tensors, loc.tensor_files = found[0], found[1]
    elif pickles:
        loc.notes.append(f"weights only as pickle files ({', '.join(pickles[:3])}): never opened (unsafe); "
                         f"weights computed from config")


def _from_catalog(entry: dict[str, Any], ref: str) -> Located:
    loc = Located(ref=ref, source="catalog", config=dict(entry["config"]),
                  config_origin=f"catalog:{entry['id']} ({entry.get('source', 'source unknown')})",
                  catalog_entry=entry)
    if isinstance(entry.get("generation_config"), dict):
        loc.generation_config = entry["generation_config"]
    return loc
