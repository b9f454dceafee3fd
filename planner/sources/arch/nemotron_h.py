"""Nemotron-H / Nemotron 3 Nano: a per-layer pattern of Mamba2 (M), attention (*), MLP (-), MoE (E).

Each layer has one norm and one mixer. Only '*' layers keep a KV cache; 'M' layers
keep a fixed conv + SSM state per sequence (cache dtype `mamba_ssm_cache_dtype`);
'-' and 'E' layers keep nothing per token.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import ConfigError
from ...core.spec import FULL, NONE, LayerSpec, MoESpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive

_PATTERN = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
_TYPES = {"mamba": "mamba", "linear_attention": "mamba", "attention": "attention",
          "full_attention": "attention", "mlp": "mlp", "moe": "moe"}


@dataclass
class Args(BaseArgs):
    """NemotronHConfig defaults (transformers); old key names are accepted too."""

    REQUIRED = ("hidden_size", "vocab_size")
    vocab_size: int = 131072
    hidden_size: int = 4096
    num_hidden_layers: int | None = None
    hybrid_override_pattern: str | None = None
    layers_block_type: list | None = None
    tie_word_embeddings: bool = False
    num_attention_heads: int = 32
    num_key_value_heads: int = 8
    head_dim: int = 128
    max_position_embeddings: int = 4096
    attention_bias: bool = False
    intermediate_size: int = 21504
    mlp_bias: bool = False
    ssm_state_size: int = 128
    mamba_num_heads: int = 128
    mamba_head_dim: int = 64
    n_groups: int = 8
    conv_kernel: int = 4
    use_conv_bias: bool = True
    mamba_proj_bias: bool = False
    mamba_ssm_cache_dtype: str | None = "float32"
    n_routed_experts: int = 8
    n_shared_experts: int = 1
    moe_intermediate_size: int = 7688
    moe_shared_expert_intermediate_size: int = 7688
    num_experts_per_tok: int = 2
    # whether shared and routed experts overlap in time: no shape depends on it; the MTP layers' block plan
    # is read only with num_nextn_predict_layers (0 here: not sized, named as a doubt when set)
    moe_shared_expert_overlap: bool | None = None
    mtp_layers_block_type: list | None = None
    num_nextn_predict_layers: int = 0


def block_types(args: Args, origin: str) -> list[str]:
    if args.hybrid_override_pattern:
        bad = sorted(set(args.hybrid_override_pattern) - set(_PATTERN))
        if bad:
            raise ConfigError(f"Cannot use '{origin}': hybrid_override_pattern has unknown layer codes "
                              f"{bad} (expected M, *, -, E).", origin, key="hybrid_override_pattern")
        return [_PATTERN[c] for c in args.hybrid_override_pattern]
    if args.layers_block_type:
        return [_TYPES.get(str(x), "mlp") for x in args.layers_block_type]
    raise ConfigError(f"Cannot size the model from '{origin}': nemotron_h needs hybrid_override_pattern or "
                      f"layers_block_type.", origin, key="hybrid_override_pattern")


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "vocab_size", "num_attention_heads", origin=origin)
    h = args.hidden_size
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("backbone.embeddings.weight", (args.vocab_size, h), "embedding")
    t.norm("backbone.norm_f", h)
    if not args.tie_word_embeddings:
        t.add("lm_head.weight", (args.vocab_size, h), "lm_head")
    moe = MoESpec(args.n_routed_experts, args.num_experts_per_tok, args.moe_intermediate_size,
                  args.n_shared_experts, args.moe_shared_expert_intermediate_size * max(args.n_shared_experts, 1))
    layers = []
    kinds = block_types(args, origin)
    for i, kind in enumerate(kinds):
        p = f"backbone.layers.{i}"
        t.norm(f"{p}.norm", h)
        m = f"{p}.mixer"
        if kind == "mamba":
            conv_dim, state = t.mamba2(m, hidden=h, n_heads=args.mamba_num_heads, head_dim=args.mamba_head_dim,
                                       n_groups=args.n_groups, d_state=args.ssm_state_size,
                                       d_conv=args.conv_kernel, conv_bias=args.use_conv_bias,
                                       proj_bias=args.mamba_proj_bias)
            layers.append(LayerSpec(attention=NONE, recurrent="mamba2", conv_dim=conv_dim,
                                    conv_kernel=args.conv_kernel, recurrent_state_elems=state,
                                    q_heads=args.mamba_num_heads, ffn="none"))
        elif kind == "attention":
            t.attention(m, hidden=h, q_heads=args.num_attention_heads, kv_heads=args.num_key_value_heads,
                        head_dim=args.head_dim, qkv_bias=args.attention_bias, o_bias=args.attention_bias)
            layers.append(LayerSpec(attention=FULL, q_heads=args.num_attention_heads,
                                    kv_heads=args.num_key_value_heads, head_dim_k=args.head_dim,
                                    head_dim_v=args.head_dim, ffn="none"))
        elif kind == "moe":
            t.router(m, h, args.n_routed_experts, correction_bias=True)
            t.experts(m, h, args.n_routed_experts, args.moe_intermediate_size, gated=False)
            t.mlp(f"{m}.shared_experts", h, moe.shared_intermediate, gated=False)
            layers.append(LayerSpec(attention=NONE, ffn="moe", ffn_width=args.moe_intermediate_size))
        else:
            t.mlp(m, h, args.intermediate_size, gated=False, bias=args.mlp_bias)
            layers.append(LayerSpec(attention=NONE, ffn="dense", ffn_width=args.intermediate_size))
    has_moe = "moe" in kinds
    guesses = (f"{args.num_nextn_predict_layers} MTP layer(s) declared (mtp_layers_block_type "
               f"{args.mtp_layers_block_type}): stored in the checkpoint, not sized",) \
        if args.num_nextn_predict_layers else ()
    return finish(args, t, layers, dtype_known=known, moe=moe if has_moe else None,
                  state_dtype=args.mamba_ssm_cache_dtype, guesses=guesses)
