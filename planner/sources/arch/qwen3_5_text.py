"""Qwen3.5 dense text tower (`qwen3_5_text`): Qwen3-Next mixers with a dense MLP."""

from __future__ import annotations

from dataclasses import dataclass

from . import qwen3_next
from .base import ArchSpec


@dataclass
class Args(qwen3_next.Args):
    """Qwen3_5TextConfig: same mixers, no experts unless the config names them."""

    vocab_size: int = 248320
    num_experts: int | None = None
    shared_expert_intermediate_size: int | None = None


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return qwen3_next.to_spec(args, origin)
