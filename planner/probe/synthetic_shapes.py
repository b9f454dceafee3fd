"""Torch-free sizing of the synthetic probe: the dtype it instantiates, every shape it allocates, the bytes.

Why separate from the torch stack: memory is checked before anything is allocated, so the probe
(runner.py, curves.py) needs each layer's weight and cache shapes and the total bytes without
importing torch; the stack (synthetic_layers.py, synthetic.py) then allocates from these very
tables, so the check and the allocation cannot disagree (`SyntheticLM.nbytes() == model_bytes`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..core import dtypes
from ..core.errors import UsageError
from ..core.spec import CHUNKED, MLA, NONE, SLIDING, LayerSpec, ModelSpec

# Formats the probe can instantiate directly; anything else (fp8, int4, GGUF blocks) is probed as BF16.
TORCH_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2}


def numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def mla_q_rank(spec: ModelSpec) -> int:
    """q_lora_rank of an MLA model, read from its `q_a_proj` weight ([rank, hidden]); 0 = direct q_proj."""
    for t in spec.weights.tensors:
        if t.name.endswith("q_a_proj.weight") and len(t.shape) == 2:
            return t.shape[0]
    return 0


def recurrent_dims(layer: LayerSpec) -> tuple[int, int, int]:
    """(heads, dk, dv) of a recurrent state of `recurrent_state_elems` elements.

    Per head the state is a [dk, dv] matrix: Mamba2 [d_state, head_dim], Gated DeltaNet
    [k_dim, v_dim]. LayerSpec keeps only the product, so dv is the largest divisor <= sqrt
    (Mamba2 128 x 64 -> dk 128, dv 64 = head_dim; DeltaNet 128 x 128 -> 128, 128).
    """
    heads = max(layer.q_heads, 1)
    per_head = max(layer.recurrent_state_elems // heads, 1)
    dv = max(d for d in range(1, math.isqrt(per_head) + 1) if per_head % d == 0)
    return heads, per_head // dv, dv


def cache_fill(layer: LayerSpec, context: int) -> int:
    """Tokens a layer's cache holds once `context` tokens are in: full, window or chunk share."""
    if layer.attention == SLIDING and layer.window:
        return min(context, layer.window)
    if layer.attention == CHUNKED and layer.window:
        return context % layer.window
    return context


@dataclass(frozen=True)
class Shapes:
    """Weight shapes (name -> shape) and cache shapes of one layer or of the embedding/head shell."""

    weights: dict[str, tuple[int, ...]]
    cache: dict[str, tuple[int, ...]]


def _attention_shapes(layer: LayerSpec, h: int, cap: int) -> Shapes:
    nq, nkv, hk, hv = layer.q_heads, layer.kv_heads, layer.head_dim_k, layer.head_dim_v or layer.head_dim_k
    w: dict[str, tuple[int, ...]] = {"wq": (nq * hk, h), "wk": (nkv * hk, h), "wv": (nkv * hv, h),
                                     "wo": (h, nq * hv)}
    return Shapes(w, {"k": (nkv, cap, hk), "v": (nkv, cap, hv)})


def _mla_shapes(layer: LayerSpec, h: int, cap: int, q_rank: int) -> Shapes:
    nh, rope, lat = layer.q_heads, layer.rope_dim, layer.kv_lora_rank
    nope, hv = layer.head_dim_k - rope, layer.head_dim_v
    w: dict[str, tuple[int, ...]] = {}
    if q_rank:
        w.update(wq_a=(q_rank, h), wq_b=(nh * (nope + rope), q_rank))
    else:
        w["wq"] = (nh * (nope + rope), h)
    # kv_a: hidden -> latent + shared rope key; kv_b split into W_UK [nh, nope, lat], W_UV [nh, lat, hv]
    w.update(wkv_a=(lat + rope, h), w_uk=(nh, nope, lat), w_uv=(nh, lat, hv), wo=(h, nh * hv))
    return Shapes(w, {"latent": (cap, lat + rope)})


def _recurrent_shapes(layer: LayerSpec, h: int) -> Shapes:
    heads, dk, dv = recurrent_dims(layer)
    conv = max(layer.conv_dim, heads * dv)
    kern = max(layer.conv_kernel, 1)
    w = {"in_proj": (conv + heads * dv + heads, h), "conv": (conv, kern), "norm": (heads * dv,),
         "out_proj": (h, heads * dv)}
    state = {"state": (heads, dk, dv), "conv_state": (conv, kern - 1)}
    # snapshots for rollback (what an engine keeps to undo rejected tokens)
    cache = {**state, **{f"{k}_snap": s for k, s in state.items()}}
    return Shapes(w, cache)


