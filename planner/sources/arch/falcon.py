"""Falcon 7B/40B/180B (`falcon`): fused QKV with multi-query or grouped KV, 4h plain MLP, parallel
attention, LayerNorm with bias, tied embeddings.

Shapes from transformers modeling_falcon.py: query_key_value is (heads + 2 kv) x head_dim wide under
`new_decoder_architecture` (kv = num_kv_heads), hidden + 2 head_dim with `multi_query` (one KV head),
else 3 x hidden; dense_h_to_4h/dense_4h_to_h use ffn_hidden_size (default 4 x hidden); `bias` on all
linears; new_decoder_architecture layers have ln_attn + ln_mlp (num_ln_in_parallel_attn 2), older
ones input_layernorm (+ post_attention_layernorm unless parallel_attn). FalconConfig inherits
tie_word_embeddings=True. ALiBi variants (`alibi`) cache the same K/V.

TII's own checkpoints (configs without a `tie_word_embeddings` key) store `lm_head.weight` although the
model is tied: falcon-180B-chat's model.safetensors.index.json (github Alikhan13r/falcon-180B-chat @
b872674083, line 6) maps lm_head.weight, and its total_size 359,045,130,240 = 2 x (178,557,088,768 tied
parameters + 65,024 x 14,848). No engine loads that copy (transformers ties it to word_embeddings;
vLLM falcon.py skips lm_head.weight when tie_word_embeddings), so it is stored-only: checkpoint_bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.spec import LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """FalconConfig defaults."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    vocab_size: int = 65024
    hidden_size: int = 4544
    num_hidden_layers: int = 32
    num_attention_heads: int = 71
    num_kv_heads: int | None = None
    multi_query: bool = True
    new_decoder_architecture: bool = False
    parallel_attn: bool = True
    bias: bool = False
    alibi: bool = False
    ffn_hidden_size: int | None = None
    num_ln_in_parallel_attn: int | None = None
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = True
    # RWConfig spellings (from_dict maps them onto the names above)
    n_layer: int | None = None
    n_head: int | None = None
    n_head_kv: int | None = None

    @property
    def intermediate_size(self) -> int:
        return self.ffn_hidden_size or 4 * self.hidden_size

    @classmethod
    def from_dict(cls, params: dict[str, Any], *, origin: str = "config.json", nested: bool = False) -> Args:
        """FalconConfig's attribute_map names (n_layer, n_head) and TII's remote-code RWConfig spellings.

        RWConfig (falcon-7b `RefinedWebModel`, falcon-40b `RefinedWeb`) writes n_layer / n_head /
        n_head_kv; transformers' FalconConfig maps n_layer and n_head (attribute_map) and reads a
        RefinedWeb config as new_decoder_architecture (convert: `model_type == "RefinedWeb"`), and
        RefinedWebModel as multi-query with one input_layernorm.
        """
        p = dict(params)
        for old, new in (("n_layer", "num_hidden_layers"), ("n_head", "num_attention_heads"),
                         ("n_head_kv", "num_kv_heads")):
            if old in p and new not in p:
                p[new] = p[old]
        if p.get("model_type") == "RefinedWeb":
            p.setdefault("new_decoder_architecture", True)
        return super().from_dict(p, origin=origin, nested=nested)


def kv_heads(args: Args) -> int:
    if args.new_decoder_architecture:
        return args.num_kv_heads or args.num_attention_heads
    return 1 if args.multi_query else args.num_attention_heads


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    hd, nkv, ffn = h // nq, kv_heads(args), args.intermediate_size
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("transformer.word_embeddings.weight", (args.vocab_size, h), "embedding")
    two_ln = args.new_decoder_architecture and (args.num_ln_in_parallel_attn or 2) == 2
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"transformer.h.{i}"
        t.linear(f"{p}.self_attention.query_key_value", h, (nq + 2 * nkv) * hd, "attention", args.bias)
        t.linear(f"{p}.self_attention.dense", h, h, "attention", args.bias)
        t.linear(f"{p}.mlp.dense_h_to_4h", h, ffn, "ffn", args.bias)
        t.linear(f"{p}.mlp.dense_4h_to_h", ffn, h, "ffn", args.bias)
        norms = ("ln_attn", "ln_mlp") if two_ln else (
            ("input_layernorm",) if args.parallel_attn else ("input_layernorm", "post_attention_layernorm"))
        for n in norms:
            t.norm(f"{p}.{n}", h, bias=True)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd, ffn_width=ffn))
    t.norm("transformer.ln_f", h, bias=True)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    stored = Tensors(dtype)
    if args.tie_word_embeddings and "tie_word_embeddings" in args.defaults_used:
        stored.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    notes = ["TII checkpoint (no tie_word_embeddings key): its stored lm_head copy counted in checkpoint_bytes, "
             "not resident"] if stored.items else []
    return finish(args, t, layers, dtype_known=known, notes=notes, stored_tensors=tuple(stored.items))
