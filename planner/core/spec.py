"""Normalised, engine-neutral description of a model: what every other module reads.

Why frozen dataclasses: sources (config.json, safetensors headers, GGUF, catalog,
Hub) all end in one `ModelSpec`, and memory/pairing/speed are pure functions of
it. Raw config dicts never leave `planner.sources`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from . import dtypes

# Attention kinds a layer's KV cache can have (docs/ledger.md "KV cache").
FULL, SLIDING, CHUNKED, MLA, NONE = "full", "sliding", "chunked", "mla", "none"
ATTENTION_KINDS = (FULL, SLIDING, CHUNKED, MLA, NONE)
# Tensor groups: what a tensor is for decides whether a quantisation override touches it.
GROUPS = ("embedding", "lm_head", "attention", "ffn", "experts", "norm", "recurrent", "vision", "other")
QUANTISABLE_GROUPS = frozenset({"attention", "ffn", "experts", "recurrent"})


def _frozen(d: Mapping) -> Mapping:
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class LayerSpec:
    """One decoder layer: its token mixer (attention and/or recurrent state) and its FFN.

    KV bytes per token of an attention layer = kv_heads * (head_dim_k + head_dim_v) * dtype
    bytes; an MLA layer caches (kv_lora_rank + rope_dim) per token in latent engines; a
    recurrent mixer (linear attention, Mamba2) keeps conv_dim x (kernel or kernel-1) plus
    recurrent_state_elems per sequence, whatever the context.
    """

    attention: str = FULL
    q_heads: int = 0
    kv_heads: int = 0
    head_dim_k: int = 0
    head_dim_v: int = 0
    window: int | None = None  # sliding window / chunk size, tokens
    kv_lora_rank: int = 0  # MLA latent width
    rope_dim: int = 0  # MLA decoupled rope key width (cached beside the latent)
    index_dim: int = 0  # DSA (DeepSeek-V3.2) indexer: one more key row of this width per token (fits/memory.py)
    recurrent: str | None = None  # None | "linear_attention" | "mamba" | "mamba2" | "short_conv" | "rg_lru"
    conv_dim: int = 0  # recurrent mixers: channels of the short causal conv
    conv_kernel: int = 0
    recurrent_state_elems: int = 0  # SSM / delta-rule state elements per sequence
    ffn: str = "dense"  # dense | moe | none
    ffn_width: int = 0  # dense intermediate, or one routed expert's intermediate

    @property
    def has_kv(self) -> bool:
        return self.attention != NONE


@dataclass(frozen=True)
class MoESpec:
    """Routed experts (all resident) and how many each token uses (drives speed only)."""

    experts: int
    experts_per_token: int
    expert_intermediate: int
    shared_experts: int = 0
    shared_intermediate: int = 0


@dataclass(frozen=True)
class MtpSpec:
    """Multi-token-prediction layers a checkpoint ships beyond its decoder (DeepSeek-V3, GLM-4.5+,
    Qwen3-Next, MiMo): stored, but resident only when an engine runs MTP speculation.

    Why apart from `weights`: plain decoding does not load them, MTP speculation does; the
    drafting method (drafting/mtp.py) makes them resident, the ledger shows them on their own row.
    `nbytes` is exact when `source` is "header"/"gguf", computed from shapes when "config".
    """

    layers: int
    params: int
    nbytes: int
    source: str
    # False: the converter that wrote this checkpoint keeps them out of its weights (sources/mlx_export.py);
    # the layers are still what MTP speculation would load from their own shard
    in_checkpoint: bool = True


_LAYER_INDEX = re.compile(r"(?:^|\.)(?:layers|h|blocks|blk)\.(\d+)\.")


@dataclass(frozen=True)
class TensorInfo:
    """One stored (or config-derived) tensor: name, shape, storage format, exact bytes."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    group: str = "other"

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @cached_property
    def layer(self) -> int | None:
        m = _LAYER_INDEX.search(self.name)
        return int(m.group(1)) if m else None


def make_tensor(name: str, shape: tuple[int, ...], dtype: str, group: str) -> TensorInfo:
    """A tensor whose bytes follow from its shape and format (config-derived or re-quantised)."""
    numel = 1
    for d in shape:
        numel *= d
    return TensorInfo(name, tuple(shape), dtypes.canonical(dtype), dtypes.nbytes(dtype, numel), group)


@dataclass(frozen=True)
class WeightInventory:
    """Resident weights: exact bytes per storage format, parameters per group.

    `source` is "header" (safetensors), "gguf", or "config" (shapes computed from
    config.json). `excluded_bytes` are stored but not resident (a tied lm_head copy,
    MTP layers, rotary buffers), with the reason in `notes`.
    """

    tensors: tuple[TensorInfo, ...]
    source: str
    params_total: int
    params_active: int
    excluded_bytes: int = 0
    notes: tuple[str, ...] = ()
    bytes_by_dtype: Mapping[str, int] = field(init=False)
    bytes_by_group: Mapping[str, int] = field(init=False)
    resident_bytes: int = field(init=False)
    # derived views (re-sized tensor lists, per-device splits) memoised by their inputs: the
    # planner asks the same question for every candidate draft, and the inventory never changes
    memo: dict = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        by_dtype: dict[str, int] = {}
        by_group: dict[str, int] = {}
        for t in self.tensors:
            by_dtype[t.dtype] = by_dtype.get(t.dtype, 0) + t.nbytes
            by_group[t.group] = by_group.get(t.group, 0) + t.nbytes
        object.__setattr__(self, "bytes_by_dtype", _frozen(by_dtype))
        object.__setattr__(self, "bytes_by_group", _frozen(by_group))
        object.__setattr__(self, "resident_bytes", sum(by_dtype.values()))

    @cached_property  # the inventory is frozen: a fleet report asks this ~27k times per machine
    def dominant_dtype(self) -> str:
        return max(self.bytes_by_dtype.items(), key=lambda kv: kv[1])[0] if self.bytes_by_dtype else "BF16"


