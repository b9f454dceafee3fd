"""Name-based classification of stored tensors, and the resident-weight inventory.

Why by name: headers carry names, shapes and dtypes only. What a tensor is for
(embedding, attention, experts...) decides whether a quantisation override
touches it and what counts as active; what is stored but not resident (a tied
lm_head copy, MTP layers, rotary buffers) must be excluded with a reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..core import dtypes
from ..core.spec import MtpSpec, TensorInfo, WeightInventory
from .located import Located

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((g, re.compile(p)) for g, p in (
    ("vision", r"vision|visual|image|mm_projector|multi_modal_projector|audio|patch_embed|siglip"),
    ("lm_head", r"(^|\.)(lm_head|output|embed_out)\.(weight|bias)$|^output\.|(^|\.)lm_head\."),
    ("embedding", r"embed_tokens|(^|\.)wte\.|word_embeddings|tok_embeddings|token_embd|(^|\.)embeddings?\."),
    ("experts", r"\.experts\.|ffn_(gate|up|down|gate_up)_exps|block_sparse_moe\.experts"),
    ("norm", r"norm|\.bias$|_bias$|ln_|\.sinks$|A_log$|\.D$|dt_bias"),
    ("recurrent", r"mamba|linear_attn|in_proj|out_proj|\.ssm|conv1d"),
    ("attention", r"attn|attention|q_proj|k_proj|v_proj|o_proj|qkv|query|key|value|wq|wk|wv|wo"),
    ("ffn", r"mlp|ffn|feed_forward|fc1|fc2|gate_proj|up_proj|down_proj|w1|w2|w3|shared_expert"),
))


def classify(name: str, ndim: int) -> str:
    """Group of a tensor by its name (HF or GGUF conventions); 1-D tensors default to 'norm'."""
    for group, pattern in _RULES:
        if pattern.search(name):
            if group in ("attention", "ffn", "recurrent", "experts") and ndim < 2 and group != "experts":
                return "norm"
            return group
    return "norm" if ndim < 2 else "other"


_ROTARY = re.compile(r"rotary_emb\.inv_freq$|\.rope\.freqs$|rope_freqs")
_LAYER = re.compile(r"(?:^|\.)(?:layers|h|blk)\.(\d+)\.")


def inventory_from_header(raw: Iterable[tuple[str, str, tuple[int, ...]]], *, n_layers: int, tied: bool,
                          logical: tuple[int, int] | None = None, moe: tuple[int, int] | None = None,
                          source: str = "header") -> WeightInventory:
    """Resident weights from header tensors.

    Excluded with a note: rotary `inv_freq` buffers (recomputed at load), layers with an
    index >= n_layers (MTP/next-token heads loaded only for MTP speculation), and the
    stored lm_head when config ties it to the embedding (transformers/vLLM load it once).

    Args:
        logical: (params_total, params_active) from config shapes; used instead of header
            numels when the checkpoint packs weights (int4 in int32, fp8 scales, MXFP4 blocks).
        moe: (experts, experts_per_token) to derive active parameters from header numels.
    """
    kept: list[TensorInfo] = []
    excluded = 0
    notes: list[str] = []
    counts = {"rotary": 0, "mtp": 0, "tied": 0}
    for name, dtype, shape in raw:
        numel = 1
        for d in shape:
            numel *= d
        t = TensorInfo(name, shape, dtype, dtypes.nbytes(dtype, numel), classify(name, len(shape)))
        m = _LAYER.search(name)
        if _ROTARY.search(name):
            counts["rotary"] += t.nbytes
        elif (m and int(m.group(1)) >= n_layers and t.group != "vision") or _MTP.match(name):
            counts["mtp"] += t.nbytes
        elif tied and t.group == "lm_head":
            counts["tied"] += t.nbytes
        else:
            kept.append(t)
            continue
        excluded += t.nbytes
    if counts["rotary"]:
        notes.append(f"{counts['rotary']} B of rotary inv_freq buffers stored but recomputed at load: not counted")
    if counts["mtp"]:
        notes.append(f"{counts['mtp']} B of layers beyond num_hidden_layers (MTP heads) stored but not loaded "
                     f"for plain decoding: not counted")
    if counts["tied"]:
        notes.append(f"{counts['tied']} B of lm_head stored although tie_word_embeddings is true: resident once")
    quantised = any(not dtypes.FORMATS[t.dtype].is_float or t.dtype.startswith("F8") for t in kept
                    if t.group in ("attention", "ffn", "experts"))
    if quantised and logical:
        total, active = logical
        notes.append("checkpoint stores packed/quantised weights: parameter counts from config shapes")
    else:
        total = sum(t.numel for t in kept)
        active = active_params(total, routed_expert_params(kept), *(moe or (0, 0)))
    return WeightInventory(tensors=tuple(kept), source=source, params_total=total, params_active=active,
                           excluded_bytes=excluded, notes=tuple(notes))


def mtp_from_header(raw: Iterable[tuple[str, str, tuple[int, ...]]], n_layers: int) -> MtpSpec | None:
    """The MTP layers a checkpoint stores (the tensors `inventory_from_header` excludes as such): layers
    numbered past num_hidden_layers (DeepSeek-V3 `model.layers.61.*`, GLM-4.5) or under `mtp.` /
    `model.mtp_layers.` (Qwen3-Next/3.5, MiMo)."""
    params = nbytes = 0
    seen: set[str] = set()
    for name, dtype, shape in raw:
        m = _LAYER.search(name)
        if _ROTARY.search(name) or classify(name, len(shape)) == "vision":
            continue
        key = None
        if m and int(m.group(1)) >= n_layers:
            key = m.group(1)
        elif (mm := _MTP.match(name)) is not None:
            key = mm.group(1) or "0"
        if key is None:
            continue
        numel = 1
        for d in shape:
            numel *= d
        seen.add(key)
        params += numel
        nbytes += dtypes.nbytes(dtype, numel)
    return MtpSpec(layers=len(seen), params=params, nbytes=nbytes, source="header") if seen else None


_MTP = re.compile(r"(?:model\.)?mtp(?:_layers)?\.(?:layers\.)?(\d+)?")


def headless_reason(loc: Located) -> str | None:
    """Why a model has no lm_head (embedding / reward / bare-encoder checkpoints), or None.

    Evidence first: `architectures` naming only a bare base model (`Qwen3Model`, `...ForSequenceClassification`
    has a 1-row score head instead) or sentence-transformers files beside the config; else a guess from the
    name, which says so (confidence low)."""
    raw = loc.config.get("architectures")
    arches = [a for a in raw if isinstance(a, str)] if isinstance(raw, list) else []
    auto = loc.config.get("auto_map")
    if not isinstance(auto, dict):
        auto = {}
    # remote code names its base class (ChatGLMModel) yet maps a causal-LM class with a head
    headed = (any(k.startswith("AutoModelFor") for k in auto) or any(a in _BASE_WITH_HEAD for a in arches)
              or any(a in _TARGET_HEAD_DRAFTS for a in arches))
    if arches and not headed and all(a.endswith("Model") and not a.endswith("LMHeadModel") for a in arches):
        return f"architectures {arches[0]} is a bare base model: no lm_head"
    if loc.path is not None and any((loc.path / f).is_file() for f in _SENTENCE_FILES):
        return "sentence-transformers files beside config.json: an embedding model, no lm_head"
    name = str(loc.path.name if loc.path is not None else loc.ref)
    if _EMBED_NAME.search(name):
        return f"guess from the name '{name}': an embedding model without an lm_head"
    return None


# base classes that hold the output layer themselves (THUDM modeling_chatglm.py: ChatGLMModel.output_layer)
_BASE_WITH_HEAD = ("ChatGLMModel",)
# drafts that decode through the target's lm_head (arch/dflash.py): no head of their own, yet not an encoder
_TARGET_HEAD_DRAFTS = ("DFlashDraftModel",)
_SENTENCE_FILES = ("modules.json", "config_sentence_transformers.json", "sentence_bert_config.json")
_EMBED_NAME = re.compile(r"(^|[-_/])(embedding|embed|retriev\w*|gte|bge|e5)([-_]|$)", re.I)


def routed_expert_params(tensors: Iterable[TensorInfo]) -> int:
    return sum(t.numel for t in tensors if t.group == "experts")


def active_params(total: int, routed: int, experts: int, per_token: int) -> int:
    # active = total - routed * (1 - k/E): every token reads k of E routed experts
    if not experts:
        return total
    return total - routed + routed * per_token // experts
