"""GGUF architecture keys (`{arch}.*`) + tensor names -> per-layer LayerSpecs, MoE, sizes.

Why llama.cpp's rules: a GGUF is run by llama.cpp (or engines that follow its keys), so
the layer kinds follow src/llama-model.cpp `load_hparams`: which architectures apply a
sliding window and on which layers (`set_swa_pattern`, src/llama-hparams.cpp), which
layers are recurrent, which have no KV cache of their own. Sizes come from the keys
llama.cpp reads; per-layer FFN kinds come from the tensors actually stored (exact), with
the keys as fallback for files written without tensors.
"""

# No `from __future__ import annotations` here: typing.NamedTuple compiles every string annotation of its
# fields at import (a ForwardRef each), ~40 us a field on every GGUF ledger's start-up (issue #33).

import builtins
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..core.constants import MAX_CONTEXT, MAX_HIDDEN, MAX_LAYERS, MAX_VOCAB
from ..core.errors import ConfigError
from ..core.spec import CHUNKED, FULL, MLA, NONE, SLIDING, LayerSpec, MoESpec
from .gguf_header import ARRAY, BOOL, INTEGER_TYPES, GGUFHeader, GGUFTensor


class SwaRule(NamedTuple):
    """llama.cpp's sliding-window setup for one architecture (llama-model.cpp load_hparams).

    set_swa_pattern(period): layer il is windowed iff il % period < period - 1; with
    dense_first: iff il % period != 0 (llama-hparams.cpp). `window` is the default when
    the key is absent; `fixed` means llama.cpp ignores the key's value. `needs_key`: SWA
    only when `attention.sliding_window` > 0 is present. `llamacpp=False`: the model has a
    window but llama.cpp runs those layers as full attention.
    """

    period: int
    dense_first: bool = False
    kind: str = SLIDING
    window: int | None = None
    fixed: bool = False
    needs_key: bool = False
    llamacpp: bool = True
    source: str = ""


SWA_RULES: dict[str, SwaRule] = {
    "gemma2": SwaRule(2, window=4096, source="gemma2: set_swa_pattern(2), n_swa default 4096"),
    "gemma3": SwaRule(6, needs_key=True, source="gemma3: set_swa_pattern(6) (5 sliding : 1 full)"),
    "gemma3n": SwaRule(5, source="gemma3n: set_swa_pattern(5)"),
    "cohere2": SwaRule(4, source="cohere2: set_swa_pattern(4)"),
    "olmo2": SwaRule(4, needs_key=True, source="olmo2: set_swa_pattern(4) when sliding_window > 0"),
    "exaone4": SwaRule(4, needs_key=True, source="exaone4: set_swa_pattern(4)"),
    "gpt-oss": SwaRule(2, source="gpt-oss (LLM_ARCH_OPENAI_MOE): set_swa_pattern(2)"),
    "llama4": SwaRule(4, kind=CHUNKED, window=8192, fixed=True,
                      source="llama4: chunked attention of 8192 tokens, set_swa_pattern(4)"),
    "smallthinker": SwaRule(4, dense_first=True, window=4096, fixed=True, needs_key=True,
                            source="smallthinker: set_swa_pattern(4, dense_first), n_swa 4096"),
    "phi3": SwaRule(0, needs_key=True, llamacpp=False,
                    source="phi3: window on every layer, but llama.cpp disables Phi SWA (PR #13676)"),
}
# Architectures whose every layer is recurrent (llama-arch.cpp llm_arch_is_recurrent).
RECURRENT_ARCHS = frozenset({"mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"})
LINEAR_ATTENTION_ARCHS = frozenset({"qwen3next", "qwen35", "qwen35moe", "kimi-linear"})
PARALLEL_HYBRID = frozenset({"falcon-h1"})  # attention and Mamba2 side by side in every layer
_BLK = re.compile(r"^blk\.(\d+)\.(.+)$")
# Tensors that mean "this layer has its own attention projections" (norms excluded).
_ATTN = re.compile(r"^attn_(q|k|v|qkv|q_a|q_b|kv_a_mqa|kv_b|k_b|v_b|output)\.weight$")
_RECURRENT = re.compile(r"^(ssm_|time_mix_|shortconv\.)")
_EXPERTS = re.compile(r"^ffn_(gate|up|down|gate_up)_exps\.weight$")
_SHARED = re.compile(r"^ffn_(up|gate|gate_up)_shexp\.weight$")
_DENSE = re.compile(r"^ffn_(up|down|gate|gate_up)\.weight$")


