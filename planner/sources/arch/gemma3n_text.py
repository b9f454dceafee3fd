"""Gemma 3n text model (`gemma3n_text`, the text side of Gemma 3n E2B / E4B): Gemma 3's attention with
per-layer embeddings (PLE), AltUp, LAuReL, per-layer MLP widths and shared-KV layers.

transformers modeling_gemma3n.py:
- model: embed_tokens [vocab, h] (lm_head tied); embed_tokens_per_layer [vocab_size_per_layer_input, layers x
  ple], per_layer_model_projection [layers x ple, h], per_layer_projection_norm [ple] (:1589-1602);
  altup_projections and altup_unembed_projections: altup_num_inputs - 1 square [h, h] each (:1604-1610); norm;
- per layer: q_proj / o_proj and q_norm [head_dim]; k_proj / v_proj / k_norm only where the layer keeps its own
  cache (Gemma3nTextAttention :1165-1182: the last num_kv_shared_layers reuse an earlier layer's, and the
  checkpoint's copies of theirs are dropped on load, :1615-1620: stored, not resident); four norms; a gated MLP
  of intermediate_size[i] (a list, one width per layer); AltUp (:991-995): correct_output_scale [h],
  correction_coefs [n, n], prediction_coefs [n^2, n], modality_router [n, h], router_norm [h]; LAuReL (:927-929):
  linear_left [laurel_rank, h], linear_right [h, laurel_rank], post_laurel_norm [h]; PLE per layer:
  per_layer_input_gate [ple, h], per_layer_projection [h, ple], post_per_layer_input_norm [h].
Sliding layers hold `sliding_window` tokens; shared layers cache nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import ConfigError
from ...core.spec import FULL, NONE, SLIDING, LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive


@dataclass
class Args(BaseArgs):
    """Gemma3nTextConfig defaults (E4B shapes)."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads")
    vocab_size: int = 262400
    hidden_size: int = 2048
    intermediate_size: int | list = 16384
    num_hidden_layers: int = 35
    num_attention_heads: int = 8
    num_key_value_heads: int = 2
    head_dim: int = 256
    max_position_embeddings: int = 32768
    tie_word_embeddings: bool = True
    attention_bias: bool = False
    sliding_window: int | None = 512
    layer_types: list | None = None
    vocab_size_per_layer_input: int = 262144
    hidden_size_per_layer_input: int = 256
    altup_num_inputs: int = 4
    laurel_rank: int = 64
    num_kv_shared_layers: int = 15
    # arithmetic, not shapes: AltUp's active index / clip / scale flag, the per-layer activation sparsity
    altup_active_idx: int | None = None
    altup_coef_clip: float | None = None
    altup_correct_scale: bool | None = None
    activation_sparsity_pattern: list | None = None


def widths(args: Args, origin: str) -> list[int]:
    """One MLP width per layer: intermediate_size as a list, or one integer for all."""
    n, w = args.num_hidden_layers, args.intermediate_size
    if isinstance(w, int):
        return [w] * n
    if len(w) != n or not all(isinstance(x, int) and not isinstance(x, bool) and 0 < x <= 1 << 20 for x in w):
        raise ConfigError(f"Cannot use '{origin}': key 'intermediate_size' must be an integer or {n} positive "
                          f"integers, one per layer.", origin, key="intermediate_size")
    return list(w)


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "head_dim",
                     "altup_num_inputs", origin=origin)
    h, nq, nkv, hd, n = (args.hidden_size, args.num_attention_heads, args.num_key_value_heads or
                         args.num_attention_heads, args.head_dim, args.num_hidden_layers)
    ple, alt, rank = args.hidden_size_per_layer_input or 0, args.altup_num_inputs, args.laurel_rank or 0
    mlp = widths(args, origin)
    types = args.layer_types if isinstance(args.layer_types, list) and len(args.layer_types) == n \
        else ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(n)]
    dtype, known = config_dtype(args)
    t, stored = Tensors(dtype), Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    if ple:
        t.add("model.embed_tokens_per_layer.weight", (args.vocab_size_per_layer_input, n * ple), "embedding")
        t.linear("model.per_layer_model_projection", h, n * ple, "other")
        t.norm("model.per_layer_projection_norm", ple)
    for j in range(alt - 1):
        t.linear(f"model.altup_projections.{j}", h, h, "other")
        t.linear(f"model.altup_unembed_projections.{j}", h, h, "other")
    shared_from = n - min(max(args.num_kv_shared_layers, 0), n)
    layers = []
    for i in range(n):
        p, a = f"model.layers.{i}", f"model.layers.{i}.self_attn"
        shared = i >= shared_from
        kv_t = stored if shared else t
        t.linear(f"{a}.q_proj", h, nq * hd, "attention", args.attention_bias)
        kv_t.linear(f"{a}.k_proj", h, nkv * hd, "attention", args.attention_bias)
        kv_t.linear(f"{a}.v_proj", h, nkv * hd, "attention", args.attention_bias)
        t.linear(f"{a}.o_proj", nq * hd, h, "attention", args.attention_bias)
        t.norm(f"{a}.q_norm", hd)
        kv_t.norm(f"{a}.k_norm", hd)
        for name in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            t.norm(f"{p}.{name}", h)
        t.mlp(f"{p}.mlp", h, mlp[i])
        t.add(f"{p}.altup.correct_output_scale", (h,), "norm")
        t.add(f"{p}.altup.correction_coefs.weight", (alt, alt), "other")
        t.add(f"{p}.altup.prediction_coefs.weight", (alt * alt, alt), "other")
        t.add(f"{p}.altup.modality_router.weight", (alt, h), "other")
        t.norm(f"{p}.altup.router_norm", h)
        if rank:
            t.linear(f"{p}.laurel.linear_left", h, rank, "ffn")
            t.linear(f"{p}.laurel.linear_right", rank, h, "ffn")
            t.norm(f"{p}.laurel.post_laurel_norm", h)
        if ple:
            t.linear(f"{p}.per_layer_input_gate", h, ple, "ffn")
            t.linear(f"{p}.per_layer_projection", ple, h, "ffn")
            t.norm(f"{p}.post_per_layer_input_norm", h)
        sliding = str(types[i]).startswith("sliding") and bool(args.sliding_window)
        kind = NONE if shared else SLIDING if sliding else FULL
        layers.append(LayerSpec(attention=kind, q_heads=nq, kv_heads=0 if shared else nkv, head_dim_k=hd,
                                head_dim_v=hd, window=args.sliding_window if kind == SLIDING else None,
                                ffn_width=mlp[i]))
    notes = [f"the last {n - shared_from} layers reuse earlier layers' KV cache (no cache of their own); their "
             f"k/v projections are stored, not loaded"] if shared_from < n else []
    args.intermediate_size = max(mlp)
    return finish(args, t, layers, dtype_known=known, notes=notes, stored_tensors=tuple(stored.items))
