"""EAGLE-3 heads: their tensors from a real config (and safetensors headers when at hand), and the catalog.

Why its own module: a head is not a model `planner/sources` can load (one decoder layer whose
attention reads 2h, an fc that fuses three target hidden states, a draft-vocabulary lm_head with
`d2t`/`t2d` maps), and the drafting method (eagle3.py) needs two figures from it: what the
checkpoint stores (the download, checked against real files) and what stays resident beside the
target (the ledger's draft row).

Tensors of an EAGLE-3 head (SpecForge specforge/modeling/draft/llama3_eagle.py; vLLM 0.33.0
model_executor/models/llama_eagle3.py:82 `qkv_input_size = 2 * hidden_size`, :218-246 fc of
target_hidden_size x aux states, :312-341 draft_vocab_size and draft_id_to_target_id):

  embed_tokens.weight                  [vocab, h]            when the checkpoint stores it
  fc.weight                            [h, 3 * target_h]
  midlayer.{hidden_norm,input_layernorm,post_attention_layernorm}.weight  [h] each
  midlayer.self_attn.q_proj.weight     [heads * head_dim, 2h]  (k_proj, v_proj: kv_heads * head_dim)
  midlayer.self_attn.o_proj.weight     [h, heads * head_dim]
  midlayer.mlp.{gate,up}_proj.weight   [inter, h];  down_proj [h, inter]
  norm.weight                          [h]
  lm_head.weight                       [draft_vocab, h]
  d2t int64 [draft_vocab], t2d bool [vocab]   (only when draft_vocab < vocab)

Resident beside the target: everything but embed_tokens. Both engines that serve EAGLE-3 share the
target's embedding with the head: vLLM when the head stores none or an identical copy
(v1/spec_decode/llm_base_proposer.py:1418-1466), SGLang always when the hidden sizes match
(srt/speculative/eagle_worker_v2.py:353-363, models `set_embed`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core.constants import MAX_CONTEXT, MAX_HIDDEN, MAX_VOCAB, catalog_dir
from ..core.errors import ConfigError
from ..core.jsonio import read_json_object
from ..core.spec import FULL, LayerSpec, ModelSpec, TensorInfo, WeightInventory, make_tensor
from ..sources import safetensors as st

EMBEDDING = "embed_tokens.weight"
_REQUIRED = ("hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")


@dataclass(frozen=True)
class Head:
    """An EAGLE-3 head: what its checkpoint stores, what stays resident, where the figures came from."""

    id: str  # the Hub repo (what launch commands name)
    targets: tuple[str, ...]  # the base model(s) it was trained for (catalog ids or Hub ids)
    stored: tuple[TensorInfo, ...]  # every tensor of the checkpoint
    spec: ModelSpec  # the resident part (no embedding) as a one-layer model
    source: str  # "header" (safetensors read) or "config" (computed from config.json)
    target_hidden: int
    vocab: int  # the target vocabulary the head maps into (t2d rows)
    reference: str = ""  # where the config/checkpoint is published
    notes: tuple[str, ...] = ()

    @property
    def checkpoint_bytes(self) -> int:
        return sum(t.nbytes for t in self.stored)

    @property
    def resident_bytes(self) -> int:
        return self.spec.weights.resident_bytes

    @property
    def stores_embedding(self) -> bool:
        return any(t.name.endswith(EMBEDDING) for t in self.stored)


def config_tensors(cfg: Mapping[str, Any], *, stores_embedding: bool) -> list[TensorInfo]:
    """The tensors of an EAGLE-3 head as its config describes them (shapes in the module docstring).

    Raises:
        ConfigError: a required key is missing or not a positive integer.
    """
    h, heads, inter, vocab = (_int(cfg, k) for k in _REQUIRED)
    kv = _int(cfg, "num_key_value_heads", heads)
    hd = _int(cfg, "head_dim", h // heads)
    dv = _int(cfg, "draft_vocab_size", vocab)
    th = _int(cfg, "target_hidden_size", h)
    dt = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16")
    m = "midlayer."
    out = [make_tensor(EMBEDDING, (vocab, h), dt, "embedding")] if stores_embedding else []
    out += [make_tensor("fc.weight", (h, 3 * th), dt, "other")]
    out += [make_tensor(f"{m}{n}.weight", (h,), dt, "norm")
            for n in ("hidden_norm", "input_layernorm", "post_attention_layernorm")]
    out += [make_tensor(f"{m}self_attn.q_proj.weight", (heads * hd, 2 * h), dt, "attention"),
            make_tensor(f"{m}self_attn.k_proj.weight", (kv * hd, 2 * h), dt, "attention"),
            make_tensor(f"{m}self_attn.v_proj.weight", (kv * hd, 2 * h), dt, "attention"),
            make_tensor(f"{m}self_attn.o_proj.weight", (h, heads * hd), dt, "attention"),
            make_tensor(f"{m}mlp.gate_proj.weight", (inter, h), dt, "ffn"),
            make_tensor(f"{m}mlp.up_proj.weight", (inter, h), dt, "ffn"),
            make_tensor(f"{m}mlp.down_proj.weight", (h, inter), dt, "ffn"),
            make_tensor("norm.weight", (h,), dt, "norm"),
            make_tensor("lm_head.weight", (dv, h), dt, "lm_head")]
    if dv < vocab:
        out += [make_tensor("d2t", (dv,), "I64", "other"), make_tensor("t2d", (vocab,), "BOOL", "other")]
    return out


def header_tensors(raw: Sequence[st.RawTensor]) -> list[TensorInfo]:
    """Tensors as a safetensors header lists them, each put in its group by name."""
    return [make_tensor(name, shape, dtype, _group(name)) for name, dtype, shape in raw]


def build(head_id: str, cfg: Mapping[str, Any], *, targets: Sequence[str] = (), stored: Sequence[TensorInfo] | None
          = None, stores_embedding: bool = True, reference: str = "", notes: Sequence[str] = ()) -> Head:
    """A Head from its config, and from its header tensors when given (exact bytes), else from the config.

    Raises:
        ConfigError: the config lacks a required key.
    """
    source = "header" if stored is not None else "config"
    tensors = list(stored) if stored is not None else config_tensors(cfg, stores_embedding=stores_embedding)
    h, heads = _int(cfg, "hidden_size"), _int(cfg, "num_attention_heads")
    kv, hd = _int(cfg, "num_key_value_heads", heads), _int(cfg, "head_dim", h // heads)
    if heads % kv:  # grouped-query attention: each KV head serves heads / kv query heads
        raise ConfigError(f"Cannot size EAGLE-3 head: num_key_value_heads {kv} does not divide its {heads} attention heads.",
                          "config.json", key="num_key_value_heads")
    resident = tuple(t for t in tensors if not t.name.endswith(EMBEDDING))
    params = sum(t.numel for t in resident if t.dtype not in ("I64", "BOOL"))
    inv = WeightInventory(tensors=resident, source=source, params_total=params, params_active=params,
                          notes=("embedding shared with the target (not resident)",))
    layer = LayerSpec(attention=FULL, q_heads=heads, kv_heads=kv, head_dim_k=hd, head_dim_v=hd, ffn="dense",
                      ffn_width=_int(cfg, "intermediate_size"))
    vocab = _int(cfg, "vocab_size")
    dv = _int(cfg, "draft_vocab_size", vocab)
    spec = ModelSpec(id=head_id, model_type="eagle3", architecture=_architecture(cfg),
                     source=source, layers=(layer,), hidden=h, intermediate=_int(cfg, "intermediate_size"),
                     vocab=dv, tied_embeddings=False,
                     max_context=_int(cfg, "max_position_embeddings", 2048), dtype=inv.dominant_dtype, weights=inv,
                     provenance={"weights": f"{source} ({head_id})", "layers": "config (one EAGLE-3 decoder layer)"})
    return Head(id=head_id, targets=tuple(targets), stored=tuple(tensors), spec=spec, source=source,
                target_hidden=_int(cfg, "target_hidden_size", h), vocab=vocab, reference=reference,
                notes=tuple(notes))


def from_dir(path: str | Path, *, targets: Sequence[str] = ()) -> Head:
    """A head from a local directory: config.json, plus its safetensors headers when present.

    Raises:
        ConfigError: no config.json or a bad one; HeaderError: an unreadable header.
    """
    p = Path(path)
    cfg = read_json_object(p / "config.json", what="EAGLE-3 head config")
    found = st.read_dir_tensors(p)
    stored = header_tensors(found[0]) if found else None
    try:
        return build(p.name, cfg, targets=targets, stored=stored, reference=str(p))
    except ConfigError as e:  # name the file the bad value is in
        raise ConfigError(f"Cannot use EAGLE-3 head '{p / 'config.json'}': {e}", p / "config.json", key=e.key) from e


# --- the catalog (catalogs/heads/*.json) ------------------------------------------------------------

@dataclass(frozen=True)
class HeadEntry:
    """One catalogued head: its repo, targets, real config, whether the checkpoint stores the embedding."""

    id: str
    targets: tuple[str, ...]
    config: Mapping[str, Any]
    stores_embedding: bool
    source: str
    notes: str = ""

    def head(self) -> Head:
        return build(self.id, self.config, targets=self.targets, stores_embedding=self.stores_embedding,
                     reference=self.source, notes=(self.notes,) if self.notes else ())


def entries(directory: str | Path | None = None) -> tuple[HeadEntry, ...]:
    """Every head of catalogs/heads/*.json, validated.

    Raises:
        ConfigError: a malformed entry (names the file and the key).
    """
    return _entries(str(Path(directory) if directory is not None else catalog_dir() / "heads"))


def for_target(target: ModelSpec, *, directory: str | Path | None = None) -> list[Head]:
    """Catalogued heads trained for `target` (its id or catalog name matches one of their targets)."""
    names = {target.id.lower(), target.id.lower().rsplit("/", 1)[-1]}
    return [e.head() for e in entries(directory) if names & {t.lower() for t in e.targets}
            or names & {t.lower().rsplit("/", 1)[-1] for t in e.targets}]


@lru_cache(maxsize=4)
def _entries(directory: str) -> tuple[HeadEntry, ...]:
    out = []
    for f in sorted(Path(directory).glob("*.json")):
        obj = read_json_object(f, what="heads catalog")
        items = obj.get("heads")
        if not isinstance(items, list):
            raise ConfigError(f"Cannot read heads catalog '{f}': expected a 'heads' list.", f, key="heads")
        for i, it in enumerate(items):
            if not isinstance(it, dict):
                raise ConfigError(f"Cannot read heads catalog '{f}': entry {i} is not an object.", f, key="heads")
            if not isinstance(it.get("targets"), list) or not all(isinstance(t, str) for t in it["targets"]):
                raise ConfigError(f"Cannot read heads catalog '{f}': entry {i}'s 'targets' is "
                                  f"{it.get('targets')!r:.40} (expected a list of model ids).", f, key="targets")
            try:
                entry = HeadEntry(id=str(it["id"]), targets=tuple(it["targets"]),
                                  config=dict(it["config"]), stores_embedding=bool(it["stores_embedding"]),
                                  source=str(it["source"]), notes=str(it.get("notes", "")))
            except (KeyError, TypeError, ValueError) as e:
                raise ConfigError(f"Cannot read heads catalog '{f}': entry {i} lacks {e} (expected id, targets, "
                                  f"config, stores_embedding, source).", f, key=str(e)) from e
            try:
                build(entry.id, entry.config)  # fail here, naming the file, not later in a plan
            except ConfigError as e:
                raise ConfigError(f"Cannot read heads catalog '{f}': entry {i} ({entry.id:.80}): {e}", f,
                                  key=e.key) from e
            out.append(entry)
    return tuple(out)


def _group(name: str) -> str:
    if name.endswith(EMBEDDING):
        return "embedding"
    if name.startswith("lm_head"):
        return "lm_head"
    if "self_attn" in name:
        return "attention"
    if ".mlp." in name:
        return "ffn"
    if "norm" in name:
        return "norm"
    return "other"


# What no EAGLE-3 head holds (a 10^15 hidden size would size exabytes, 10^12 positions overflow no cap)
_CAPS = {"hidden_size": MAX_HIDDEN, "target_hidden_size": MAX_HIDDEN, "intermediate_size": MAX_HIDDEN,
         "vocab_size": MAX_VOCAB, "draft_vocab_size": MAX_VOCAB, "max_position_embeddings": MAX_CONTEXT,
         "num_attention_heads": 1 << 12, "num_key_value_heads": 1 << 12, "head_dim": 1 << 12}


def _int(cfg: Mapping[str, Any], key: str, default: int | None = None) -> int:
    v = cfg.get(key, default)
    if v is None and default is not None:
        v = default
    cap = _CAPS.get(key, MAX_HIDDEN)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= cap:
        raise ConfigError(f"Cannot size EAGLE-3 head: config key '{key}' is {v!r:.40} (expected an integer in 1.."
                          f"{cap}).", "config.json", key=key)
    return v


def _architecture(cfg: Mapping[str, Any]) -> str:
    """The first of `architectures` (a list of names), '?' when absent; anything else is refused."""
    arch = cfg.get("architectures")
    if arch is None or arch == []:
        return "?"
    if not isinstance(arch, list) or not all(isinstance(a, str) and a for a in arch):
        raise ConfigError(f"Cannot read EAGLE-3 head config: 'architectures' is {arch!r:.40} (expected a list of "
                          f"class names).", "config.json", key="architectures")
    return arch[0]