class ArchResult(NamedTuple):
    """What the architecture keys and tensors say; gguf.py adds weights and tokenizer.

    NamedTuples here and in gguf_header.py: a dataclass costs ~1 ms of start-up each (issue #33)."""

    layers: tuple[LayerSpec, ...]
    hidden: int
    intermediate: int
    vocab: int
    max_context: int
    tied: bool
    moe: MoESpec | None
    llamacpp_swa: bool
    excluded: tuple[str, ...]  # tensor names stored but not loaded (MTP / nextn layers)
    notes: tuple[str, ...]
    provenance: dict[str, str]


class _Meta:
    """Typed access to `{arch}.*` keys with bounds; errors name the file and the key.

    Past `def int` the class body's `int` is that method: annotations below it say `builtins.int`."""

    def __init__(self, h: GGUFHeader, arch: str) -> None:
        self.h, self.arch = h, arch

    def key(self, name: str) -> str:
        return f"{self.arch}.{name}"

    def bad(self, key: str, expected: str, got: Any) -> ConfigError:
        return ConfigError(f"Cannot size the model from '{self.h.path}': GGUF key '{key}' must be {expected} "
                           f"(got {got!r:.60}). Re-convert the model with a current llama.cpp.", self.h.path, key=key)

    def has(self, name: str) -> bool:
        return self.key(name) in self.h.metadata

    def int(self, name: str, default: int | None = None, *, bound: int = 1 << 31, required: bool = False) -> int:
        k = self.key(name)
        if k not in self.h.metadata:
            if required:
                raise ConfigError(f"Cannot size the model from '{self.h.path}': required GGUF key '{k}' is "
                                  f"missing. Re-convert the model with a current llama.cpp.", self.h.path, key=k)
            return default  # type: ignore[return-value]
        v = self.h.metadata[k]
        if self.h.value_types[k] not in INTEGER_TYPES or not 0 <= v <= bound:
            raise self.bad(k, f"an integer between 0 and {bound}", v)
        return int(v)

    def per_layer(self, name: str, n: builtins.int, default: builtins.int, *,
                  bound: builtins.int = 1 << 31) -> list[builtins.int]:
        """A scalar for every layer or an array of n values (llama.cpp get_key_or_arr)."""
        k = self.key(name)
        if k not in self.h.metadata:
            return [default] * n
        vt, v = self.h.value_types[k], self.h.metadata[k]
        if isinstance(vt, tuple):
            if vt[1] not in INTEGER_TYPES or len(v) != n or not all(0 <= x <= bound for x in v):
                raise self.bad(k, f"an integer or an array of {n} integers (one per layer)",
                               f"{len(v)}-element array" if isinstance(v, tuple) else v)
            return [int(x) for x in v]
        return [self.int(name, bound=bound)] * n

    def flags(self, name: str, n: builtins.int) -> list[bool] | builtins.int | None:
        """`attention.sliding_window_pattern`: a period (int) or one bool per layer (True = windowed)."""
        k = self.key(name)
        if k not in self.h.metadata:
            return None
        vt, v = self.h.value_types[k], self.h.metadata[k]
        if vt == (ARRAY, BOOL) or (isinstance(vt, tuple) and vt[1] in INTEGER_TYPES):
            if len(v) != n:
                raise self.bad(k, f"an array of {n} flags (one per layer)", f"{len(v)}-element array")
            return [bool(x) for x in v]
        return self.int(name, bound=1 << 16)


def _by_layer(tensors: Sequence[GGUFTensor]) -> dict[int, dict[str, GGUFTensor]]:
    out: dict[int, dict[str, GGUFTensor]] = {}
    for t in tensors:
        m = _BLK.match(t.name)
        if m:
            out.setdefault(int(m.group(1)), {})[m.group(2)] = t
    return out


