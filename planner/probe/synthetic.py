"""The synthetic model: a decoder stack with a ModelSpec's real shapes and dtype, what the probe times.

Why synthetic: whether speculation pays depends on how this machine runs K+1 tokens through the
target's shapes and one token through the draft's, not on the weights' values. So `SyntheticLM`
builds one synthetic layer per LayerSpec (synthetic_layers.py) with random weights from a fixed
seed, and fills the caches with random values (cost does not depend on cache contents).
`approximations(spec)` says, in words, what is not the real kernel.

Why plain classes over tensors and not nn.Module: torch is imported only inside functions
(docs/architecture.md "Rules the code keeps": torch only in probe/ and bench/), so this module imports
without torch; the classes keep their tensors and call
torch.nn.functional, which is all a timed forward needs. The bench (planner/bench) reuses
`SyntheticLM` (forward, checkpoint, rollback) for its draft/verify loop.

Layout: synthetic_shapes.py (shapes and bytes, torch-free, so memory is checked before anything
is allocated, with the very tables that the allocation then uses), synthetic_ops.py (seeded
allocation, RMSNorm, RoPE, SDPA), synthetic_layers.py (attention, MLA, recurrent, FFN, layer),
and this module: the whole stack, its cache positions and rollback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.errors import UsageError
from ..core.spec import CHUNKED, MLA, SLIDING, LayerSpec, ModelSpec
from .synthetic_layers import Layer
from .synthetic_ops import RANDOM_BLOCK, Init, rms_norm
from .synthetic_shapes import mla_q_rank, shell_shapes


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
        init = Init(device, dtype, seed)
        self.device, self.vocab = device, spec.vocab
        if share_shell is None:  # (this branch first: it gives the attributes their types)
            shell = shell_shapes(spec)
            self.embed = init.weight(shell["embed"], 1)
            self.norm = init.ones(shell["norm"])
            self.head = init.weight(shell["head"], spec.hidden) if "head" in shell else None
        else:  # sample stacks of one model reuse one embedding/head (memory)
            self.embed, self.norm, self.head = share_shell.embed, share_shell.norm, share_shell.head
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
            x = rms_norm(x if all_logits else x[-1:], self.norm)
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
