"""How far a ModelSpec can be trusted: "exact", "high" or "low", with the assumptions behind it.

Why: a user brings any model; sizing an unknown layout with the standard decoder rule prints
confident numbers that may be far off (issue #16). The level says what backs the figures:
  exact  every weight from headers (safetensors/GGUF) and every layer kind known
  high   config shapes of a registered architecture (transformers' shapes and defaults)
  low    a guess: unknown model_type, config keys that look structural but nothing reads,
         sub-configs (towers) that were ignored or approximated, packed weights not modelled
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

EXACT, HIGH, LOW = "exact", "high", "low"
LEVELS = (EXACT, HIGH, LOW)

# A key that changes shapes or layer kinds, by the words configs use for them ...
_STRUCTURAL = re.compile(
    r"layer|expert|moe|head|lora|rank|_kv|kv_|ssm|mamba|conv|state|window|chunk|block|nextn|mtp|shared|"
    r"dense|sparse|linear|hybrid|pattern|intermediate|ffn|hidden|dim$|_dim|inner|group|n_embd|n_layer|"
    r"vocab|tie_|mlp|attn|attention")
# ... unless the word only names a runtime, training or numeric setting, never a tensor's shape.
_RUNTIME = re.compile(
    r"dropout|init|eps|epsilon|_act$|^act|activation|rope|rotary|scal|temperature|softcap|softmax|"
    r"token_id|dtype|use_cache|output_|return_|torch|version|_fp32|in_fp32|fusion|fused|impl|"
    r"aux_loss|router_z|loss|jitter|capacity|norm_topk|topk_method|topk_group|n_group|routed_scaling|"
    r"renormalize|expert_group|grouped_topk|router_activation|"
    r"scoring|score|noise|gradient|checkpoint|pretraining_tp|tp_plan|pp_plan|flash|sdpa|_interval$|"
    r"multiplier|logit|theta|base$|max_position|seq_len|position|sink|bias_dropout|residual|"
    r"pad|padding|chat|prompt|_class|auto_map|architectures|name_or_path|tokenizer|sliding_window$|"
    r"use_sliding_window|max_window_layers|router_jitter|use_qk_norm|qk_layernorm|layer_norm|layernorm|"
    r"norm_type|rms_norm|initializer|problem_type|label|id2label|task|finetun|quantiz|transformers|"
    r"is_decoder|is_encoder|cross_attention|add_cross|tie_encoder|chunk_size_feed_forward|"
    r"attn_implementation|attention_type$|_attn_implementation|keys_to_ignore|num_labels|use_return|"
    r"^chunk_size$|mamba_chunk_size|use_mamba_kernels|mamba_use_mlp|pdrop")


def structural_unread(config: dict[str, Any], read: Iterable[str]) -> list[str]:
    """Keys of `config` that look structural, hold a real value, and no architecture field read.

    Example:
        >>> structural_unread({"num_experts": 8, "attention_dropout": 0.1}, ["hidden_size"])
        ['num_experts']
    """
    known = set(read)
    out = []
    for key, value in config.items():
        if key in known or key.startswith("_") or value in (None, False, 0, "", [], {}):
            continue
        if isinstance(value, dict) and key.endswith("_config"):
            continue  # sub-configs are judged as towers (see `towers`)
        if _STRUCTURAL.search(key) and not _RUNTIME.search(key):
            out.append(key)
    return out


def level(*, registered: bool, from_headers: bool, guesses: list[str]) -> str:
    """exact: headers and nothing guessed; high: registered config shapes, nothing guessed; else low."""
    if guesses or not registered:
        return LOW
    return EXACT if from_headers else HIGH
