"""Qwen3.5 MoE text tower (`qwen3_5_moe_text`, inside the `qwen3_5_moe` wrapper): Qwen3-Next layout."""

from __future__ import annotations

from dataclasses import dataclass

from . import qwen3_next
from .base import ArchSpec


@dataclass
class Args(qwen3_next.Args):
    """Qwen3_5MoeTextConfig defaults."""

    vocab_size: int = 248320
    num_hidden_layers: int = 40
    num_experts: int | None = 256
    num_experts_per_tok: int | None = 8


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return qwen3_next.to_spec(args, origin)
