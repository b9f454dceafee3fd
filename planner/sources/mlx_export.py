"""Whether config.json was written by an MLX converter (mlx-lm / mlx-vlm), and so which weights it lacks.

Why: both converters save a model's decoder without its multi-token-prediction layers: mlx-lm's sanitize drops
`mtp.*` (mlx_lm/models @ d78bf58: qwen3_5.py:352, qwen3_next.py:455, nemotron_h.py:539, exaone_moe.py:330,
mimo_v2_flash.py:364, kimi_linear.py:493; glm4_moe.py:336 the MTP layer's `model.layers.N`), and mlx-vlm keeps
"the MTP draft shard ... separate from the base model" (mlx_vlm/models/qwen3_5/qwen3_5.py:146-148 @ 9b13f52), so
the index a user compares with lists no MTP layer while the config still declares one. A Qwen3.5 bf16 export
sized with its declared MTP layer came out +3.2% at high confidence.

What shows the writer without the weights: the `quantization` block only MLX writes ({group_size, bits}, mlx-lm
utils.py:858), or a vision-language wrapper saved without `vision_config`: transformers' save_pretrained always
writes the sub-config (a wrapper's __init__ builds the default one when it is absent), mlx-lm's save_config pops
it (utils.py:957) and its sanitize drops the tower with it (qwen3_5.py:430).
"""

from __future__ import annotations

from typing import Any

# a vision-language wrapper's own keys: the tokens its processor splices image features in at
_VLM_KEYS = ("image_token_id", "image_token_index", "vision_start_token_id", "video_token_id")
_TEXT_KEYS = ("text_config", "llm_config", "language_config")
_VISION_KEYS = ("vision_config", "vision_tower_config")


def mlx_export(top: dict[str, Any]) -> str | None:
    """Why this config reads as an MLX converter's (None: nothing says so)."""
    q = top.get("quantization")
    if isinstance(q, dict) and "bits" in q and "group_size" in q:
        return "an MLX `quantization` block (mlx-lm / mlx-vlm convert)"
    if (any(isinstance(top.get(k), dict) for k in _TEXT_KEYS) and any(k in top for k in _VLM_KEYS)
            and not any(k in top for k in _VISION_KEYS)):
        return "a vision-language wrapper saved without vision_config (mlx-lm save_config pops it, utils.py:957)"
    return None
