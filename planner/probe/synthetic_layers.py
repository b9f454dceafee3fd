"""The synthetic decoder layers: GQA and MLA attention, recurrent mixers, gated MLP / routed experts.

Why separate: each layer kind is built from its LayerSpec and the shape tables of
synthetic_shapes.py, with the real widths and cache sizes (GQA attention over a KV cache
through scaled_dot_product_attention, MLA over a latent cache, gated MLP, routed experts,
recurrent mixers approximated); synthetic.py stacks them into a model. Plain classes over
tensors, not nn.Module, so importing this module does not import torch.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import UsageError
from ..core.spec import MLA, NONE, SLIDING, LayerSpec, ModelSpec
from .synthetic_ops import Init, attend, rms_norm, rope
from .synthetic_shapes import Shapes, cache_fill, layer_shapes, recurrent_dims


class AttentionMixer:
    """GQA attention over a preallocated KV cache [kv_heads, capacity, head_dim] (full, sliding, chunked)."""

    def __init__(self, init: Init, layer: LayerSpec, shapes: Shapes, fill: int, hidden: int) -> None:
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
        q, k = rope(q, pos), rope(k, pos)
        end = self.length + n
        self.k[:, self.length:end] = k
        self.v[:, self.length:end] = v
        self.length = end
        o = attend(q[None], self.k[None, :, :end], self.v[None, :, :end], window=self.window)
        return o[0].transpose(0, 1).reshape(n, self.nq * self.hv) @ self.wo.T

    def rollback(self, drop: int) -> None:
        self.length -= drop


class MLAMixer:
    """Multi-head latent attention: caches one latent (kv_lora_rank + rope_dim) per token.

    Weight-absorbed form (vLLM/SGLang decode): q_nope is mapped into latent space by W_UK, attention
    runs as one shared KV head over [latent, k_rope], and the latent output goes through W_UV.
    """

    def __init__(self, init: Init, layer: LayerSpec, shapes: Shapes, fill: int, hidden: int) -> None:
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
        if self.wq is not None:
            q = x @ self.wq.T
        elif self.wq_a is not None and self.wq_b is not None:  # q through its low-rank pair (q_lora_rank)
            q = (x @ self.wq_a.T) @ self.wq_b.T
        else:
            raise UsageError("Cannot run a synthetic MLA layer with neither attn.wq nor attn.wq_a + attn.wq_b.")
        q = q.view(n, self.nh, self.nope + self.rope).transpose(0, 1)  # [nh, n, nope+rope]
        q_nope, q_rope = q[..., :self.nope], rope(q[..., self.nope:], pos)
        kv = x @ self.wkv_a.T  # [n, lat + rope]
        k_rope = rope(kv[None, :, self.lat:], pos)[0]
        end = self.length + n
        self.latent[self.length:end, :self.lat] = kv[:, :self.lat]
        self.latent[self.length:end, self.lat:] = k_rope
        self.length = end
        q_lat = torch.matmul(q_nope, self.w_uk)  # [nh, n, nope] @ [nh, nope, lat] -> [nh, n, lat]
        qq = torch.cat([q_lat, q_rope], dim=-1)[None]  # [1, nh, n, lat+rope]
        kk = self.latent[None, None, :end]  # one shared head
        vv = self.latent[None, None, :end, :self.lat]
        o = attend(qq, kk, vv, window=None, scale=(self.nope + self.rope) ** -0.5)[0]  # [nh, n, lat]
        o = torch.matmul(o, self.w_uv)  # [nh, n, hv]
        return o.transpose(0, 1).reshape(n, self.nh * self.hv) @ self.wo.T

    def rollback(self, drop: int) -> None:
        self.length -= drop


class RecurrentMixer:
    """Linear-attention / Mamba2 mixer, approximated with the real widths and state size.

    in_proj -> [conv channels | gate z | dt]; causal depthwise conv over the conv state; per token
    S = decay * S + k v^T and y = q S on a [heads, dk, dv] state; gated norm; out_proj.
    """

    def __init__(self, init: Init, layer: LayerSpec, shapes: Shapes, hidden: int) -> None:
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
        y = rms_norm(y * F.silu(z), self.norm)
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

    def __init__(self, init: Init, layer: LayerSpec, spec: ModelSpec, shapes: Shapes) -> None:
        w = shapes.weights
        self.kind = "none" if not any(k.startswith("ffn.") for k in w) else ("moe" if "ffn.router" in w else "dense")
        h = spec.hidden
        if self.kind == "dense":
            self.gate_up, self.down = init.weight(w["ffn.gate_up"], h), init.weight(w["ffn.down"])
        elif self.kind == "moe":
            if spec.moe is None:
                raise UsageError(f"Cannot build a synthetic MoE layer for '{spec.id}': the spec has no experts.")
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

    def __init__(self, init: Init, layer: LayerSpec, spec: ModelSpec, *, context: int, extra: int,
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
        h = rms_norm(x, self.norm1)
        if self.attn is not None or self.rec is not None:
            mix = self.attn.forward(h, pos) if self.attn is not None else None
            if self.rec is not None:
                r = self.rec.forward(h, pos)
                mix = r if mix is None else mix + r  # parallel hybrid (Falcon-H1): both mixers on one input
            x = x + mix
        f = self.ffn.forward(rms_norm(x, self.norm2))
        return x if f is None else x + f