def _ffn_shapes(layer: LayerSpec, spec: ModelSpec) -> dict[str, tuple[int, ...]]:
    h, i = spec.hidden, layer.ffn_width
    if layer.ffn == "none" or i <= 0:
        return {}
    if layer.ffn == "moe" and spec.moe is not None:
        e = spec.moe.experts
        w = {"router": (e, h), "experts_gate_up": (e, 2 * i, h), "experts_down": (e, h, i)}
        if spec.moe.shared_intermediate:
            s = spec.moe.shared_intermediate
            w.update(shared_gate_up=(2 * s, h), shared_down=(h, s))
        return w
    return {"gate_up": (2 * i, h), "down": (h, i)}


def layer_shapes(layer: LayerSpec, spec: ModelSpec, *, context: int, extra: int, q_rank: int = 0) -> Shapes:
    """Every tensor one synthetic layer allocates: its weights and its cache at `context` + `extra` tokens."""
    h = spec.hidden
    cap = cache_fill(layer, context) + extra
    weights: dict[str, tuple[int, ...]] = {"norm1": (h,), "norm2": (h,)}
    cache: dict[str, tuple[int, ...]] = {}
    if layer.attention == MLA:
        s = _mla_shapes(layer, h, cap, q_rank)
    elif layer.attention != NONE:
        s = _attention_shapes(layer, h, cap)
    else:
        s = Shapes({}, {})
    weights.update({f"attn.{k}": v for k, v in s.weights.items()})
    cache.update({f"attn.{k}": v for k, v in s.cache.items()})
    if layer.recurrent:
        r = _recurrent_shapes(layer, h)
        weights.update({f"rec.{k}": v for k, v in r.weights.items()})
        cache.update({f"rec.{k}": v for k, v in r.cache.items()})
    weights.update({f"ffn.{k}": v for k, v in _ffn_shapes(layer, spec).items()})
    return Shapes(weights, cache)


def shell_shapes(spec: ModelSpec) -> dict[str, tuple[int, ...]]:
    """Embedding, final norm and (untied) lm_head."""
    w = {"embed": (spec.vocab, spec.hidden), "norm": (spec.hidden,)}
    if not spec.tied_embeddings:
        w["head"] = (spec.vocab, spec.hidden)
    return w


def model_bytes(spec: ModelSpec, layers: Sequence[LayerSpec], *, context: int, extra: int,
                dtype_bytes: int) -> int:
    """Bytes the synthetic model allocates: shell + layers' weights + caches (all in the probe dtype)."""
    q_rank = mla_q_rank(spec)
    total = sum(numel(s) for s in shell_shapes(spec).values())
    for layer in layers:
        s = layer_shapes(layer, spec, context=context, extra=extra, q_rank=q_rank)
        total += sum(numel(x) for x in s.weights.values()) + sum(numel(x) for x in s.cache.values())
    return total * dtype_bytes


def activation_bytes(spec: ModelSpec, n: int, context: int) -> int:
    """Peak transient bytes of one forward of n tokens (an over-estimate, fp32 everywhere).

    Hidden states and FFN intermediates ~ n * (8*hidden + 4*ffn_width) * 4 B, fp32 logits n * vocab * 4 B,
    and attention scores of the math kernel q_heads * n * context * 4 B.
    """
    widest = max([lay.ffn_width for lay in spec.layers] + [spec.intermediate, 1])
    heads = max([lay.q_heads for lay in spec.layers] + [1])
    per_tok = 8 * spec.hidden + 4 * widest + spec.vocab
    return 4 * n * per_tok + 4 * heads * n * (context + n)


def layer_groups(layers: Sequence[LayerSpec]) -> list[tuple[LayerSpec, int]]:
    """Distinct layer kinds (equal LayerSpecs) and how many layers each has, in first-seen order."""
    counts: dict[LayerSpec, int] = {}
    for layer in layers:
        counts[layer] = counts.get(layer, 0) + 1
    return list(counts.items())


def probe_dtype(spec_dtype: str, requested: str | None) -> tuple[str, str | None]:
    """(format to instantiate, note): the requested dtype, else the model's, BF16 for formats torch cannot run."""
    name = dtypes.canonical(requested) if requested and requested != "auto" else spec_dtype
    if name in TORCH_DTYPES:
        return name, None
    if requested and requested != "auto":
        raise UsageError(f"Cannot probe with dtype '{requested}': the synthetic probe instantiates "
                         f"{', '.join(TORCH_DTYPES)} only (expected one of f32, f16, bf16). Import a llama-bench "
                         f"run (--import) to measure quantised kernels.")
    return "BF16", (f"weights are {name} in the source; probed as BF16 (quantised kernels differ: "
                    f"import a llama-bench run with --import for them)")
