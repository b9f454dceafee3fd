"""The memory ledger: weights + KV cache + activations of target and draft, + runtime overhead.

Pure functions over ModelSpec; every figure is an exact integer of bytes and
carries where it came from. Engine rules (docs/ledger.md "KV cache"):
  KV per token, attention layer   = kv_heads * (head_dim_k + head_dim_v) * kv_dtype bytes
  KV per token, MLA (latent)      = (kv_lora_rank + rope_dim) * kv_dtype bytes   [vLLM, SGLang, llama.cpp]
  KV per token, MLA (transformers)= heads * (qk_head_dim + v_head_dim) * bytes   (expanded)
  sliding layers hold min(context, window [+ engine slack]) tokens
  recurrent layers hold conv_dim * (kernel or kernel-1) + state elements per sequence
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType

from .. import engines
from ..core import dtypes, memo, quant
from ..core.constants import DEFAULT_CONTEXT
from ..core.errors import UsageError
from ..core.spec import FULL, MLA, NONE, SLIDING, LayerSpec, ModelSpec, TensorInfo
from ..engines.base import MTP, windowed

KV_DTYPES = ("auto", "f32", "f16", "bf16", "fp8", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl")


def _no_machine_engine() -> engines.Engine:
    return engines.resolve(None, None)  # no machine named: the registry's default (transformers)


@dataclass(frozen=True)
class Settings:
    """How the model will be run. `kv_dtype=None`: the engine's default (model dtype; f16 in llama.cpp).

    The engine comes resolved (`resolved_engine=`, an `Engine` the caller got from the registry where the plan
    starts): the ledger, fit and speed rules read its facts here and never look a name up again. `engine` is
    its canonical name, derived, and is what equality, the hash and the repr use (an Engine holds tables).
    """

    context: int = DEFAULT_CONTEXT
    batch: int = 1
    engine: str = field(init=False)  # resolved_engine.name
    kv_dtype: str | None = None
    weights_dtype: str | None = None
    group_size: int = 128
    spec_tokens: int = 0  # K drafted per round: verify rows, vLLM SSM state copies
    overhead_bytes: int | None = None
    prefill_chunk: int | None = None
    draft_context: int | None = None  # llama.cpp -cd: the draft's own context
    # the engine itself, resolved by the caller (left out of equality and the hash: its name stands for it)
    resolved_engine: engines.Engine = field(default_factory=_no_machine_engine, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.resolved_engine, engines.Engine):
            raise TypeError(f"Settings takes the resolved Engine (engines.get(name) where the plan starts), not "
                            f"{self.resolved_engine!r}")
        object.__setattr__(self, "engine", self.resolved_engine.name)
        for name in ("context", "batch"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise UsageError(f"Cannot use --{name} {v}: it must be a positive integer.")
        if self.spec_tokens < 0:
            raise UsageError(f"Cannot use {self.spec_tokens} speculative tokens: must be >= 0.")
        if self.kv_dtype is not None:
            kv_format(self.kv_dtype, "BF16")


@dataclass(frozen=True)
class ModelLedger:
    """One model's rows. kv_cache_bytes includes fixed recurrent state (state_bytes)."""

    role: str
    id: str
    params_total: int
    params_active: int
    weights_bytes: int
    kv_bytes_per_token: int
    kv_cache_bytes: int
    state_bytes: int
    activation_bytes: int
    context: int
    kv_dtype: str
    weights_dtype: str
    provenance: Mapping[str, str] = field(default_factory=dict)
    confidence: str = "high"  # the spec's: exact | high | low (sources/confidence.py)
    assumptions: tuple[str, ...] = ()
    checkpoint_bytes: int = 0  # what the checkpoint stores (resident + MTP layers + stored-not-loaded)
    mtp_bytes: int = 0  # MTP layers stored; resident only when an engine runs MTP speculation
    mtp_layers: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "provenance", MappingProxyType(dict(self.provenance)))

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_cache_bytes + self.activation_bytes


@dataclass(frozen=True)
class Ledger:
    """The whole deployment on one device (multi-device splits live in fit.py)."""

    settings: Settings
    models: tuple[ModelLedger, ...]
    overhead_bytes: int
    overhead_source: str

    @property
    def total_bytes(self) -> int:
        return sum(m.total_bytes for m in self.models) + self.overhead_bytes


