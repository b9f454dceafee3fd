"""Gemma 4 text tower (`gemma4_text`): sliding layers with (num_key_value_heads, head_dim), global
layers with (num_global_key_value_heads, global_head_dim) and, under `attention_k_eq_v`, no v_proj.

Per transformers modeling_gemma4.py (Gemma4TextAttention: `use_alternative_attention =
attention_k_eq_v and not is_sliding`; head_dim = global_head_dim on full layers; kv heads =
num_global_key_value_heads there): sliding q/k/v/o [heads x 256 ...], global q [heads x 512], k
[global kv x 512], V read from K. Each layer has q_norm/k_norm over its head_dim, four norms
(input, post_attention, pre/post feed-forward), a 1-element layer_scalar and a gated MLP; embeddings
tied. KV: engines write V (= K) into their cache as a separate row, so a global layer caches
2 x global kv x global_head_dim per token; sliding layers hold their window.
MoE block (`enable_moe_block`, Gemma 4 26B-A4B), transformers 5.24.0 modeling_gemma4.py: every layer keeps
its dense MLP and adds, in parallel (Gemma4TextDecoderLayer.__init__ :1352-1358), a router (:1294-1305:
proj [experts, hidden], scale [hidden], per_expert_scale [experts]; its norm has no weight), fused experts
(:1255-1264: gate_up_proj [experts, 2 x moe_intermediate_size, hidden], down_proj [experts, hidden,
moe_intermediate_size]) and three more norms (post_feedforward_layernorm_1/_2, pre_feedforward_layernorm_2).
The dense MLP is the always-on part of each layer, so it is carried as a shared expert of its width.
Per-layer embeddings (PLE, `hidden_size_per_layer_input` > 0: Gemma 4 E2B / E4B), Gemma4TextModel :1562-1580:
embed_tokens_per_layer [vocab_size_per_layer_input, layers x ple], per_layer_model_projection [layers x ple, h],
per_layer_projection_norm [ple]; per layer (Gemma4TextDecoderLayer :1345-1350) per_layer_input_gate [ple, h],
per_layer_projection [h, ple], post_per_layer_input_norm [h]. Gemma4TextConfig's default ple is 256
(configuration_gemma4.py:174): a config that omits the key gets PLE, as transformers builds it.
Shared KV (`num_kv_shared_layers`): the last N layers reuse the cache of the last earlier layer of their type
(kv_sharing_modes): they build no k_proj / v_proj / k_norm (Gemma4TextAttention :1171-1180) and cache nothing;
transformers lists those tensors in _keys_to_ignore_on_load_unexpected (:1582-1588), i.e. the released
checkpoints store them: counted in checkpoint_bytes, not resident.
`per_layer_config` (what Gemma4TextConfig writes back: {layer: {head_dim, num_key_value_heads}} for the full
layers, :210-221) overrides a layer's head_dim and kv heads.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import ConfigError
from ...core.spec import FULL, NONE, SLIDING, LayerSpec, MoESpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs


@dataclass
class Args(DecoderArgs):
    """Gemma4TextConfig defaults (31B shapes)."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads")
    vocab_size: int = 262144
    hidden_size: int = 5376
    intermediate_size: int = 21504
    num_hidden_layers: int = 60
    num_attention_heads: int = 32
    num_key_value_heads: int | None = 16
    head_dim: int | None = 256
    global_head_dim: int | None = 512
    num_global_key_value_heads: int | None = None
    attention_k_eq_v: bool = False
    max_position_embeddings: int = 262144
    tie_word_embeddings: bool = True
    sliding_window: int | None = 1024
    hidden_size_per_layer_input: int = 256
    vocab_size_per_layer_input: int | None = None
    num_kv_shared_layers: int = 0
    enable_moe_block: bool = False
    top_k_experts: int | None = None
    use_double_wide_mlp: bool = False
    use_bidirectional_attention: str | None = None
    per_layer_config: dict | None = None


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq, n = args.hidden_size, args.num_attention_heads, args.num_hidden_layers
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    types = args.layer_types if isinstance(args.layer_types, list) and len(args.layer_types) == n \
        else ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(n)]
    inter = args.intermediate_size * (2 if args.use_double_wide_mlp else 1)
    moe = _moe(args, inter, origin)
    ple = args.hidden_size_per_layer_input or 0
    if ple:
        t.add("model.embed_tokens_per_layer.weight", (args.vocab_size_per_layer_input or args.vocab_size, n * ple),
              "embedding")
        t.linear("model.per_layer_model_projection", h, n * ple, "other")
        t.norm("model.per_layer_projection_norm", ple)
    shared_from = n - min(max(args.num_kv_shared_layers, 0), n)
    overrides = _per_layer(args, origin)
    stored = Tensors(dtype)  # k/v of shared-KV layers: in the checkpoint, never loaded
    layers = []
    for i in range(n):
        p, a = f"model.layers.{i}", f"model.layers.{i}.self_attn"
        sliding = str(types[i]).startswith("sliding")
        alt = args.attention_k_eq_v and not sliding
        hd = args.head_dim or h // nq if sliding else args.global_head_dim or args.head_dim or h // nq
        nkv = (args.num_global_key_value_heads if alt else None) or args.num_key_value_heads or nq
        hd, nkv = overrides.get(i, {}).get("head_dim", hd), overrides.get(i, {}).get("num_key_value_heads", nkv)
        shared = i >= shared_from
        t.linear(f"{a}.q_proj", h, nq * hd, "attention", args.attention_bias)
        kv_t = stored if shared else t
        kv_t.linear(f"{a}.k_proj", h, nkv * hd, "attention", args.attention_bias)
        if not alt:
            kv_t.linear(f"{a}.v_proj", h, nkv * hd, "attention", args.attention_bias)
        t.linear(f"{a}.o_proj", nq * hd, h, "attention", args.attention_bias)
        t.norm(f"{a}.q_norm", hd)
        kv_t.norm(f"{a}.k_norm", hd)
        for name in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            t.norm(f"{p}.{name}", h)
        t.add(f"{p}.layer_scalar", (1,), "norm")
        t.mlp(f"{p}.mlp", h, inter)
        if ple:
            t.linear(f"{p}.per_layer_input_gate", h, ple, "ffn")
            t.linear(f"{p}.per_layer_projection", ple, h, "ffn")
            t.norm(f"{p}.post_per_layer_input_norm", h)
        if moe:
            t.add(f"{p}.router.proj.weight", (moe.experts, h), "other")
            t.add(f"{p}.router.scale", (h,), "norm")
            t.add(f"{p}.router.per_expert_scale", (moe.experts,), "norm")
            t.add(f"{p}.experts.gate_up_proj", (moe.experts, 2 * moe.expert_intermediate, h), "experts")
            t.add(f"{p}.experts.down_proj", (moe.experts, h, moe.expert_intermediate), "experts")
            for name in ("post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2"):
                t.norm(f"{p}.{name}", h)
        kind = NONE if shared else SLIDING if sliding and args.sliding_window else FULL
        layers.append(LayerSpec(attention=kind, q_heads=nq, kv_heads=0 if shared else nkv, head_dim_k=hd,
                                head_dim_v=hd, window=args.sliding_window if kind == SLIDING else None,
                                ffn="moe" if moe else "dense", ffn_width=moe.expert_intermediate if moe else inter))
    notes = [f"the last {n - shared_from} layers reuse earlier layers' KV cache (no cache of their own); their "
             f"k/v projections are stored, not loaded"] if shared_from < n else []
    return finish(args, t, layers, dtype_known=known, moe=moe, notes=notes, stored_tensors=tuple(stored.items))


