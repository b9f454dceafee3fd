"""MPT (`mpt`, MosaicML / llm-foundry): ALiBi attention with a fused Wqkv, a plain GELU MLP of
expansion_ratio x d_model, LayerNorms, tied head, no biases by default.

transformers modeling_mpt.py ports the released checkpoints: transformer.wte [v, h]; per block norm_1
(weight only: `norm_1.bias = None`, :165-167), attn.Wqkv [3h, h], attn.out_proj [h, h] (bias=False, :83-84),
norm_2, ffn.up_proj [4h, h] / ffn.down_proj [h, 4h] (:144-146); norm_f; lm_head tied (:375). The Hub's MPT
configs name llm-foundry's remote code, which reads what the port fixes: `expansion_ratio`, `no_bias` (biases
on every linear and norm when false) and attn_config `kv_n_heads` under grouped-query attention
(Wqkv [h + 2 kv_heads head_dim, h]); those are followed here, so the port's and the remote code's released
configs (expansion_ratio 4, no_bias true, MHA) agree. ALiBi: no position table unless attn_config.alibi
is false (then llm-foundry adds transformer.wpe).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """MptConfig defaults."""

    REQUIRED = ("d_model", "n_heads", "n_layers")
    vocab_size: int = 50368
    d_model: int = 2048
    n_heads: int = 16
    n_layers: int = 24
    expansion_ratio: int = 4
    max_seq_len: int = 2048
    no_bias: bool = True
    attn_config: dict | None = None
    tie_word_embeddings: bool = True


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "d_model", "n_heads", "n_layers", "vocab_size", "expansion_ratio", origin=origin)
    h, nq = args.d_model, args.n_heads
    hd, inner, bias = h // nq, args.expansion_ratio * h, not args.no_bias
    attn = args.attn_config or {}
    kv, kind = attn.get("kv_n_heads"), attn.get("attn_type")
    if kind == "multiquery_attention":
        nkv = 1
    elif kind == "grouped_query_attention" and isinstance(kv, int) and 0 < kv <= nq and nq % kv == 0:
        nkv = kv
    else:
        nkv = nq
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("transformer.wte.weight", (args.vocab_size, h), "embedding")
    if attn.get("alibi") is False:
        t.add("transformer.wpe.weight", (args.max_seq_len, h), "embedding")
    layers = []
    for i in range(args.n_layers):
        p = f"transformer.blocks.{i}"
        t.norm(f"{p}.norm_1", h, bias=bias)
        t.linear(f"{p}.attn.Wqkv", h, h + 2 * nkv * hd, "attention", bias)
        t.linear(f"{p}.attn.out_proj", h, h, "attention", bias)
        t.norm(f"{p}.norm_2", h, bias=bias)
        t.linear(f"{p}.ffn.up_proj", h, inner, "ffn", bias)
        t.linear(f"{p}.ffn.down_proj", inner, h, "ffn", bias)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd, ffn_width=inner))
    t.norm("transformer.norm_f", h, bias=bias)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    args.hidden_size, args.intermediate_size = h, inner  # type: ignore[attr-defined]
    args.max_position_embeddings = args.max_seq_len  # type: ignore[attr-defined]
    return finish(args, t, layers, dtype_known=known)
