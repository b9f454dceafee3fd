"""Synthetic model stacks with a ModelSpec's real shapes and dtype: what the probe times.

Why synthetic: whether speculation pays depends on how this machine runs K+1 tokens through the
target's shapes and one token through the draft's, not on the weights' values. So each layer is
built from its LayerSpec (GQA attention over a KV cache through scaled_dot_product_attention,
MLA over a latent cache, gated MLP, routed experts, recurrent mixers approximated) with random
weights from a fixed seed, and the KV cache is filled with random values (cost does not depend on
cache contents). `approximations(spec)` says, in words, what is not the real kernel.

Why plain classes over tensors and not nn.Module: torch is imported only inside functions
(STYLE.md rule 2), so this module imports without torch; the classes keep their tensors and call
torch.nn.functional, which is all a timed forward needs. The bench (planner/bench) reuses
`SyntheticLM` (forward, checkpoint, rollback) for its draft/verify loop.

Shapes are computed torch-free (`layer_shapes`, `model_bytes`) so memory is checked before
anything is allocated, with the very tables that the allocation then uses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import UsageError
from ..core.spec import CHUNKED, MLA, NONE, SLIDING, LayerSpec, ModelSpec

# Formats the probe can instantiate directly; anything else (fp8, int4, GGUF blocks) is probed as BF16.
TORCH_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2}
ROPE_THETA = 10000.0
RANDOM_BLOCK = 1 << 22  # elements drawn per tensor; larger tensors repeat this block


def numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# --- shapes (torch-free) -------------------------------------------------------------------

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
    w = {"wq": (nq * hk, h), "wk": (nkv * hk, h), "wv": (nkv * hv, h), "wo": (h, nq * hv)}
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
    from ..core import dtypes

    name = dtypes.canonical(requested) if requested and requested != "auto" else spec_dtype
    if name in TORCH_DTYPES:
        return name, None
    if requested and requested != "auto":
        raise UsageError(f"Cannot probe with dtype '{requested}': the synthetic probe instantiates "
                         f"{', '.join(TORCH_DTYPES)} only (expected one of f32, f16, bf16). Import a llama-bench "
                         f"run (--import) to measure quantised kernels.")
    return "BF16", (f"weights are {name} in the source; probed as BF16 (quantised kernels differ: "
                    f"import a llama-bench run with --import for them)")


def approximations(spec: ModelSpec, *, seed: int) -> tuple[str, ...]:
    """What the synthetic stack does not reproduce exactly, in words, for the profile's notes."""
    kinds = {lay.attention for lay in spec.layers}
    notes = [f"random weights N(0, 1/fan_in) from seed {seed} (tensors over {RANDOM_BLOCK} elements repeat one "
             f"random block); KV cache filled with random values (no prefill run: a forward's cost does not "
             f"depend on values)",
             "biases, q/k norms, attention output gates and sinks omitted (a small share of FLOPs and bytes)"]
    if SLIDING in kinds:
        notes.append("sliding-window layers attend the last min(context, window) tokens; "
                     "ring-buffer indexing not modelled")
    if CHUNKED in kinds:
        notes.append("chunked-attention layers attend the context-mod-chunk tokens of the current chunk")
    if MLA in kinds:
        q = mla_q_rank(spec)
        notes.append("MLA: latent cache (kv_lora_rank + rope_dim per token), weight-absorbed attention as in "
                     "vLLM/SGLang decode; q " + (f"through q_lora_rank {q} (from the weights)" if q
                                                 else "projected directly"))
    if any(lay.recurrent for lay in spec.layers):
        notes.append("recurrent mixers (linear attention / Mamba2) approximated: real projection, conv and "
                     "state sizes, per-token state update in eager ops (fused scan kernels not modelled); "
                     "rollback restores a state snapshot")
    if any(lay.ffn == "moe" for lay in spec.layers):
        notes.append("MoE: router + top-k over all experts (all resident), eager per-expert loop (fused MoE "
                     "kernels not modelled), experts as gated MLPs")
    return tuple(notes)


# --- torch stack ---------------------------------------------------------------------------