def _per_layer(args: Args, origin: str) -> dict[int, dict[str, int]]:
    """per_layer_config: {layer index (a string key, "05"): {"head_dim": d, "num_key_value_heads": k}}."""
    out: dict[int, dict[str, int]] = {}
    for key, over in (args.per_layer_config or {}).items():
        try:
            i = int(key)
        except (TypeError, ValueError):
            raise ConfigError(f"Cannot use '{origin}': per_layer_config key {key!r:.20} is not a layer index.",
                              origin, key="per_layer_config") from None
        if not isinstance(over, dict):
            raise ConfigError(f"Cannot use '{origin}': per_layer_config[{key!r:.20}] must be an object.", origin,
                              key="per_layer_config")
        vals = {k: v for k, v in over.items() if k in ("head_dim", "num_key_value_heads")}
        if not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 65_536 for v in vals.values()):
            raise ConfigError(f"Cannot use '{origin}': per_layer_config[{key!r:.20}] sizes must be positive "
                              f"integers.", origin, key="per_layer_config")
        out[i] = vals
    return out


def _moe(args: Args, dense: int, origin: str) -> MoESpec | None:
    """enable_moe_block: routed experts beside the dense MLP (carried as the shared part)."""
    if not args.enable_moe_block:
        return None
    # Gemma4TextConfig has no defaults for these (configuration_gemma4.py:179-181): each must be given
    require_positive(args, "num_experts", "moe_intermediate_size", origin=origin)
    e, width = args.num_experts or 0, args.moe_intermediate_size or 0
    k = args.top_k_experts or args.num_experts_per_tok or e  # per token: drives speed only, never the bytes
    return MoESpec(e, k, width, shared_experts=1, shared_intermediate=dense)
