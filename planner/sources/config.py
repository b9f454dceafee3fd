"""config.json -> the text tower's config dict, normalised across transformers versions.

Why: transformers v5 writes `dtype` (not `torch_dtype`) and `rope_parameters` (not
`rope_scaling`); multimodal wrappers nest the language model in `text_config`
(sometimes `llm_config` / `language_config`) and inherit some keys from the top.
Architecture modules then see one shape of dict.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import ConfigError

# Wrapper model_type -> the model_type of its text tower when text_config omits it.
WRAPPER_TEXT_TYPES = {
    "gemma3": "gemma3_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
    "qwen3_5": "qwen3_5_text",
    "gemma4": "gemma4_text",
    "mistral3": "mistral",
    "llava": "llama",
    "llava_next": "llama",
    "paligemma": "gemma",
    "mllama": "mllama_text_model",
}
_TEXT_KEYS = ("text_config", "llm_config", "language_config")
_SHAPE_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
_INHERIT = ("torch_dtype", "tie_word_embeddings", "quantization_config", "bos_token_id", "eos_token_id")


def is_nested(config: dict[str, Any]) -> bool:
    """Whether the text model sits in a wrapper's text_config (then its class defaults complete it)."""
    return any(isinstance(config.get(k), dict) for k in _TEXT_KEYS)


def _v5_keys(cfg: dict[str, Any]) -> dict[str, Any]:
    out = dict(cfg)
    if "torch_dtype" not in out and isinstance(out.get("dtype"), str):
        out["torch_dtype"] = out["dtype"]
    rp = out.get("rope_parameters")
    if isinstance(rp, dict):
        out.setdefault("rope_scaling", rp)
        if "partial_rotary_factor" in rp:
            out.setdefault("partial_rotary_factor", rp["partial_rotary_factor"])
    return out


def normalise(config: dict[str, Any], origin: str) -> tuple[dict[str, Any], dict[str, Any] | None, str]:
    """Split a raw config into (text config, vision config or None, wrapper model_type).

    Raises:
        ConfigError: the config is not an object or names no model_type anywhere.
    """
    if not isinstance(config, dict):
        raise ConfigError(f"Cannot use '{origin}': expected a JSON object.", origin)
    top = _v5_keys(config)
    wrapper = str(top.get("model_type") or "")
    text = None
    for key in _TEXT_KEYS:
        if isinstance(top.get(key), dict):
            text = _v5_keys(top[key])
            break
    if text is not None and not any(k in text for k in _SHAPE_KEYS) and any(k in top for k in _SHAPE_KEYS):
        # a stub text_config ({"model_type": "persimmon"} in Fuyu) under complete top-level keys
        text = {**{k: v for k, v in top.items() if k not in _TEXT_KEYS}, "model_type": text.get("model_type")
                or top.get("model_type")}
    elif text is None:
        text = top
    else:
        for k in _INHERIT:
            if k in top and k not in text:
                text[k] = top[k]
        if isinstance(top.get("torch_dtype"), str):
            # what is stored: transformers' save_pretrained writes the saved model's dtype (its first floating
            # parameter's, `get_parameter_dtype`) into the top-level config only, so a text_config's own dtype
            # can be the base model's (InternVideo2.5: float32 stored, llm_config bfloat16)
            text["torch_dtype"] = top["torch_dtype"]
        if not text.get("model_type") or text.get("model_type") == wrapper:
            text["model_type"] = WRAPPER_TEXT_TYPES.get(wrapper, text.get("model_type") or wrapper)
    if not text.get("model_type"):
        raise ConfigError(f"Cannot size the model from '{origin}': no 'model_type' key (is this a "
                          f"transformers config.json?).", origin, key="model_type")
    vision = next((top[k] for k in ("vision_config", "vision_tower_config") if isinstance(top.get(k), dict)),
                  None)
    return text, vision, wrapper
