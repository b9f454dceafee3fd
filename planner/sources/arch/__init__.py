"""Architecture registry: HF `model_type` -> module with `Args` and `to_spec`.

Adding a family means one file named after its model_type and its name in ARCHITECTURES (or one line in
ALIASES when an existing module already describes it).
"""

from __future__ import annotations

import dataclasses
import importlib
from types import ModuleType
from typing import Any

from ...core.errors import UnsupportedArchitecture
from .base import ArchSpec

# The model_types with a module of their own, named after the model_type: an architecture is found by its
# name, through the alias map below, as mlx-lm finds its models (`MODEL_REMAPPING = {...}`, then
# `model_type = MODEL_REMAPPING.get(model_type, model_type)` and `importlib.import_module(f"mlx_lm.models.{model_type}")`:
# ml-explore/mlx-lm mlx_lm/utils.py:47, :67, :69 @ d5385a1). A set, not a name -> name table; listed rather than
# read from the folder so that the helper modules (base, decoder, generic, towers) and the layouts found by
# class (CLASSES: eagle3, dflash) are never a model_type and nothing is imported to find one.
ARCHITECTURES: frozenset[str] = frozenset({
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text",
    "phi3", "olmo2", "deepseek_v2", "deepseek_v3", "gpt_oss", "qwen3_next", "qwen3_5_moe_text", "qwen3_5_text",
    "nemotron_h", "falcon_h1", "smollm3", "cohere", "starcoder2", "falcon", "bloom", "qwen", "chatglm",
    "persimmon", "glm4_moe_lite", "mimo", "lfm2", "minimax_m1", "kimi_linear", "llama4_text", "gemma4_text",
    "gpt2", "phi", "internlm2", "stablelm", "mamba", "jamba", "cohere2", "nemotron", "gpt_neox", "dbrx",
    "nemotron_nas", "hunyuan_v1_moe", "mimo_v2_flash", "molmo", "deepseek_v32", "bamba", "granitemoehybrid", "glm_moe_dsa",
    "zamba2", "zamba", "lfm2_moe", "glm4_moe", "apertus", "arcee", "jais2", "afmoe", "minicpm3", "youtu",
    "gpt_bigcode", "gptj", "codegen", "gpt_neo", "opt", "mpt",
    "nanochat", "aria_text", "olmo_hybrid", "lfm3", "jetmoe", "mamba2", "recurrent_gemma", "longcat_flash",
    "bailing_hybrid", "gemma3n_text", "mllama_text_model", "dots1",
})

# model_types that reuse another module's description unchanged.
ALIASES: dict[str, str] = {
    "nemotron-nas": "nemotron_nas",  # DeciLM-style Nemotron-NAS configs (block_configs): the hyphenated model_type
    "gemma3": "gemma3_text",  # only reached when a gemma3 config has no text_config
    "gemma3n": "gemma3n_text",  # likewise for Gemma 3n (its towers: towers.py)
    "kimi_k2": "deepseek_v3",
    # Mistral Small 4 (Mistral3 wrapper, text_config `mistral4`): DeepSeek-V3's keys (q/kv_lora_rank, qk_nope/rope,
    # v_head_dim, n_routed/shared_experts, first_k_dense_replace) and tensors: an MLX export's index lists q_a_proj,
    # q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, o_proj, mlp.gate, shared_experts, switch_mlp
    # per layer (tests/fixtures/fresh_r9; -0.04% of its total_size as deepseek_v3, +1.1% as a plain decoder)
    "mistral4": "deepseek_v3",
    # Sarvam's MLA MoE (transformers modeling_sarvam_mla.py): DeepSeek-V3's layers and keys (q_lora_rank null ->
    # q_proj; kv_a / kv_b, n_routed / n_shared_experts, first_k_dense_replace, a correction bias per router)
    "sarvam_mla": "deepseek_v3",
    # Sarvam's GQA MoE (modeling_sarvam_moe.py): GLM-4.5's layer (GQA with use_qk_norm per-head norms, routed +
    # shared experts under DeepSeek's keys, a correction bias, dense below first_k_dense_replace)
    "sarvam_moe": "glm4_moe",
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
    name = ALIASES.get(model_type, model_type)
    return importlib.import_module(f"{__name__}.{name}") if name in ARCHITECTURES else None


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