def swa_flags(m: _Meta, arch: str, n: int) -> tuple[list[bool], int | None, SwaRule | None, list[str]]:
    """Which layers are windowed in llama.cpp, the window, the rule used, and notes."""
    notes: list[str] = []
    rule = SWA_RULES.get(arch)
    key_window = m.int("attention.sliding_window", bound=MAX_CONTEXT)
    pattern = m.flags("attention.sliding_window_pattern", n)
    if rule is None:
        if key_window and pattern is not None:
            rule = SwaRule(period=pattern if isinstance(pattern, int) else 0,
                           source=f"{arch}: attention.sliding_window_pattern")
        else:
            if key_window:
                notes.append(f"GGUF has {arch}.attention.sliding_window={key_window} but no llama.cpp SWA rule is "
                             f"known for '{arch}': every layer sized as full attention (an upper bound)")
            return [False] * n, None, None, notes
    if key_window == 0 and m.has("attention.sliding_window"):
        return [False] * n, None, None, notes  # an explicit 0 turns SWA off (llama4, olmo2, gemma3)
    if rule.needs_key and not key_window:
        return [False] * n, None, None, notes
    window = rule.window if (rule.fixed or key_window is None) else key_window
    if not window:
        notes.append(f"{arch} needs {arch}.attention.sliding_window (llama.cpp refuses the file without it): "
                     f"every layer sized as full attention")
        return [False] * n, None, None, notes
    if isinstance(pattern, list):
        return pattern, window, rule, notes
    period = pattern if isinstance(pattern, int) else rule.period
    if period == 0:  # set_swa_pattern(0): every layer windowed
        return [True] * n, window, rule, notes
    if rule.dense_first:
        return [i % period != 0 for i in range(n)], window, rule, notes
    return [i % period < period - 1 for i in range(n)], window, rule, notes


