"""StableLM 2 / 3B-4E1T (`stablelm`) and its remote-code predecessor (`stablelm_epoch`, stable-code-3b):
Llama's projections with LayerNorms that carry a bias.

transformers modeling_stablelm.py: q/k/v biased with use_qkv_bias, o_proj never; gated MLP without
bias; input_layernorm and (unless use_parallel_residual) post_attention_layernorm are nn.LayerNorm
(weight + bias), as is the final norm; qk_layernorm adds per-head LayerNorms (StableLmLayerNormPerHead:
one weight per head, no bias); StableLmConfig default tie_word_embeddings=False. The remote
StableLMEpoch code has the same tensors (num_heads / rope_pct are its spellings).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import ArchSpec
from .decoder import DecoderArgs, Style, build


@dataclass
class Args(DecoderArgs):
    """StableLmConfig defaults."""

    vocab_size: int = 50304
    hidden_size: int = 2560
    intermediate_size: int = 6912
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    max_position_embeddings: int = 4096
    use_qkv_bias: bool = False
    qk_layernorm: bool = False
    use_parallel_residual: bool = False
    num_heads: int | None = None  # stablelm_epoch's duplicate of num_attention_heads
    rope_pct: float | None = None


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    norms = ("input_layernorm",) if args.use_parallel_residual else ("input_layernorm", "post_attention_layernorm")
    return build(args, Style(norms=norms, qkv_bias=args.use_qkv_bias, norm_bias=True,
                             qk_norm="full" if args.qk_layernorm else None), origin=origin)