class _Init:
    """Allocation on one device and dtype, random values from one seeded generator."""

    def __init__(self, device: str, dtype: str, seed: int) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self.dtype = getattr(torch, TORCH_DTYPES[dtype])
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(seed)

    def fill(self, t: Any, std: float) -> Any:
        """t ~ N(0, std^2) in place. Above RANDOM_BLOCK elements one random block is repeated.

        Why repeat: a forward's cost does not depend on the values, and drawing every element
        (about 0.1 G elements/s for bf16 on a CPU) would spend most of a CPU budget on init.
        """
        flat = t.view(-1)
        if flat.numel() <= RANDOM_BLOCK:
            return flat.normal_(0.0, std, generator=self.gen).view(t.shape)
        block = flat[:RANDOM_BLOCK].normal_(0.0, std, generator=self.gen)
        reps = flat.numel() // RANDOM_BLOCK
        flat[RANDOM_BLOCK:reps * RANDOM_BLOCK].view(reps - 1, RANDOM_BLOCK).copy_(block.expand(reps - 1, -1))
        tail = flat.numel() - reps * RANDOM_BLOCK
        if tail:
            flat[reps * RANDOM_BLOCK:].copy_(block[:tail])
        return t

    def weight(self, shape: tuple[int, ...], fan_in: int | None = None) -> Any:
        # N(0, 1/fan_in): activations stay O(1), no inf/NaN or denormals to distort timings.
        t = self.torch.empty(shape, dtype=self.dtype, device=self.device)
        return self.fill(t, (fan_in or shape[-1]) ** -0.5)

    def ones(self, shape: tuple[int, ...]) -> Any:
        return self.torch.ones(shape, dtype=self.dtype, device=self.device)

    def zeros(self, shape: tuple[int, ...]) -> Any:
        return self.torch.zeros(shape, dtype=self.dtype, device=self.device)

    def random_(self, t: Any) -> Any:
        """Random cache contents in place (t may be a non-contiguous slice of a cache)."""
        if t.is_contiguous():
            return self.fill(t, 1.0)
        return t.copy_(self.fill(self.torch.empty(t.shape, dtype=self.dtype, device=self.device), 1.0))


def _rms_norm(x: Any, w: Any) -> Any:
    import torch
    import torch.nn.functional as F

    if hasattr(F, "rms_norm"):  # torch >= 2.4
        return F.rms_norm(x, (x.shape[-1],), w, 1e-6)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _rope(x: Any, pos0: int, theta: float = ROPE_THETA) -> Any:
    """Rotary embedding (rotate-half) on the last dim of x [..., n, d] for positions pos0..pos0+n-1."""
    import torch

    n, d = x.shape[-2], x.shape[-1]
    half = d // 2
    inv = theta ** (-torch.arange(0, half, device=x.device, dtype=torch.float32) / max(half, 1))
    ang = torch.arange(pos0, pos0 + n, device=x.device, dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:2 * half]
    rot = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    return torch.cat([rot, x[..., 2 * half:]], dim=-1) if d % 2 else rot


def _attend(q: Any, k: Any, v: Any, *, window: int | None, scale: float | None = None) -> Any:
    """SDPA of q [1, hq, n, d] over k/v [1, hkv, L, d(v)]: causal among the n new tokens, GQA, window."""
    import torch
    import torch.nn.functional as F

    n, length = q.shape[-2], k.shape[-2]
    mask = None
    if n > 1 or (window and length > window):
        j = torch.arange(length, device=q.device)[None, :]
        i = (length - n + torch.arange(n, device=q.device))[:, None]
        mask = j <= i
        if window:
            mask = mask & (j > i - window)
    if q.shape[1] != k.shape[1]:
        try:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale, enable_gqa=True)
        except TypeError:  # torch < 2.5: no enable_gqa
            rep = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)