@dataclass(frozen=True)
class TokenizerFingerprint:
    """What pairing compares: vocabulary identity, special ids, normalisation, template.

    Built from tokenizer.json/tokenizer_config.json (HF), from GGUF `tokenizer.ggml.*`,
    or from catalog facts (then `tokens` is None and `vocab_hash` may be a family tag).
    `vocab_type` uses llama.cpp's names: SPM, BPE, WPM, UGM, RWKV, PLAMO2 (or NONE).
    """

    vocab_type: str
    vocab_size: int
    vocab_hash: str | None
    source: str
    tokens: tuple[str, ...] | None = None
    bos_id: int | None = None
    eos_id: int | None = None
    eos_ids: tuple[int, ...] = ()
    pad_id: int | None = None
    add_bos: bool | None = None
    add_eos: bool | None = None
    normalizer_hash: str | None = None
    pre_tokenizer_hash: str | None = None
    pre: str | None = None  # llama.cpp pre-tokenizer name (tokenizer.ggml.pre) when known
    chat_template_hash: str | None = None
    special_tokens: tuple[str, ...] = ()
    family: str | None = None
    model_name: str | None = None  # raw tokenizer model name (BPE, Unigram, gpt2, llama, ...)
    # --- pairing extensions (planner/sources/tokenizer.py) ---
    # basis: "tokens" (id -> token table read), "catalog" (catalog facts: family tag + sizes),
    # "config" (tokenizer_config/config only; tokenizer.json not parsed, vocab_size is config's),
    # "count" (a GGUF ledger's read: the token table's length only, its strings not decoded; never paired).
    basis: str = "tokens"
    vocab_size_source: str | None = None  # where `vocab_size` came from
    base_vocab_size: int | None = None  # HF tokenizer.vocab_size: model vocab without added tokens
    config_vocab_size: int | None = None  # config.json vocab_size (embedding rows, may be padded)
    unk_id: int | None = None
    has_chat_template: bool | None = None
    notes: tuple[str, ...] = ()

    @property
    def n_vocab(self) -> int:
        """Token count as llama.cpp sees it: convert_hf_to_gguf pads the list to config vocab_size."""
        own = len(self.tokens) if self.tokens is not None else self.vocab_size
        return max(own, self.config_vocab_size or 0)

    def token_text(self, i: int) -> str | None:
        """Token string of id `i` as a converted GGUF holds it (`[PAD{i}]` past the table); None if unknown."""
        if self.tokens is None:
            return None
        return self.tokens[i] if i < len(self.tokens) else f"[PAD{i}]"


@dataclass(frozen=True)
class ModelSpec:
    """A model as the planner sees it. `provenance[field]` names where each figure came from."""

    id: str
    model_type: str
    architecture: str
    source: str
    layers: tuple[LayerSpec, ...]
    hidden: int
    intermediate: int
    vocab: int
    tied_embeddings: bool
    max_context: int
    dtype: str
    weights: WeightInventory
    moe: MoESpec | None = None
    mtp: MtpSpec | None = None  # MTP layers shipped beyond the decoder (not in `weights`)
    family: str | None = None
    revision: str | None = None
    path: str | None = None
    tokenizer: TokenizerFingerprint | None = None
    tokenizer_files: tuple[str, ...] = ()
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    quantization: str | None = None
    instruct: bool | None = None
    state_dtype: str | None = None  # recurrent state dtype if the config pins it (mamba_ssm_cache_dtype)
    llamacpp_swa: bool = True  # False: llama.cpp runs this arch's sliding layers as full attention
    provenance: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    # how far the figures can be trusted (sources/confidence.py): "exact" | "high" | "low", and why
    confidence: str = "high"
    assumptions: tuple[str, ...] = ()
    # bytes the checkpoint stores beyond `weights` and `mtp` (tied lm_head copy, rotary buffers)
    stored_extra_bytes: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "provenance", _frozen(self.provenance))

    @property
    def checkpoint_bytes(self) -> int:
        """What the checkpoint stores (comparable with the Hub's total_size): resident + MTP + excluded."""
        mtp = self.mtp.nbytes if self.mtp and self.mtp.in_checkpoint else 0
        return self.weights.resident_bytes + mtp + self.stored_extra_bytes

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def params_total(self) -> int:
        return self.weights.params_total

    @property
    def params_active(self) -> int:
        return self.weights.params_active
