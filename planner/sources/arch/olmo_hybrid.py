"""OLMo Hybrid (`olmo_hybrid`, AllenAI 2026): OLMo 2 attention layers between Gated DeltaNet layers.

transformers modeling_olmo_hybrid.py and configuration_olmo_hybrid.py:
- the plan: `layer_types`, else linear attention with every 4th layer (i % 4 == 3) full, the last layer full
  when none is (configuration :121-129);
- a full-attention layer is OLMo 2's: q/k/v/o (bias under attention_bias), q_norm / k_norm over the whole
  projection width (:193-194), post-norms only: post_attention_layernorm + post_feedforward_layernorm (:775-776);
- a linear layer (OlmoHybridGatedDeltaNet :572-632) has separate q/k [key_dim, h], v [value_dim, h],
  a/b [v_heads, h], g [value_dim, h], o [h, value_dim], a depthwise conv over 2 key_dim + value_dim channels
  without bias, A_log and dt_bias per value head, o_norm over one value head; pre-norms input_layernorm +
  post_attention_layernorm (:815-816). Heads default to num_attention_heads, key head dim to
  int(0.75 h / key heads), value head dim to twice that (configuration :131-138).
The standard rule read every layer as attention: -9.6% at the config defaults, and the cache grew on all 32
layers where 8 keep one.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import FULL, NONE, LayerSpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs


@dataclass
class Args(DecoderArgs):
    """OlmoHybridConfig defaults."""

    vocab_size: int = 100352
    hidden_size: int = 3840
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 30
    max_position_embeddings: int = 65536
    linear_num_key_heads: int | None = None
    linear_num_value_heads: int | None = None
    linear_key_head_dim: int | None = None
    linear_value_head_dim: int | None = None
    linear_conv_kernel_dim: int = 4
    # initialisation ranges and the eigenvalue sign of the delta rule: no tensor's shape depends on them
    linear_a_log_min: float | None = None
    linear_a_log_max: float | None = None
    linear_dt_min: float | None = None
    linear_dt_max: float | None = None
    linear_dt_init_floor: float | None = None
    linear_allow_neg_eigval: bool | None = None


def plan(args: Args) -> list[bool]:
    """Which layers are linear attention (configuration_olmo_hybrid.py __post_init__)."""
    n = args.num_hidden_layers
    if isinstance(args.layer_types, list) and len(args.layer_types) == n:
        return [str(x) == "linear_attention" for x in args.layer_types]
    linear = [i % 4 != 3 for i in range(n)]
    if all(linear):
        linear[-1] = False
    return linear


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv, hd = args.num_key_value_heads or nq, args.head_dim or h // nq
    kh, vh = args.linear_num_key_heads or nq, args.linear_num_value_heads or nq
    kd = args.linear_key_head_dim or int(0.75 * h / kh)
    vd = args.linear_value_head_dim or 2 * kd
    key_dim, value_dim, kernel = kh * kd, vh * vd, args.linear_conv_kernel_dim
    conv_dim = 2 * key_dim + value_dim
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    layers = []
    for i, linear in enumerate(plan(args)):
        p = f"model.layers.{i}"
        if linear:
            a = f"{p}.linear_attn"
            t.linear(f"{a}.q_proj", h, key_dim, "recurrent")
            t.linear(f"{a}.k_proj", h, key_dim, "recurrent")
            t.linear(f"{a}.v_proj", h, value_dim, "recurrent")
            t.linear(f"{a}.a_proj", h, vh, "recurrent")
            t.linear(f"{a}.b_proj", h, vh, "recurrent")
            t.linear(f"{a}.g_proj", h, value_dim, "recurrent")
            t.linear(f"{a}.o_proj", value_dim, h, "recurrent")
            t.add(f"{a}.conv1d.weight", (conv_dim, 1, kernel), "other")
            t.add(f"{a}.A_log", (vh,), "norm")
            t.add(f"{a}.dt_bias", (vh,), "norm")
            t.norm(f"{a}.o_norm", vd)
            t.norm(f"{p}.input_layernorm", h)
            t.norm(f"{p}.post_attention_layernorm", h)
            layers.append(LayerSpec(attention=NONE, recurrent="linear_attention", conv_dim=conv_dim,
                                    conv_kernel=kernel, recurrent_state_elems=vh * kd * vd, q_heads=vh,
                                    ffn_width=args.intermediate_size))
        else:
            t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=nkv, head_dim=hd,
                        qkv_bias=args.attention_bias, o_bias=args.attention_bias, qk_norm="full")
            t.norm(f"{p}.post_attention_layernorm", h)
            t.norm(f"{p}.post_feedforward_layernorm", h)
            layers.append(LayerSpec(attention=FULL, q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                    ffn_width=args.intermediate_size))
        t.mlp(f"{p}.mlp", h, args.intermediate_size)
    return finish(args, t, layers, dtype_known=known)