class AttentionMixer:
    """GQA attention over a preallocated KV cache [kv_heads, capacity, head_dim] (full, sliding, chunked)."""

    def __init__(self, init: _Init, layer: LayerSpec, shapes: Shapes, fill: int, hidden: int) -> None:
        w = shapes.weights
        self.nq, self.nkv = layer.q_heads, layer.kv_heads
        self.hk, self.hv = layer.head_dim_k, layer.head_dim_v or layer.head_dim_k
        self.wq = init.weight(w["attn.wq"], hidden)
        self.wk = init.weight(w["attn.wk"], hidden)
        self.wv = init.weight(w["attn.wv"], hidden)
        self.wo = init.weight(w["attn.wo"])
        self.k = init.zeros(shapes.cache["attn.k"])
        self.v = init.zeros(shapes.cache["attn.v"])
        for h in range(self.nkv):  # [h, :fill] is contiguous: filled in place
            init.random_(self.k[h, :fill])
            init.random_(self.v[h, :fill])
        self.window = layer.window if layer.attention == SLIDING else None
        self.length = fill

    def forward(self, x: Any, pos: int) -> Any:
        n = x.shape[0]
        if self.length + n > self.k.shape[1]:
            raise UsageError(f"Cannot append {n} tokens to a synthetic KV cache holding {self.length} of "
                             f"{self.k.shape[1]} (expected at most {self.k.shape[1] - self.length}). "
                             f"Build the model with a larger `extra`.")
        q = (x @ self.wq.T).view(n, self.nq, self.hk).transpose(0, 1)  # [hq, n, hk]
        k = (x @ self.wk.T).view(n, self.nkv, self.hk).transpose(0, 1)
        v = (x @ self.wv.T).view(n, self.nkv, self.hv).transpose(0, 1)
        q, k = _rope(q, pos), _rope(k, pos)
        end = self.length + n
        self.k[:, self.length:end] = k
        self.v[:, self.length:end] = v
        self.length = end
        o = _attend(q[None], self.k[None, :, :end], self.v[None, :, :end], window=self.window)
        return o[0].transpose(0, 1).reshape(n, self.nq * self.hv) @ self.wo.T

    def rollback(self, drop: int) -> None:
        self.length -= drop


class MLAMixer:
    """Multi-head latent attention: caches one latent (kv_lora_rank + rope_dim) per token.

    Weight-absorbed form (vLLM/SGLang decode): q_nope is mapped into latent space by W_UK, attention
    runs as one shared KV head over [latent, k_rope], and the latent output goes through W_UV.
    """

    def __init__(self, init: _Init, layer: LayerSpec, shapes: Shapes, fill: int, hidden: int) -> None:
        w = shapes.weights
        self.nh, self.rope, self.lat = layer.q_heads, layer.rope_dim, layer.kv_lora_rank
        self.nope, self.hv = layer.head_dim_k - layer.rope_dim, layer.head_dim_v
        self.wq_a = init.weight(w["attn.wq_a"], hidden) if "attn.wq_a" in w else None
        self.wq_b = init.weight(w["attn.wq_b"]) if "attn.wq_b" in w else None
        self.wq = init.weight(w["attn.wq"], hidden) if "attn.wq" in w else None
        self.wkv_a = init.weight(w["attn.wkv_a"], hidden)
        self.w_uk = init.weight(w["attn.w_uk"], self.nope)
        self.w_uv = init.weight(w["attn.w_uv"], self.lat)
        self.wo = init.weight(w["attn.wo"])
        self.latent = init.zeros(shapes.cache["attn.latent"])
        init.random_(self.latent[:fill])
        self.length = fill

    def forward(self, x: Any, pos: int) -> Any:
        import torch

        n = x.shape[0]
        q = (x @ self.wq.T) if self.wq is not None else (x @ self.wq_a.T) @ self.wq_b.T
        q = q.view(n, self.nh, self.nope + self.rope).transpose(0, 1)  # [nh, n, nope+rope]
        q_nope, q_rope = q[..., :self.nope], _rope(q[..., self.nope:], pos)
        kv = x @ self.wkv_a.T  # [n, lat + rope]
        k_rope = _rope(kv[None, :, self.lat:], pos)[0]
        end = self.length + n
        self.latent[self.length:end, :self.lat] = kv[:, :self.lat]
        self.latent[self.length:end, self.lat:] = k_rope
        self.length = end
        q_lat = torch.matmul(q_nope, self.w_uk)  # [nh, n, nope] @ [nh, nope, lat] -> [nh, n, lat]
        qq = torch.cat([q_lat, q_rope], dim=-1)[None]  # [1, nh, n, lat+rope]
        kk = self.latent[None, None, :end]  # one shared head
        vv = self.latent[None, None, :end, :self.lat]
        o = _attend(qq, kk, vv, window=None, scale=(self.nope + self.rope) ** -0.5)[0]  # [nh, n, lat]
        o = torch.matmul(o, self.w_uv)  # [nh, n, hv]
        return o.transpose(0, 1).reshape(n, self.nh * self.hv) @ self.wo.T

    def rollback(self, drop: int) -> None:
        self.length -= drop


