"""JetMoE (`jetmoe`): mixture-of-attention (MoA) and mixture-of-MLP experts in every layer.

transformers modeling_jetmoe.py:
- attention (JetMoeAttention :413-450): one shared kv_proj [2 x kv_channels x num_key_value_heads, h]; the
  queries and outputs are experts (JetMoeMoA :267-290): input_linear [E, kv_channels x kv_heads, h],
  output_linear [E, h, kv_channels x kv_heads] (JetMoeParallelExperts: weight [E, out, in], :134), a router
  layer [E, h] and an output bias [h];
- MLP (JetMoeMoE :209-230): input_linear [E, 2 x intermediate, h] (gated), output_linear [E, h, intermediate],
  router [E, h], output bias [h];
- input_layernorm, post_attention_layernorm, final norm; lm_head tied by default.
The KV cache holds num_key_value_heads heads of kv_channels per layer (the MoA experts make queries only).
The standard rule sized q/k/v/o and plain experts: -14% at the config defaults. The attention experts count as
attention weights read in full (the speed model routes only the MLP experts).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec, MoESpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """JetMoeConfig defaults."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "vocab_size")
    vocab_size: int = 32000
    hidden_size: int = 2048
    num_hidden_layers: int = 12
    num_key_value_heads: int = 16
    kv_channels: int = 128
    intermediate_size: int = 5632
    max_position_embeddings: int = 4096
    num_local_experts: int = 8
    num_experts_per_tok: int = 2
    # JetMoeConfig derives num_attention_heads = num_key_value_heads x num_experts_per_tok (configuration :72)
    num_attention_heads: int | None = None
    tie_word_embeddings: bool = True


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "vocab_size", "num_key_value_heads", "kv_channels",
                     "num_local_experts", "num_experts_per_tok", origin=origin)
    h, e, inter = args.hidden_size, args.num_local_experts, args.intermediate_size
    nkv, hd = args.num_key_value_heads, args.kv_channels
    kv = nkv * hd
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"model.layers.{i}"
        a = f"{p}.self_attention"
        t.linear(f"{a}.kv_proj", h, 2 * kv, "attention")
        t.add(f"{a}.experts.input_linear.weight", (e, kv, h), "attention")
        t.add(f"{a}.experts.output_linear.weight", (e, h, kv), "attention")
        t.add(f"{a}.experts.router.layer.weight", (e, h), "other")
        t.add(f"{a}.experts.bias", (h,), "norm")
        t.add(f"{p}.mlp.input_linear.weight", (e, 2 * inter, h), "experts")
        t.add(f"{p}.mlp.output_linear.weight", (e, h, inter), "experts")
        t.add(f"{p}.mlp.router.layer.weight", (e, h), "other")
        t.add(f"{p}.mlp.bias", (h,), "norm")
        t.norm(f"{p}.input_layernorm", h)
        t.norm(f"{p}.post_attention_layernorm", h)
        # queries: num_experts_per_tok experts of kv_heads heads each (JetMoeConfig attribute_map)
        layers.append(LayerSpec(q_heads=nkv * args.num_experts_per_tok, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                ffn="moe", ffn_width=inter))
    moe = MoESpec(experts=e, experts_per_token=args.num_experts_per_tok, expert_intermediate=inter)
    return finish(args, t, layers, dtype_known=known, moe=moe)
