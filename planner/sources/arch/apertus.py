"""Apertus (`apertus`, Swiss AI): the Llama decoder with an up/down xIELU MLP and per-head q/k norms.

transformers modeling_apertus.py: ApertusMLP holds up_proj and down_proj only (:49-50) and its activation is
the learned xIELU (:53; activations.py XIELUActivation: parameters alpha_p, alpha_n of shape (1,) and the
buffers beta, eps, all saved), q/k RMSNorm per head (:222-223), o_proj biased like q/k/v under attention_bias
(:210-220), and the layer norms named attention_layernorm / feedforward_layernorm (:277-278).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build

_XIELU = (("mlp.act_fn.alpha_p", (1,)), ("mlp.act_fn.alpha_n", (1,)), ("mlp.act_fn.beta", ()),
          ("mlp.act_fn.eps", ()))


@dataclass
class Args(DecoderArgs):
    """ApertusConfig defaults (configuration_apertus.py)."""

    vocab_size: int = 131072
    hidden_size: int = 4096
    intermediate_size: int = 14336
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    max_position_embeddings: int = 65536
    tie_word_embeddings: bool = False


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    return build(args, Style(norms=("attention_layernorm", "feedforward_layernorm"), qk_norm="head",
                             gated_mlp=False, act_params=_XIELU), origin=origin)
