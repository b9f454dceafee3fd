"""Mistral-format folders (`params.json` + `consolidated.safetensors`) -> a transformers-style config.

Why: Mistral ships many checkpoints in its own layout (mistral-inference); vLLM reads them with
`--config-format mistral` by renaming params.json keys to their HF names
(vllm transformers_utils/configs/mistral.py `_remap_general_mistral_args`). The same renaming here
lets every architecture module read them unchanged; weights still come from the headers.
"""

from __future__ import annotations

from typing import Any

# params.json key -> HF config key (vLLM's remap; the HF converter convert_mistral_weights_to_hf uses the same)
_RENAME = {
    "dim": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
    "n_kv_heads": "num_key_value_heads", "hidden_dim": "intermediate_size", "head_dim": "head_dim",
    "vocab_size": "vocab_size", "norm_eps": "rms_norm_eps", "rope_theta": "rope_theta",
    "sliding_window": "sliding_window", "max_seq_len": "max_position_embeddings",
    "max_position_embeddings": "max_position_embeddings", "tied_embeddings": "tie_word_embeddings",
}


def hf_config(params: dict[str, Any]) -> dict[str, Any]:
    """params.json -> config dict: `mistral`, or `mixtral` when a `moe` block names experts.

    Keys not in the rename table are kept under their own names (an architecture ignores what it
    does not read); `moe.num_experts` / `num_experts_per_tok` become Mixtral's names.
    """
    cfg: dict[str, Any] = {_RENAME.get(k, k): v for k, v in params.items() if k not in ("moe", "vision_encoder")}
    cfg.setdefault("tie_word_embeddings", False)
    # mistral-inference stores bf16 weights; the header (read separately) has the final word
    cfg.setdefault("torch_dtype", "bfloat16")
    cfg.setdefault("max_position_embeddings", 32768)
    # no sliding_window in params.json means none (MistralConfig's 4096 default is the v0.1 model's)
    cfg.setdefault("sliding_window", None)
    moe = params.get("moe")
    if isinstance(moe, dict) and moe.get("num_experts"):
        cfg["model_type"] = "mixtral"
        cfg["num_local_experts"] = moe.get("num_experts")
        cfg["num_experts_per_tok"] = moe.get("num_experts_per_tok", 2)
    else:
        cfg["model_type"] = "mistral"
    if isinstance(params.get("vision_encoder"), dict):
        cfg["vision_config"] = params["vision_encoder"]
    return cfg