class RecurrentMixer:
    """Linear-attention / Mamba2 mixer, approximated with the real widths and state size.

    in_proj -> [conv channels | gate z | dt]; causal depthwise conv over the conv state; per token
    S = decay * S + k v^T and y = q S on a [heads, dk, dv] state; gated norm; out_proj.
    """

    def __init__(self, init: _Init, layer: LayerSpec, shapes: Shapes, hidden: int) -> None:
        w, c = shapes.weights, shapes.cache
        self.heads, self.dk, self.dv = recurrent_dims(layer)
        self.conv_dim, self.kern = w["rec.conv"]
        self.in_proj = init.weight(w["rec.in_proj"], hidden)
        self.conv = init.weight(w["rec.conv"], self.kern)
        self.out_proj = init.weight(w["rec.out_proj"])
        self.norm = init.ones(w["rec.norm"])
        self.state, self.conv_state = init.zeros(c["rec.state"]), init.zeros(c["rec.conv_state"])
        init.random_(self.state).mul_(0.1)
        init.random_(self.conv_state)
        self.state_snap, self.conv_snap = init.zeros(c["rec.state_snap"]), init.zeros(c["rec.conv_state_snap"])
        rest = self.conv_dim - self.heads * self.dv
        self.groups = max(1, (rest // 2) // self.dk)
        if self.heads % self.groups:
            self.groups = 1

    def _qk(self, xc: Any, off: int) -> Any:
        import torch.nn.functional as F

        width = self.groups * self.dk
        part = xc[:, off:off + width]
        if part.shape[1] < width:
            part = F.pad(part, (0, width - part.shape[1]))
        g = part.view(-1, self.groups, self.dk)
        return g.repeat_interleave(self.heads // self.groups, dim=1)  # [n, heads, dk]

    def forward(self, x: Any, pos: int) -> Any:
        import torch
        import torch.nn.functional as F

        n = x.shape[0]
        proj = x @ self.in_proj.T
        xin, z, dt = proj.split([self.conv_dim, self.heads * self.dv, self.heads], dim=-1)
        seq = torch.cat([self.conv_state.T, xin], dim=0)  # [kern-1+n, conv]
        win = seq.unfold(0, self.kern, 1)  # [n, conv, kern]
        xc = F.silu((win * self.conv).sum(-1))  # depthwise causal conv
        self.conv_state.copy_(seq[n:].T)
        v = xc[:, :self.heads * self.dv].view(n, self.heads, self.dv)
        q, k = self._qk(xc, self.heads * self.dv), self._qk(xc, self.heads * self.dv + self.groups * self.dk)
        decay = torch.sigmoid(dt)  # [n, heads]
        ys = []
        for t in range(n):  # per-token state update: what a verify of n tokens must do for a recurrent layer
            self.state.mul_(decay[t][:, None, None]).add_(k[t][:, :, None] * v[t][:, None, :])
            ys.append(torch.einsum("hk,hkv->hv", q[t], self.state))
        y = torch.stack(ys).reshape(n, self.heads * self.dv)
        y = _rms_norm(y * F.silu(z), self.norm)
        return y @ self.out_proj.T

    def checkpoint(self) -> None:
        self.state_snap.copy_(self.state)
        self.conv_snap.copy_(self.conv_state)

    def rollback(self, drop: int) -> None:
        if drop:
            self.state.copy_(self.state_snap)
            self.conv_state.copy_(self.conv_snap)


class FFN:
    """Gated MLP (SiLU), or routed experts: router, top-k, per-expert gated MLPs, shared experts."""

    def __init__(self, init: _Init, layer: LayerSpec, spec: ModelSpec, shapes: Shapes) -> None:
        w = shapes.weights
        self.kind = "none" if not any(k.startswith("ffn.") for k in w) else ("moe" if "ffn.router" in w else "dense")
        h = spec.hidden
        if self.kind == "dense":
            self.gate_up, self.down = init.weight(w["ffn.gate_up"], h), init.weight(w["ffn.down"])
        elif self.kind == "moe":
            self.topk = spec.moe.experts_per_token
            self.router = init.weight(w["ffn.router"], h)
            self.e_gate_up = init.weight(w["ffn.experts_gate_up"], h)
            self.e_down = init.weight(w["ffn.experts_down"])
            self.shared = None
            if "ffn.shared_gate_up" in w:
                self.shared = (init.weight(w["ffn.shared_gate_up"], h), init.weight(w["ffn.shared_down"]))

    @staticmethod
    def _mlp(x: Any, gate_up: Any, down: Any) -> Any:
        import torch.nn.functional as F

        g, u = (x @ gate_up.T).chunk(2, dim=-1)
        return (F.silu(g) * u) @ down.T

    def forward(self, x: Any) -> Any:
        if self.kind == "dense":
            return self._mlp(x, self.gate_up, self.down)
        if self.kind == "none":
            return None
        import torch

        probs = (x @ self.router.T).float().softmax(-1)
        w, idx = torch.topk(probs, self.topk, dim=-1)  # [n, k]
        w = (w / w.sum(-1, keepdim=True)).to(x.dtype)
        flat = idx.reshape(-1)
        order = flat.argsort()
        counts = torch.bincount(flat, minlength=self.router.shape[0]).tolist()  # one host sync, like eager MoE
        out = torch.zeros_like(x)
        start = 0
        for e, c in enumerate(counts):
            if not c:
                continue
            sel = order[start:start + c]
            start += c
            tok = sel // self.topk
            y = self._mlp(x[tok], self.e_gate_up[e], self.e_down[e])
            out.index_add_(0, tok, y * w.reshape(-1)[sel, None])
        if self.shared is not None:
            out = out + self._mlp(x, *self.shared)
        return out


class Layer:
    """One decoder layer: pre-norm mixer(s) (attention and/or recurrent) + residual, pre-norm FFN + residual."""

    def __init__(self, init: _Init, layer: LayerSpec, spec: ModelSpec, *, context: int, extra: int,
                 q_rank: int) -> None:
        shapes = layer_shapes(layer, spec, context=context, extra=extra, q_rank=q_rank)
        fill = cache_fill(layer, context)
        self.norm1, self.norm2 = init.ones((spec.hidden,)), init.ones((spec.hidden,))
        self.attn: AttentionMixer | MLAMixer | None = None
        if layer.attention == MLA:
            self.attn = MLAMixer(init, layer, shapes, fill, spec.hidden)
        elif layer.attention != NONE:
            self.attn = AttentionMixer(init, layer, shapes, fill, spec.hidden)
        self.rec = RecurrentMixer(init, layer, shapes, spec.hidden) if layer.recurrent else None
        self.ffn = FFN(init, layer, spec, shapes)

    def forward(self, x: Any, pos: int) -> Any:
        h = _rms_norm(x, self.norm1)
        if self.attn is not None or self.rec is not None:
            mix = self.attn.forward(h, pos) if self.attn is not None else None
            if self.rec is not None:
                r = self.rec.forward(h, pos)
                mix = r if mix is None else mix + r  # parallel hybrid (Falcon-H1): both mixers on one input
            x = x + mix
        f = self.ffn.forward(_rms_norm(x, self.norm2))
        return x if f is None else x + f


class SyntheticLM:
    """A decoder stack with `spec`'s shapes, its caches already holding `context` tokens.

    Args:
        spec: the model's shapes.
        layers: which LayerSpecs to instantiate (default: all of spec's; [] = embedding/head only).
        device: torch device string.
        dtype: F32, F16 or BF16.
        context: tokens already in every cache (random K/V, random recurrent state).
        extra: room for tokens appended after the context (K+1 for a verify, more for a bench run).
        seed: generator seed for weights and cache contents.
        share_shell: another SyntheticLM of the same spec whose embedding/norm/head to reuse.

    `forward(tokens)` appends len(tokens) tokens and returns their logits; `checkpoint()` then
    `rollback(n)` / `rollback_to(pos)` undo appended tokens (KV: the length pointer; recurrent:
    the state snapshot). forward/rollback(n)/length() is the bench's Stepper protocol.
    """

    def __init__(self, spec: ModelSpec, *, layers: Sequence[LayerSpec] | None = None, device: str = "cpu",
                 dtype: str = "BF16", context: int, extra: int, seed: int = 0,
                 share_shell: SyntheticLM | None = None) -> None:
        import torch

        self.torch = torch
        init = _Init(device, dtype, seed)
        self.device, self.vocab = device, spec.vocab
        if share_shell is not None:  # sample stacks of one model reuse one embedding/head (memory)
            self.embed, self.norm, self.head = share_shell.embed, share_shell.norm, share_shell.head
        else:
            shell = shell_shapes(spec)
            self.embed = init.weight(shell["embed"], 1)
            self.norm = init.ones(shell["norm"])
            self.head = init.weight(shell["head"], spec.hidden) if "head" in shell else None
        q_rank = mla_q_rank(spec)
        chosen = spec.layers if layers is None else layers
        self.layers = [Layer(init, lay, spec, context=context, extra=extra, q_rank=q_rank) for lay in chosen]
        self.base = self.pos = context
        self.extra = extra

    def forward(self, tokens: Any, *, all_logits: bool = True) -> Any:
        """Append tokens [n] (tensor or list of ids) at the current position; logits [n, vocab] (or [1, vocab])."""
        if not isinstance(tokens, self.torch.Tensor):
            tokens = self.torch.tensor(list(tokens), dtype=self.torch.long, device=self.device)
        with self.torch.inference_mode():
            x = self.embed[tokens]
            for layer in self.layers:
                x = layer.forward(x, self.pos)
            self.pos += tokens.shape[0]
            x = _rms_norm(x if all_logits else x[-1:], self.norm)
            head = self.head if self.head is not None else self.embed
            return x @ head.T

    def tensors(self) -> list[Any]:
        """Every tensor this stack holds (weights, caches, snapshots), each once."""
        seen: dict[int, Any] = {}
        objs: list[Any] = [self]
        for layer in self.layers:
            objs += [layer, layer.attn, layer.rec, layer.ffn]
        for obj in objs:
            for v in vars(obj).values() if obj is not None else ():
                for t in v if isinstance(v, tuple) else (v,):
                    if isinstance(t, self.torch.Tensor):
                        seen.setdefault(id(t), t)
        return list(seen.values())

    def nbytes(self) -> int:
        """Bytes allocated by this stack (what `model_bytes` predicts before allocating)."""
        return sum(t.numel() * t.element_size() for t in self.tensors())

    def checkpoint(self) -> None:
        """Snapshot recurrent states so a rollback can undo the next tokens (KV needs nothing)."""
        for layer in self.layers:
            if layer.rec is not None:
                layer.rec.checkpoint()

    def length(self) -> int:
        """Tokens in the cache (context + appended)."""
        return self.pos

    def rollback(self, n: int) -> None:
        """Drop the last n appended tokens (bench Stepper protocol); see rollback_to."""
        self.rollback_to(self.pos - n)

    def rollback_to(self, pos: int) -> None:
        """Undo tokens appended after `pos` (>= the prefilled context).

        Attention caches move their length pointer back (exact for any pos). Recurrent layers
        restore the state saved by the last `checkpoint()`, so they are exact only when pos is
        the position at that checkpoint; a caller keeping some tokens re-feeds them.
        """
        if not self.base <= pos <= self.pos:
            raise UsageError(f"Cannot roll the synthetic cache back to position {pos} (expected "
                             f"{self.base}..{self.pos}).")
        drop = self.pos - pos
        with self.torch.inference_mode():
            for layer in self.layers:
                if layer.attn is not None:
                    layer.attn.rollback(drop)
                if layer.rec is not None:
                    layer.rec.rollback(drop)
        self.pos = pos

    def tokens(self, n: int, seed: int = 0) -> Any:
        """n token ids, deterministic, on the model's device."""
        g = self.torch.Generator(device="cpu")
        g.manual_seed(seed)
        return self.torch.randint(0, self.vocab, (n,), generator=g).to(self.device)