def derive(h: GGUFHeader, arch: str, vocab_tokens: int | None) -> ArchResult:
    """Layers, widths, MoE and context of a GGUF model, following llama.cpp's hparams.

    Raises:
        ConfigError: a required key (block_count, embedding_length, context_length) is
            missing, or a key has the wrong type, an implausible value, or a per-layer array
            of the wrong length.
    """
    m = _Meta(h, arch)
    n_all = m.int("block_count", required=True, bound=MAX_LAYERS)
    hidden = m.int("embedding_length", required=True, bound=MAX_HIDDEN)
    if not n_all or not hidden:
        raise m.bad(m.key("block_count" if not n_all else "embedding_length"), "at least 1", 0)
    context = m.int("context_length", required=True, bound=MAX_CONTEXT)
    nextn = m.int("nextn_predict_layers", 0, bound=n_all)
    n = n_all - nextn
    blocks = _by_layer(h.tensors)
    excluded = tuple(t.name for i in range(n, n_all) for t in blocks.get(i, {}).values())
    n_ff = m.per_layer("feed_forward_length", n_all, 0, bound=MAX_HIDDEN * 8)[:n]
    heads = m.per_layer("attention.head_count", n_all, 0, bound=65_536)[:n]
    # head_count_kv defaults to head_count, layer by layer (llama-model.cpp load_hparams)
    kv_heads = (m.per_layer("attention.head_count_kv", n_all, 0, bound=65_536)[:n]
                if m.has("attention.head_count_kv") else list(heads))
    n_head = heads[0] if heads else 0
    hd_k = m.int("attention.key_length", hidden // n_head if n_head else 0, bound=65_536)
    hd_v = m.int("attention.value_length", hidden // n_head if n_head else 0, bound=65_536)
    hd_k_swa = m.int("attention.key_length_swa", hd_k, bound=65_536)
    hd_v_swa = m.int("attention.value_length_swa", hd_v, bound=65_536)
    swa, window, rule, notes = swa_flags(m, arch, n_all)
    kv_from = _kv_layers(m, arch, n_all, notes)
    recurrent = _recurrent(m, arch, n, blocks)
    mla = _mla(m, h, notes)
    moe, expert_ff = _moe(m, blocks, n)
    layers = []
    for i in range(n):
        attn = blocks.get(i, {})
        # a recurrent layer keeps a KV cache only if it also has attention (Falcon-H1 runs both in parallel)
        has_attn_tensors = any(_ATTN.match(k) for k in attn) if attn else (not recurrent[i] or arch in PARALLEL_HYBRID)
        kv = kv_heads[i] if (not recurrent[i] or has_attn_tensors) and i < kv_from else 0
        ffn, width = _ffn(i, attn, n_ff[i], moe, expert_ff, m)
        common: dict[str, Any] = dict(q_heads=heads[i], ffn=ffn, ffn_width=width, **recurrent[i] or {})
        if kv == 0:
            layers.append(LayerSpec(attention=NONE, **common))
        elif mla is not None:
            rank, rope, k_dim, v_dim = mla
            layers.append(LayerSpec(attention=MLA, kv_heads=heads[i], head_dim_k=k_dim, head_dim_v=v_dim,
                                    kv_lora_rank=rank, rope_dim=rope, **common))
        elif swa[i] and rule is not None:
            layers.append(LayerSpec(attention=rule.kind, kv_heads=kv, head_dim_k=hd_k_swa, head_dim_v=hd_v_swa,
                                    window=window, **common))
        else:
            layers.append(LayerSpec(attention=FULL, kv_heads=kv, head_dim_k=hd_k, head_dim_v=hd_v, **common))
    vocab = vocab_tokens or m.int("vocab_size", 0, bound=MAX_VOCAB) or _embedding_rows(h)
    tied = "output.weight" not in {t.name for t in h.tensors} if h.tensors else False
    prov = {"shapes": f"GGUF metadata ({arch}.*)"}
    if rule is not None and any(swa[:n]):
        prov["sliding_window"] = f"llama.cpp rule, {rule.source}; window {window} from " + (
            "the rule" if rule.fixed or not m.has("attention.sliding_window") else f"{arch}.attention.sliding_window")
    if nextn:
        notes.append(f"{nextn} MTP (nextn) layer(s) after the {n} decoder layers: not loaded by llama.cpp for plain "
                     f"decoding, not counted")
    widths = [w for w in n_ff if w] or [expert_ff or 0]
    return ArchResult(layers=tuple(layers), hidden=hidden, intermediate=widths[0], vocab=vocab, max_context=context,
                      tied=tied, moe=moe, llamacpp_swa=rule.llamacpp if rule else True, excluded=excluded,
                      notes=tuple(notes), provenance=prov)


def _kv_layers(m: _Meta, arch: str, n_all: int, notes: list[str]) -> int:
    """Layers from this index on reuse earlier layers' KV (gemma3n: n_layer_kv_from_start)."""
    shared = m.int("attention.shared_kv_layers", 0, bound=n_all)
    if arch == "gemma3n" and not shared:
        shared = max(n_all - 20, 0)  # llama.cpp hard-codes n_layer_kv_from_start = 20 for gemma3n
    if shared:
        notes.append(f"the last {shared} layers reuse earlier layers' KV cache (no cache of their own)")
    return n_all - shared


def _recurrent(m: _Meta, arch: str, n: int, blocks: dict[int, dict[str, GGUFTensor]]) -> list[dict[str, Any] | None]:
    """Per layer: the recurrent mixer's LayerSpec fields, or None.

    A layer is recurrent when it stores ssm_* / time_mix_* / shortconv tensors (or, for
    files without tensors, when its arch is recurrent or its head_count_kv is 0 in a hybrid).
    State per sequence (llama-hparams.cpp n_embd_r / n_embd_s):
      SSM (Mamba, Mamba2, gated delta net): conv (d_conv - 1) x (d_inner + 2 n_group d_state), state d_state x d_inner
      RWKV: token_shift_count x n_embd, state n_embd x wkv head_size;  LFM2 short conv: n_embd x (l_cache - 1)
    """
    fields = _state_fields(m, arch)
    if fields is None:
        return [None] * n
    n_all = m.int("block_count", bound=MAX_LAYERS)
    kv = m.per_layer("attention.head_count_kv", n_all, 0) if m.has("attention.head_count_kv") else [0] * n_all
    out: list[dict[str, Any] | None] = []
    interval = m.int("full_attention_interval", 4, bound=MAX_LAYERS) or 4
    for i in range(n):
        names = blocks.get(i)
        if names:
            rec = any(_RECURRENT.match(k) for k in names)
        elif arch in RECURRENT_ARCHS or arch in PARALLEL_HYBRID:
            rec = True
        elif arch in LINEAR_ATTENTION_ARCHS:
            rec = (i + 1) % interval != 0
        else:
            rec = kv[i] == 0
        out.append(fields if rec else None)
    return out


def _state_fields(m: _Meta, arch: str) -> dict[str, Any] | None:
    if m.has("ssm.conv_kernel"):
        d_conv = m.int("ssm.conv_kernel", bound=1 << 12)
        d_inner = m.int("ssm.inner_size", 0, bound=1 << 24)
        d_state = m.int("ssm.state_size", 0, bound=1 << 16)
        groups = m.int("ssm.group_count", 0, bound=1 << 16)
        kind = "linear_attention" if arch in LINEAR_ATTENTION_ARCHS else ("mamba2" if groups else "mamba")
        return dict(recurrent=kind, conv_dim=d_inner + 2 * groups * d_state, conv_kernel=d_conv,
                    recurrent_state_elems=d_state * d_inner)
    if m.has("wkv.head_size"):
        hidden = m.int("embedding_length", 0, bound=MAX_HIDDEN)
        shift = m.int("token_shift_count", 2, bound=16)
        return dict(recurrent="rwkv", conv_dim=hidden, conv_kernel=shift + 1,
                    recurrent_state_elems=hidden * m.int("wkv.head_size", bound=1 << 16))
    if m.has("shortconv.l_cache"):
        return dict(recurrent="short_conv", conv_dim=m.int("embedding_length", 0, bound=MAX_HIDDEN),
                    conv_kernel=m.int("shortconv.l_cache", bound=1 << 12))
    return None


def _mla(m: _Meta, h: GGUFHeader, notes: list[str]) -> tuple[int, int, int, int] | None:
    """(kv_lora_rank, rope_dim, k head dim, v head dim) when llama.cpp runs the model as MLA.

    llama.cpp is_mla(): key_length_mla and value_length_mla set (converters since PR #12801
    write them, with key_length = kv_lora_rank + rope and head_count_kv = 1). Older DeepSeek
    GGUFs lack them: llama.cpp then caches full per-head K and V.
    """
    if not m.has("attention.kv_lora_rank"):
        return None
    rank = m.int("attention.kv_lora_rank", bound=1 << 16)
    if not (m.int("attention.key_length_mla", 0, bound=65_536) and m.int("attention.value_length_mla", 0,
                                                                           bound=65_536)):
        notes.append(f"'{h.path}' predates llama.cpp's MLA GGUF layout (no key_length_mla): llama.cpp caches full "
                     f"per-head K/V for it; re-convert for the latent cache")
        return None
    rope = m.int("rope.dimension_count", 0, bound=65_536)
    return rank, rope, m.int("attention.key_length_mla", bound=65_536), m.int("attention.value_length_mla",
                                                                             bound=65_536)


def _moe(m: _Meta, blocks: dict[int, dict[str, GGUFTensor]], n: int) -> tuple[MoESpec | None, int]:
    experts = m.int("expert_count", 0, bound=1 << 16)
    if not experts:
        return None, 0
    used = m.int("expert_used_count", 0, bound=experts)
    ff = m.int("expert_feed_forward_length", 0, bound=MAX_HIDDEN * 8)
    shared_n = m.int("expert_shared_count", 0, bound=1 << 10)
    shared_ff = m.int("expert_shared_feed_forward_length", 0, bound=MAX_HIDDEN * 8)
    shared_total = 0
    for i in range(n):
        for k, t in blocks.get(i, {}).items():
            if not ff and _EXPERTS.match(k) and k != "ffn_down_exps.weight" and len(t.shape) == 3:
                ff = t.shape[1] // (2 if k.startswith("ffn_gate_up") else 1)  # [experts, n_ff_exp, n_embd]
            if not shared_total and _SHARED.match(k) and len(t.shape) == 2:
                shared_total = t.shape[0] // (2 if k.startswith("ffn_gate_up") else 1)  # [n_ff_shexp total, n_embd]
    if (shared_total or shared_ff) and not shared_n:
        shared_n = 1
    if not shared_total:
        # expert_shared_feed_forward_length is the whole shared block (Qwen2-MoE); else n_shared x n_ff_exp
        shared_total = shared_ff or ff * shared_n
    return MoESpec(experts, used, ff, shared_n, shared_total), ff


def _ffn(i: int, names: dict[str, GGUFTensor], n_ff: int, moe: MoESpec | None, expert_ff: int,
         m: _Meta) -> tuple[str, int]:
    """Layer i's FFN from its stored tensors; without tensors, from leading_dense_block_count / n_ff."""
    if names:
        if any(_EXPERTS.match(k) for k in names):
            return "moe", expert_ff
        dense = [t for k, t in names.items() if _DENSE.match(k)]
        if dense:
            # ffn_up / ffn_gate are [n_ff, n_embd]; the key wins, the tensor fills a missing key
            up = names.get("ffn_up.weight") or names.get("ffn_gate.weight")
            return "dense", n_ff or (up.shape[0] if up is not None and len(up.shape) == 2 else 0)
        return "none", 0
    if moe is not None and i >= m.int("leading_dense_block_count", 0, bound=MAX_LAYERS):
        return "moe", expert_ff
    return ("dense", n_ff) if n_ff else ("none", 0)


def _embedding_rows(h: GGUFHeader) -> int:
    for t in h.tensors:
        if t.name == "token_embd.weight" and len(t.shape) == 2:
            return t.shape[0]
    return 0