# --- KV cache ---------------------------------------------------------------

def kv_format(kv_dtype: str | None, model_dtype: str, engine: engines.Engine | None = None) -> str:
    """Storage format of the KV cache: explicit, else f16 for llama.cpp, else the model's float dtype
    (engine None: no engine facts, the rule transformers follows)."""
    if kv_dtype is None or kv_dtype.lower() == "auto":
        if engine is not None and engine.default_kv_format:
            return engine.default_kv_format
        if model_dtype == "F32" and engine is not None and engine.sixteen_bit:
            return "BF16"
        return model_dtype if model_dtype in ("BF16", "F16", "F32") else "BF16"
    key = kv_dtype.strip().lower()
    if key not in KV_DTYPES and key not in ("fp8_e4m3", "fp8_e5m2", "float16", "bfloat16", "fp16"):
        raise UsageError(f"Cannot use KV dtype '{kv_dtype}': expected one of {', '.join(KV_DTYPES)}.")
    return dtypes.canonical(key)


@lru_cache(maxsize=4096)
def layer_token_bytes(layer: LayerSpec, fmt: str, engine: engines.Engine) -> int:
    """Bytes one token adds to one layer's cache (K row + V row, or the MLA latent row)."""
    if layer.attention == NONE:
        return 0
    if layer.attention == MLA:
        index = _indexer_row_bytes(layer, fmt, engine)
        if engine.latent_mla:
            # latent cache: one "head" of kv_lora_rank + rope_dim (vLLM, SGLang, llama.cpp: V-less since PR #19067)
            return dtypes.row_bytes(fmt, layer.kv_lora_rank + layer.rope_dim) + index
        # transformers/mlx expand the latent: K = heads x qk_head_dim, V = heads x v_head_dim
        return (dtypes.row_bytes(fmt, layer.kv_heads * layer.head_dim_k)
                + dtypes.row_bytes(fmt, layer.kv_heads * layer.head_dim_v) + index)
    return dtypes.row_bytes(fmt, layer.kv_heads * layer.head_dim_k) + dtypes.row_bytes(fmt, layer.kv_heads * layer.head_dim_v)


