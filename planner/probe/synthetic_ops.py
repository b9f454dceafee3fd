"""Tensor primitives of the synthetic stack: seeded allocation, RMSNorm, rotary embedding, masked SDPA.

Why separate: every mixer of synthetic_layers.py allocates through one seeded `Init` (fixed
seed, N(0, 1/fan_in) weights, random cache contents) and runs the same three ops, so the layers
read as their own maths. torch is imported only inside functions (docs/architecture.md "Rules the code keeps").
"""

from __future__ import annotations

from typing import Any

from .synthetic_shapes import TORCH_DTYPES

ROPE_THETA = 10000.0
RANDOM_BLOCK = 1 << 22  # elements drawn per tensor; larger tensors repeat this block


class Init:
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


def rms_norm(x: Any, w: Any) -> Any:
    import torch
    import torch.nn.functional as F

    if hasattr(F, "rms_norm"):  # torch >= 2.4
        return F.rms_norm(x, (x.shape[-1],), w, 1e-6)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def rope(x: Any, pos0: int, theta: float = ROPE_THETA) -> Any:
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


def attend(q: Any, k: Any, v: Any, *, window: int | None, scale: float | None = None) -> Any:
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
