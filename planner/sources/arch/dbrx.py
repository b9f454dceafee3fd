"""DBRX (`dbrx`): fused Wqkv with grouped KV, weight-only LayerNorms, 16 fine-grained experts stored as
three stacked matrices per layer, untied embeddings.

Shapes from transformers modeling_dbrx.py: transformer.wte [v, d]; per block
norm_attn_norm.norm_1 / norm_2 (LayerNorm, bias=False), norm_attn_norm.attn.Wqkv [d + 2 kv hd, d],
attn.out_proj [d, d]; ffn.router.layer [E, d]; ffn.experts.mlp.w1 / v1 / w2 each [E x ffn, d];
transformer.norm_f; lm_head [v, d]. Sizes sit in the nested attn_config (kv_n_heads) and ffn_config
(ffn_hidden_size, moe_num_experts, moe_top_k), as DbrxConfig reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...core.constants import MAX_HIDDEN
from ...core.errors import ConfigError
from ...core.spec import LayerSpec, MoESpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """DbrxConfig defaults (its sizes live under d_model / n_heads / n_layers)."""

    REQUIRED = ("d_model", "n_heads", "n_layers", "vocab_size")
    d_model: int = 2048
    n_heads: int = 16
    n_layers: int = 24
    max_seq_len: int = 2048
    vocab_size: int = 32000
    attn_config: dict = field(default_factory=dict)
    ffn_config: dict = field(default_factory=dict)
    tie_word_embeddings: bool = False
    # DbrxConfig copies attn_config.kv_n_heads to num_key_value_heads (configuration_dbrx.py:153)
    num_key_value_heads: int | None = None

    # finish() reads the standard names
    @property
    def hidden_size(self) -> int:
        return self.d_model

    @property
    def intermediate_size(self) -> int:
        return _sub(self.ffn_config, "ffn_hidden_size", 3584)

    @property
    def max_position_embeddings(self) -> int:
        return self.max_seq_len


def _sub(d: dict, key: str, default: int, origin: str = "config.json") -> int:
    v = d.get(key, default) if isinstance(d, dict) else default
    if not isinstance(v, int) or isinstance(v, bool) or v < 1 or v > MAX_HIDDEN * 8:
        raise ConfigError(f"Cannot size the model from '{origin}': key '{key}' must be a positive integer "
                          f"(got {v!r:.40}).", origin, key=key)
    return v


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "d_model", "n_heads", "n_layers", "vocab_size", origin=origin)
    d, nq = args.d_model, args.n_heads
    hd = d // nq
    nkv = _sub(args.attn_config, "kv_n_heads", 1, origin)
    ffn = _sub(args.ffn_config, "ffn_hidden_size", 3584, origin)
    e = _sub(args.ffn_config, "moe_num_experts", 4, origin)
    k = _sub(args.ffn_config, "moe_top_k", 1, origin)
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("transformer.wte.weight", (args.vocab_size, d), "embedding")
    layers = []
    for i in range(args.n_layers):
        p = f"transformer.blocks.{i}"
        t.norm(f"{p}.norm_attn_norm.norm_1", d)
        t.norm(f"{p}.norm_attn_norm.norm_2", d)
        t.linear(f"{p}.norm_attn_norm.attn.Wqkv", d, d + 2 * nkv * hd, "attention")
        t.linear(f"{p}.norm_attn_norm.attn.out_proj", d, d, "attention")
        t.add(f"{p}.ffn.router.layer.weight", (e, d), "other")
        for w in ("w1", "v1", "w2"):
            # [E x ffn, d]: the experts' rows stacked; w2 is stored transposed the same way
            t.add(f"{p}.ffn.experts.mlp.{w}", (e, ffn, d), "experts")
        layers.append(LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd, ffn="moe", ffn_width=ffn))
    t.norm("transformer.norm_f", d)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, d), "lm_head")
    moe = MoESpec(e, k, ffn, 0, 0)
    return finish(args, t, layers, dtype_known=known, moe=moe)
