"""Llama 3.2 Vision's language model (`mllama_text_model`): Llama layers with gated cross-attention layers
interleaved at `cross_attention_layers`.

transformers modeling_mllama.py (MllamaTextModel / MllamaCrossAttentionDecoderLayer): embed_tokens has
vocab_size + 8 rows (:1030, the image and special tokens past the text vocabulary) while lm_head keeps
vocab_size (:1405, untied); a self-attention layer is Llama's; a cross-attention layer has no self-attention but
cross_attn q/o [h, h], k/v [kv heads x head_dim, h], q_norm / k_norm over head_dim, two tanh gates
(cross_attn_attn_gate, cross_attn_mlp_gate, one element each), the MLP and both norms. The cross-attention
layers attend to the image's tokens: their cache is fixed per image, not per text token (not counted here:
said in the notes).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import NONE, LayerSpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs

_EXTRA_ROWS = 8  # MllamaTextModel: nn.Embedding(config.vocab_size + 8, ...)


@dataclass
class Args(DecoderArgs):
    """MllamaTextConfig defaults (Llama-3.2-11B-Vision's text model)."""

    vocab_size: int = 128256
    hidden_size: int = 4096
    num_hidden_layers: int = 40
    num_attention_heads: int = 32
    num_key_value_heads: int | None = 8
    intermediate_size: int = 14336
    max_position_embeddings: int = 131072
    cross_attention_layers: list | None = None


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq, n, inter = args.hidden_size, args.num_attention_heads, args.num_hidden_layers, args.intermediate_size
    nkv, hd = args.num_key_value_heads or nq, args.head_dim or h // nq
    cross = set(args.cross_attention_layers if args.cross_attention_layers is not None
                else [3, 8, 13, 18, 23, 28, 33, 38])
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("model.embed_tokens.weight", (args.vocab_size + _EXTRA_ROWS, h), "embedding")
    t.norm("model.norm", h)
    layers = []
    for i in range(n):
        p = f"model.layers.{i}"
        if i in cross:
            t.attention(f"{p}.cross_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd, qk_norm="head")
            t.add(f"{p}.cross_attn_attn_gate", (1,), "norm")
            t.add(f"{p}.cross_attn_mlp_gate", (1,), "norm")
        else:
            t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd)
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        t.mlp(f"{p}.mlp", h, inter)
        layers.append(LayerSpec(attention=NONE, q_heads=nq, ffn_width=inter) if i in cross else
                      LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd, ffn_width=inter))
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    notes = [f"{len(cross & set(range(n)))} cross-attention layers cache the image's K/V once per image "
             f"(not per text token): not counted in the KV figure"] if cross else []
    return finish(args, t, layers, dtype_known=known, notes=notes)