def _indexer_row_bytes(layer: LayerSpec, fmt: str, engine: engines.Engine) -> int:
    """A DSA indexer's own key cache per token (DeepSeek-V3.2): vLLM keeps it as fp8 values plus one fp32
    scale per 128 (deepseek_v2.py DeepseekV32IndexerCache: head_dim + head_dim // quant_block_size * 4,
    uint8; SGLang's NSA pool the same layout); transformers caches the key in the cache dtype
    (modeling_deepseek_v32.py, cache.update_indexer)."""
    if not layer.index_dim:
        return 0
    if engine.dsa_indexer_fp8:
        return layer.index_dim + -(-layer.index_dim // 128) * 4
    return dtypes.row_bytes(fmt, layer.index_dim)


def layer_tokens_held(layer: LayerSpec, s: Settings, context: int, *, swa: bool = True) -> int:
    """Tokens one layer's cache holds for the whole batch, with the engine's rounding and window rule.

    Each engine file says how (engines/*.py `tokens_held`): llama.cpp one pool of pad(context x batch,
    256) cells, vLLM 16-token blocks, SGLang a token pool, transformers the context, MLX steps of 256;
    sliding layers hold their window plus the engine's slack where the engine runs SWA.
    """
    return s.resolved_engine.tokens_held(layer, context, s.batch, s.prefill_chunk, windowed(layer, swa))


def state_bytes_per_sequence(layer: LayerSpec, s: Settings, model_fmt: str, state_dtype: str | None) -> int:
    """Fixed recurrent state of one layer for one sequence.

    conv state = conv_dim x (kernel - 1) (vLLM, llama.cpp, SGLang, MLX) or x kernel (transformers);
    plus recurrent_state_elems. llama.cpp keeps both in f32; vLLM/transformers keep conv in the model
    dtype and the SSM state in mamba_ssm_cache_dtype when the config pins it.
    """
    if not layer.recurrent:
        return 0
    e = s.resolved_engine
    width = layer.conv_kernel if e.conv_state_full_kernel else max(layer.conv_kernel - 1, 0)
    if e.recurrent_state_f32:
        conv_fmt = ssm_fmt = "F32"
    else:
        conv_fmt = model_fmt if model_fmt in ("BF16", "F16", "F32") else "BF16"
        ssm_fmt = dtypes.canonical(state_dtype) if state_dtype and dtypes.is_known(state_dtype) else conv_fmt
    return dtypes.nbytes(conv_fmt, layer.conv_dim * width) + dtypes.nbytes(ssm_fmt, layer.recurrent_state_elems)


def runs_swa(spec: ModelSpec, s: Settings) -> bool:
    """Whether the engine runs this model's sliding layers as windows (llama.cpp: only where it implements
    SWA for the architecture; others always)."""
    return spec.llamacpp_swa or not s.resolved_engine.swa_needs_arch


def kv_per_token(spec: ModelSpec, s: Settings) -> int:
    """Bytes per extra token of context once every window is full (sliding and recurrent layers add 0)."""
    fmt = kv_format(s.kv_dtype, spec.dtype, s.resolved_engine)
    swa = runs_swa(spec, s)
    return sum(layer_token_bytes(layer, fmt, s.resolved_engine) for layer in spec.layers
               if layer.attention in (FULL, MLA) or (not swa and layer.attention == SLIDING))


def kv_cache(spec: ModelSpec, s: Settings, context: int) -> tuple[int, int]:
    """(KV cache bytes incl. state, of which recurrent state bytes) for the whole batch.

    Memoised per spec (core/memo.py): it does not depend on the machine, and a fleet report asks for
    the same (spec, settings, context) once per machine and per fit search step.
    """
    return memo.per_object(spec, ("kv_cache", s, context), lambda: _kv_cache(spec, s, context))


def _kv_cache(spec: ModelSpec, s: Settings, context: int) -> tuple[int, int]:
    fmt = kv_format(s.kv_dtype, spec.dtype, s.resolved_engine)
    swa = runs_swa(spec, s)
    # sum over layers = sum over distinct layers x their count (exact integers; a decoder repeats a few kinds)
    kv = sum(n * layer_token_bytes(layer, fmt, s.resolved_engine) * layer_tokens_held(layer, s, context, swa=swa)
             for layer, n in distinct_layers(spec) if layer.has_kv)
    # vLLM: state x (1 + speculative blocks)
    copies = 1 + s.spec_tokens if s.resolved_engine.state_copies_per_spec_token and s.spec_tokens else 1
    state = s.batch * copies * sum(n * state_bytes_per_sequence(layer, s, spec.dtype, spec.state_dtype)
                                   for layer, n in distinct_layers(spec))
    return kv + state, state


def distinct_layers(spec: ModelSpec) -> tuple[tuple[LayerSpec, int], ...]:
    """Each distinct layer of `spec` with how many times it occurs, in first-seen order (once per spec).

    Why: the KV ledger is asked at many contexts per machine (the largest-context search); its sum over
    80 identical layers is the same integer as one layer's term times 80 (issue #33).
    """
    return memo.per_object(spec, "distinct_layers", lambda: tuple(Counter(spec.layers).items()))


# --- activations -------------------------------------------------------------

def prefill_chunk(s: Settings, context: int) -> int:
    """Tokens in the largest forward: the engine's chunk (llama.cpp n_ubatch 512, vLLM 2048, SGLang 4096,
    MLX 2048) or the whole prompt batch in transformers; --prefill-chunk wins."""
    if s.prefill_chunk:
        return s.prefill_chunk
    return s.resolved_engine.prefill_chunk(context, s.batch)


def activations(spec: ModelSpec, s: Settings, context: int) -> int:
    """Peak working memory of one forward (estimate).

    An engine with a model of its own says so (llama.cpp: its reserved compute buffer,
    engines/llamacpp.py). Others, per token: 3 x hidden (residual, normed, attention out) + q + k + v
    widths + 3 x FFN width (gate, up, activation; MoE: experts_per_token x expert width + shared),
    at 2 B, times the chunk; plus fp32 logits rows x vocab (vLLM/SGLang sample at least
    max_num_seqs rows; others batch x (K+1) verify rows).

    Memoised per spec like kv_cache (the fit search asks again at every context it revisits).
    """
    return memo.per_object(spec, ("activations", s, context), lambda: _activations(spec, s, context))


def _activations(spec: ModelSpec, s: Settings, context: int) -> int:
    e = s.resolved_engine
    chunk = prefill_chunk(s, context)
    if e.activation_bytes is not None:
        return e.activation_bytes(spec, context, s.batch, chunk, runs_swa(spec, s))
    widths = []
    for layer in spec.layers:
        attn = (layer.q_heads * layer.head_dim_k + layer.kv_heads * (layer.head_dim_k + layer.head_dim_v)
                if layer.has_kv else 0)
        if layer.ffn == "moe" and spec.moe:
            ffn = spec.moe.experts_per_token * spec.moe.expert_intermediate + spec.moe.shared_intermediate
        else:
            ffn = layer.ffn_width
        widths.append(attn + 3 * ffn)
    per_token = 3 * spec.hidden + max(widths, default=0)
    verify_rows = s.batch * (s.spec_tokens + 1)
    rows = max(e.min_logit_rows, verify_rows)
    return chunk * per_token * 2 + rows * spec.vocab * 4


# --- weights and the whole ledger --------------------------------------------

def _scheme_name(spec: ModelSpec, s: Settings) -> str | None:
    """The re-sizing applied: --weights-dtype, or the engine's float32 -> 16-bit load."""
    if s.weights_dtype:
        return s.weights_dtype
    if s.resolved_engine.sixteen_bit and spec.weights.dominant_dtype == "F32" and spec.source != "gguf":
        # vLLM/SGLang dtype="auto" run float32 checkpoints in 16-bit (vllm config _get_and_verify_dtype);
        # llama.cpp's converter writes f16/bf16 GGUFs; a GGUF stored in F32 runs as stored
        return "bf16"
    return None


def resident_tensors(spec: ModelSpec, s: Settings) -> tuple[TensorInfo, ...]:
    """The weight tensors as the engine holds them (memoised on the inventory per scheme)."""
    name = _scheme_name(spec, s)
    if name is None:
        return spec.weights.tensors
    key = ("tensors", name, s.group_size)
    memo = spec.weights.memo
    if key not in memo:
        memo[key] = quant.apply(spec.weights.tensors, quant.parse_scheme(name, group_size=s.group_size))
    return memo[key]


def resized_rows(spec: ModelSpec, s: Settings) -> tuple[tuple[int | None, str, str, int], ...]:
    """(layer, group, format, bytes) of each resident tensor under settings `s`, in inventory order (memoised).

    Why not resident_tensors: the sums (per group, per format, per layer) are all most callers need, and a
    one-tensor-in, one-tensor-out scheme (quant.ONE_TO_ONE_KINDS: the float and GGUF types of the engines'
    weights ladders) gives them without building a re-sized inventory (issue #33: a fleet report tries
    every rung on every target that does not fit as stored).
    """
    name = _scheme_name(spec, s)
    key = ("rows", name, s.group_size)
    memo = spec.weights.memo
    if key not in memo:
        scheme = quant.parse_scheme(name, group_size=s.group_size) if name is not None else None
        if scheme is not None and scheme.kind in quant.ONE_TO_ONE_KINDS and ("tensors", name, s.group_size) not in memo:
            memo[key] = tuple((t.layer, t.group, *quant.resized(t, scheme)) for t in spec.weights.tensors)
        else:
            memo[key] = tuple((t.layer, t.group, t.dtype, t.nbytes) for t in resident_tensors(spec, s))
    return memo[key]  # type: ignore[no-any-return]


def bytes_by_group(spec: ModelSpec, s: Settings) -> dict[str, int]:
    """Resident bytes per tensor group under settings `s` (memoised)."""
    name = _scheme_name(spec, s)
    if name is None:
        return dict(spec.weights.bytes_by_group)
    key = ("groups", name, s.group_size)
    memo = spec.weights.memo
    if key not in memo:
        out: dict[str, int] = {}
        for _, group, _, nbytes in resized_rows(spec, s):
            out[group] = out.get(group, 0) + nbytes
        memo[key] = out
    return dict(memo[key])


def weights(spec: ModelSpec, s: Settings) -> tuple[int, str, str]:
    """(resident weight bytes, dominant format, provenance) after an optional override."""
    inv = spec.weights
    name = _scheme_name(spec, s)
    if name is None:
        return inv.resident_bytes, inv.dominant_dtype, spec.provenance.get("weights", inv.source)
    # the whole answer once per (scheme, engine): plans ask ~100k times in a fleet report (issue #33)
    full = ("weights-full", name, s.group_size, s.engine if not s.weights_dtype else None)
    hit = inv.memo.get(full)
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    scheme = quant.parse_scheme(name, group_size=s.group_size)
    key = ("weights", name, s.group_size)
    if key not in inv.memo:
        by: dict[str, int] = {}
        for _, _, dtype, nbytes in resized_rows(spec, s):
            by[dtype] = by.get(dtype, 0) + nbytes
        inv.memo[key] = (sum(by.values()), max(by, key=by.__getitem__) if by else scheme.name)
    total, dominant = inv.memo[key]
    src = f"{spec.provenance.get('weights', inv.source)}, re-sized as {scheme.name}"
    if scheme.kind in ("int4", "fp8") and scheme.group_size:
        src += f" (group {scheme.group_size})"
    if not s.weights_dtype:
        src += f" ({s.engine} runs float32 checkpoints in 16-bit)"
    inv.memo[full] = (total, dominant, src)
    return total, dominant, src


def model_ledger(spec: ModelSpec, s: Settings, role: str = "target") -> ModelLedger:
    """One model's weights, KV cache (+ state) and activations under settings `s`."""
    context = s.draft_context if (role == "draft" and s.draft_context) else s.context
    w_bytes, w_fmt, w_src = weights(spec, s)
    kv_total, state = kv_cache(spec, s, context)
    kv_src = f"config shapes x {kv_format(s.kv_dtype, spec.dtype, s.resolved_engine)} ({s.engine} layout)"
    chunk = prefill_chunk(s, context)
    act_src = s.resolved_engine.activation_source or "assumed: estimate for a {chunk}-token forward ({engine})"
    act_src = act_src.format(chunk=chunk, engine=s.engine)
    prov = {"weights": w_src, "kv_cache": kv_src, "activations": act_src}
    if state:
        prov["state"] = "config shapes: fixed recurrent state per sequence"
    if spec.mtp:
        # which engine loads them: its MTP method (vLLM method mtp, SGLang NEXTN, llama.cpp draft-mtp; each cited
        # in its engine file); plain decoding leaves them out of weights_bytes, checkpoint_bytes keeps them
        how = s.resolved_engine.methods.get(MTP)
        prov["mtp"] = (f"{spec.mtp.source}: {spec.mtp.layers} MTP layer(s), resident only for MTP speculation ("
                       + (f"{s.engine}: {how})" if how else f"{s.engine} runs no MTP speculation: never resident)")
                       + ("" if spec.mtp.in_checkpoint else "; not in this checkpoint (an MLX export keeps mtp.* "
                                                            "apart): checkpoint_bytes leaves them out"))
    return ModelLedger(role=role, id=spec.id, params_total=spec.params_total, params_active=spec.params_active,
                       weights_bytes=w_bytes, kv_bytes_per_token=kv_per_token(spec, s), kv_cache_bytes=kv_total,
                       state_bytes=state, activation_bytes=activations(spec, s, context), context=context,
                       kv_dtype=kv_format(s.kv_dtype, spec.dtype, s.resolved_engine), weights_dtype=w_fmt, provenance=prov,
                       confidence=spec.confidence, assumptions=spec.assumptions,
                       checkpoint_bytes=spec.checkpoint_bytes, mtp_bytes=spec.mtp.nbytes if spec.mtp else 0,
                       mtp_layers=spec.mtp.layers if spec.mtp else 0)


def ledger(target: ModelSpec, s: Settings, draft: ModelSpec | None = None) -> Ledger:
    """Target (+ draft) on one device; runtime overhead counted once.

    Example:
        >>> from planner.sources import load_spec
        >>> ledger(load_spec("llama-3.1-8b"), Settings(context=8192)).models[0].kv_cache_bytes
        1073741824
    """
    models: Sequence[ModelLedger] = [model_ledger(target, s, "target")]
    if draft is not None:
        models = [*models, model_ledger(draft, s, "draft")]
    e = s.resolved_engine
    overhead = e.overhead_bytes if s.overhead_bytes is None else s.overhead_bytes
    src = e.overhead_source if s.overhead_bytes is None else "given (--overhead)"
    return Ledger(settings=s, models=tuple(models), overhead_bytes=overhead, overhead_source=src)
