"""CodeGen / CodeGen2 (`codegen`): GPT-J's block with q, k and v fused into one qkv_proj (gptj.py)."""

from __future__ import annotations

from dataclasses import dataclass

from . import gptj
from .base import ArchSpec


@dataclass
class Args(gptj.Args):
    """CodeGenConfig defaults (GPT-J's)."""


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return gptj.to_spec(args, origin, fused_qkv=True)
