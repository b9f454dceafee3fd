"""RecurrentGemma (`recurrent_gemma`, Griffin): two RG-LRU recurrent blocks per local-attention block.

transformers modeling_recurrent_gemma.py / configuration_recurrent_gemma.py:
- the plan: block_types repeated over the layers, ("recurrent", "recurrent", "attention") by default; every
  attention block is local, attention_window_size tokens (layers_block_type, configuration :99-102);
- attention (:214-217): q [heads x head_dim, h], k/v [kv_heads x head_dim, h] (bias under attention_bias),
  o_proj with a bias always; head_dim = h / heads (:85);
- a recurrent block (:399-407, Rglru :287-298): linear_y / linear_x [lru_width, h] + bias, linear_out + bias,
  a depthwise conv_1d [lru_width, 1, conv1d_width] + bias, rg_lru.recurrent_param [lru_width] and per-head
  block-diagonal input / recurrent gates [heads, lru_width / heads, lru_width / heads] + biases;
  its state is the conv window plus lru_width floats kept in float32 (:441, :465);
- an MLP of intermediate_size / 2 (gate / up / down, all biased, :480-483); temporal_pre_norm,
  channel_pre_norm, final_norm; lm_head tied.
The standard rule read every layer as attention with a full-width MLP: +43% at the config defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import FULL, NONE, SLIDING, LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """RecurrentGemmaConfig defaults."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    num_hidden_layers: int = 26
    vocab_size: int = 256000
    hidden_size: int = 2560
    intermediate_size: int = 3 * 2560
    num_attention_heads: int = 10
    num_key_value_heads: int | None = None
    lru_width: int | None = None
    attention_window_size: int = 2048
    conv1d_width: int = 4
    block_types: list | None = None
    attention_bias: bool = False
    # RecurrentGemmaConfig sets head_dim = hidden_size // num_attention_heads after reading (configuration :85),
    # whatever a saved config says: written back, read here, not used
    head_dim: int | None = None
    tie_word_embeddings: bool = True
    max_position_embeddings: int = 1 << 20  # local attention + fixed state: no positional limit in the config


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "conv1d_width", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv, hd = args.num_key_value_heads or nq, h // nq
    lru, k, mlp = args.lru_width or h, args.conv1d_width, args.intermediate_size // 2
    block = lru // nq
    kinds = [str(x) for x in (args.block_types or ["recurrent", "recurrent", "attention"])]
    plan = (kinds * (args.num_hidden_layers // max(len(kinds), 1) + 1))[:args.num_hidden_layers]
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("model.embed_tokens.weight", (args.vocab_size, h), "embedding")
    layers = []
    for i, kind in enumerate(plan):
        p, b = f"model.layers.{i}", f"model.layers.{i}.temporal_block"
        t.norm(f"{p}.temporal_pre_norm", h)
        if kind == "recurrent":
            t.linear(f"{b}.linear_y", h, lru, "recurrent", True)
            t.linear(f"{b}.linear_x", h, lru, "recurrent", True)
            t.linear(f"{b}.linear_out", lru, h, "recurrent", True)
            t.add(f"{b}.conv_1d.weight", (lru, 1, k), "other")
            t.add(f"{b}.conv_1d.bias", (lru,), "norm")
            t.add(f"{b}.rg_lru.recurrent_param", (lru,), "norm")
            for gate in ("input_gate", "recurrent_gate"):
                t.add(f"{b}.rg_lru.{gate}_weight", (nq, block, block), "other")
                t.add(f"{b}.rg_lru.{gate}_bias", (nq, block), "norm")
            layers.append(LayerSpec(attention=NONE, recurrent="rg_lru", conv_dim=lru, conv_kernel=k,
                                    recurrent_state_elems=lru, q_heads=nq, ffn_width=mlp))
        else:
            t.attention(b, hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd, qkv_bias=args.attention_bias, o_bias=True)
            local = args.attention_window_size < args.max_position_embeddings
            layers.append(LayerSpec(attention=SLIDING if local else FULL, q_heads=nq, kv_heads=nkv, head_dim_k=hd,
                                    head_dim_v=hd, window=args.attention_window_size if local else None,
                                    ffn_width=mlp))
        t.norm(f"{p}.channel_pre_norm", h)
        t.mlp(f"{p}.mlp_block", h, mlp, bias=True)
    t.norm("model.final_norm", h)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    # the RG-LRU state is float32 whatever the weights (rg_lru.recurrent_states, :465)
    return finish(args, t, layers, dtype_known=known, state_dtype="float32")
