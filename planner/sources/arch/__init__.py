"""Architecture registry: HF `model_type` -> module with `Args` and `to_spec`.

Adding a family means one file named after its model_type and one line in
ARCHITECTURES (or ALIASES when an existing module already describes it).
"""

from __future__ import annotations

import dataclasses
import importlib
from types import ModuleType
from typing import Any

from ...core.errors import UnsupportedArchitecture
from .base import ArchSpec

ARCHITECTURES: dict[str, str] = {
    "llama": "llama",
    "mistral": "mistral",
    "mixtral": "mixtral",
    "qwen2": "qwen2",
    "qwen2_moe": "qwen2_moe",
    "qwen3": "qwen3",
    "qwen3_moe": "qwen3_moe",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3_text": "gemma3_text",
    "phi3": "phi3",
    "olmo2": "olmo2",
    "deepseek_v2": "deepseek_v2",
    "deepseek_v3": "deepseek_v3",
    "gpt_oss": "gpt_oss",
    "qwen3_next": "qwen3_next",
    "qwen3_5_moe_text": "qwen3_5_moe_text",
    "qwen3_5_text": "qwen3_5_text",
    "nemotron_h": "nemotron_h",
    "falcon_h1": "falcon_h1",
    "smollm3": "smollm3",
    "cohere": "cohere",
    "starcoder2": "starcoder2",
    "falcon": "falcon",
    "bloom": "bloom",
    "qwen": "qwen",
    "chatglm": "chatglm",
    "persimmon": "persimmon",
    "glm4_moe_lite": "glm4_moe_lite",
    "mimo": "mimo",
    "lfm2": "lfm2",
    "minimax_m1": "minimax_m1",
    "kimi_linear": "kimi_linear",
    "llama4_text": "llama4_text",
    "gemma4_text": "gemma4_text",
    "gpt2": "gpt2",
    "phi": "phi",
    "internlm2": "internlm2",
    "stablelm": "stablelm",
    "mamba": "mamba",
    "jamba": "jamba",
    "cohere2": "cohere2",
    "nemotron": "nemotron",
    "gpt_neox": "gpt_neox",
    "dbrx": "dbrx",
    "nemotron-nas": "nemotron_nas",
    "hunyuan_v1_moe": "hunyuan_v1_moe",
    "mimo_v2_flash": "mimo_v2_flash",
    "molmo": "molmo",
    "deepseek_v32": "deepseek_v32",
}

# model_types that reuse another module's description unchanged.
ALIASES: dict[str, str] = {
    "gemma3": "gemma3_text",  # only reached when a gemma3 config has no text_config
    "kimi_k2": "deepseek_v3",
    "granite": "llama",
    "olmo3": "olmo2",
    "ministral": "mistral",
    "phimoe": "mixtral",
    # VL text towers: the text side is the plain family (vision sized by towers.py)
    "qwen2_vl": "qwen2",
    "qwen2_5_vl": "qwen2",
    "qwen2_vl_text": "qwen2",
    "qwen2_5_vl_text": "qwen2",
    "qwen3_vl_text": "qwen3",
    "qwen3_vl_moe_text": "qwen3_moe",
    "granitemoe": "mixtral",
    "minimax": "minimax_m1",  # transformers' MiniMaxConfig: the same layers, planned by layer_types
    "phi-msft": "phi",  # remote-code Phi-1.5/2: PhiConfig's sizes under GPT-style names
    "phi3_v": "phi3",  # Phi-3/3.5-vision: the Phi-3 text model (its CLIP tower: towers.py)
    "internlm": "internlm2",
    "stablelm_epoch": "stablelm",  # remote-code StableLM (stable-code-3b): the same tensors
    "minimax_m2": "minimax_m1",
    "falcon_mamba": "mamba",  # FalconMamba: MambaMixer + weightless RMS norms  # all-softmax attn_type_list, q/k norms and routing bias read there  # InternLM 1: the same layout and `bias` key
    "minicpm": "llama",  # MiniCPM: Llama's tensors; scale_emb / scale_depth are scalars
    "minicpmv": "llama",  # MiniCPM-V 2: the MiniCPM LLM at top level (SigLIP + resampler: towers.py)
    "ministral3": "mistral",  # Ministral 3 text tower (sliding_window null in the configs)
    "RefinedWeb": "falcon",  # falcon-40b/180b's original remote-code config (RWConfig): falcon.py maps its keys
    "RefinedWebModel": "falcon",  # falcon-7b's original remote-code config
    "hunyuan": "hunyuan_v1_moe",  # Tencent's remote-code Hunyuan-A13B / 7B configs: the same layers
    "hunyuan_v1_dense": "hunyuan_v1_moe",  # num_experts 1: the dense branch of the same module
    "mimo_v2": "mimo_v2_flash",  # the Hub's remote-code spelling of MiMo-V2-Flash / V2.6 (hybrid_layer_pattern)
}

# `architectures` classes whose layout differs from their model_type's (a draft head saying "llama").
CLASSES: dict[str, str] = {
    "LlamaForCausalLMEagle3": "eagle3",
    "Eagle3LlamaForCausalLM": "eagle3",
    "DFlashDraftModel": "dflash",  # z-lab DFlash drafts say model_type qwen3 but ship no embedding / head
}

# Keys the standard-decoder fallback needs.
STANDARD_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")


def supported() -> list[str]:
    return sorted(set(ARCHITECTURES) | set(ALIASES))


def get_arch(model_type: str) -> ModuleType | None:
    """The module describing `model_type`, or None when it is not registered."""
    name = ARCHITECTURES.get(ALIASES.get(model_type, model_type))
    return importlib.import_module(f"{__name__}.{name}") if name else None


def derive(config: dict[str, Any], *, origin: str = "config.json",
           nested: bool = False) -> tuple[ArchSpec, str, list[str]]:
    """Config dict (text tower) -> (ArchSpec, architecture used, warnings).

    An unregistered model_type falls back to the standard decoder keys with a warning;
    if those are missing, it fails naming them.

    Raises:
        UnsupportedArchitecture: unknown model_type and standard keys missing.
        ConfigError: a key has the wrong type or an implausible value.
    """
    model_type = str(config.get("model_type") or "")
    arches = config.get("architectures")
    classes = [c for c in arches if isinstance(c, str) and c in CLASSES] if isinstance(arches, list) else []
    module = importlib.import_module(f"{__name__}.{CLASSES[classes[0]]}") if classes else get_arch(model_type)
    warnings: list[str] = []
    if module is None:
        missing = [k for k in STANDARD_KEYS if config.get(k) is None]
        if missing:
            raise UnsupportedArchitecture(model_type or "(none)", supported(), missing, origin)
        warnings.append(f"model_type '{model_type}' is not a supported architecture: sized with the standard "
                        f"decoder keys and the layer-plan / expert conventions configs share (generic.py)")
        module = importlib.import_module(f"{__name__}.generic")
        arch_name = "generic"
    else:
        arch_name = module.__name__.rsplit(".", 1)[1]
    args = module.Args.from_dict(config, origin=origin, nested=nested)
    spec = module.to_spec(args, origin)
    read = frozenset(f.name for f in dataclasses.fields(args)) | spec.read_keys
    return dataclasses.replace(spec, read_keys=read), arch_name, warnings
