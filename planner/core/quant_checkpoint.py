"""A pre-quantised checkpoint's `quantization_config` -> the Scheme its writer used (quant.py applies it).

fp8 (DeepSeek block scales), GPTQ/AWQ, MXFP4 (gpt-oss) and bitsandbytes are one scheme for every
quantisable matrix minus a skip list. Compressed-tensors and NVIDIA ModelOpt get per-module rules. Why: these two formats do not quantise "every Linear alike". A compressed-tensors
checkpoint (llm-compressor) lists `config_groups`, each a weights scheme with its `targets`, and an
`ignore` list (exact names or `re:` patterns); a ModelOpt export names one algorithm (NVFP4, FP8, ...)
with `exclude_modules` wildcards, or MIXED_PRECISION with an algorithm per layer. Each becomes
`quant.Rule`s (targets -> Scheme) that `quant.apply` resolves tensor by tensor, by module name.

Byte rules (what each format writes per quantised Linear [out, in]), read from the writers:
- compressed-tensors @ 52792be (neuralmagic/compressed-tensors):
  pack-quantized int4/int8: weight_packed int32, weight_scale, weight_shape (pack_quantized.py);
  nvfp4-pack-quantized / mxfp4-pack-quantized: weight_packed uint8 [out, in/2]
  (quantized_compressors/fp4_quantized.py:63-80), weight_scale fp8-e4m3 [out, in/group]
  (quantization/lifecycle/initialize.py:219-256: fp4 -> FP8_E4M3 scales), weight_global_scale fp32 [1]
  for strategy tensor_group (initialize.py:187-195; input_global_scale too when input activations are
  tensor_group, registered before the dynamic-local return);
  float-quantized / int-quantized / naive-quantized: weight fp8-e4m3 / int8 same shape, weight_scale in the
  model's dtype shaped by strategy (tensor [1], channel [out, 1], group [out, in/g], block
  [out/b0, in/b1]; initialize.py:201-273), input_scale the same way when static input activations;
  zero points are not saved for symmetric or packed schemes (compressors/quantized_compressors/base.py:128-161).
- ModelOpt, as vLLM loads it (vllm model_executor/layers/quantization/modelopt.py @ c9a5990):
  config.json `quantization_config` {quant_method: modelopt, quant_algo, ignore, group_size} or
  hf_quant_config.json {quantization: {quant_algo, exclude_modules, group_size}} (from_config);
  exclusion = exact, substring or fnmatch wildcard (is_layer_excluded); FP8: weight fp8-e4m3 + fp32
  per-tensor weight_scale and input_scale (ModelOptFp8LinearMethod.create_weights);
  FP8_PER_CHANNEL_PER_TOKEN: fp32 weight_scale [out], no input_scale; FP8_PB_WO: fp32 weight_scale
  [out/128, 1, in/128, 1]; NVFP4: the compressed-tensors NVFP4 layout under ModelOpt's names
  (weight uint8 [out, in/2], weight_scale fp8 [out, in/16], weight_scale_2 and input_scale fp32 scalars).
"""

from __future__ import annotations

from typing import Any

from .quant import Rule, Scheme


def from_quantization_config(qc: dict, model_types: tuple[str, ...] = ()) -> Scheme | None:
    """Scheme of a pre-quantised checkpoint from config.json's `quantization_config` (None: unknown).

    `model_types`: the config's own and its text model's `model_type`, which choose the MLX loader's module
    classes (`mlx`)."""
    method = str(qc.get("quant_method", "")).lower()
    if method == "modelopt":
        return modelopt(qc)
    names = qc.get("modules_to_not_convert") or qc.get("ignore") or []
    skip = tuple(s for s in (names if isinstance(names, list) else []) if isinstance(s, str))  # hostile: -1, {}
    if method == "fp8":
        # vLLM Fp8Config.from_config reads `ignored_layers` (modules kept in the model dtype). A `store_dtype`
        # other than fp8 (MiMo-V2's "mxfp4": some tensors re-packed at mxfp4_block_size) is a layout this
        # scheme does not write: not modelled, so the caller says the figure is a guess.
        if str(qc.get("store_dtype") or "fp8").lower() not in ("fp8", "e4m3", "float8_e4m3fn"):
            return None
        skip += _names(qc.get("ignored_layers"))
        block = qc.get("weight_block_size")
        if isinstance(block, list) and block and isinstance(block[0], int) and block[0] > 0:
            return Scheme("fp8", "fp8", block[0], block_2d=True, skip=skip)
        return Scheme("fp8", "fp8", skip=skip)
    if method in ("gptq", "awq"):
        bits = qc.get("bits", qc.get("w_bit", 4))
        g = qc.get("group_size", qc.get("q_group_size", 128))
        # group_size -1: one group over the whole input row (per-channel scales; AutoGPTQ QuantLinear)
        g = 0 if isinstance(g, int) and g < 0 else g if isinstance(g, int) and g > 0 else 128
        # GPTQ checkpoints (AutoGPTQ, GPTQModel, optimum) store g_idx for every layer, desc_act or not; AWQ does not
        idx = method == "gptq"
        if bits == 8:
            return Scheme("int8", "int8", g or 128, keep_dtype="F16", skip=skip)
        return Scheme("int4", "int4", g, keep_dtype="F16", skip=skip, g_idx=idx)
    if method == "mxfp4":
        return Scheme("mxfp4", "mxfp4", 32, skip=skip)
    if method == "compressed-tensors":
        return compressed_tensors(qc)
    if not method and "group_size" in qc and "bits" in qc:
        return mlx(qc, raw_router=bool(_MLX_RAW_ROUTER.intersection(model_types)))
    if method == "bitsandbytes":
        names = qc.get("llm_int8_skip_modules") or []
        skip += tuple(s for s in (names if isinstance(names, list) else []) if isinstance(s, str))
        if qc.get("load_in_4bit") or qc.get("_load_in_4bit"):
            return Scheme("nf4", "nf4", 64, skip=skip, double_quant=qc.get("bnb_4bit_use_double_quant") is True,
                          bnb_state=True)
        if qc.get("load_in_8bit") or qc.get("_load_in_8bit"):
            return Scheme("int8", "int8", skip=skip)
    return None


_CT_FP4 = ("nvfp4-pack-quantized", "mxfp4-pack-quantized")
_CT_NAIVE = ("float-quantized", "int-quantized", "naive-quantized")


def _names(value: Any) -> tuple[str, ...]:
    """A list of module names / patterns, dropping anything that is not a string (hostile configs)."""
    return tuple(s for s in value if isinstance(s, str)) if isinstance(value, list) else ()


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def compressed_tensors(qc: dict) -> Scheme | None:
    """llm-compressor `quantization_config` -> per-module rules (None: a group we cannot size)."""
    groups = qc.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        return None
    top_fmt = str(qc.get("format") or "")
    rules: list[Rule] = []
    for g in groups.values():
        if not isinstance(g, dict) or not isinstance(g.get("weights"), dict):
            return None
        scheme = _ct_weights(g["weights"], g.get("input_activations"), str(g.get("format") or top_fmt))
        if scheme is None:
            return None
        rules.append(Rule(targets=_names(g.get("targets")) or ("Linear",), scheme=scheme))
    # a module named or matched by pattern takes that group before a class target ("Linear"), as
    # compressed-tensors resolves overlapping targets (utils/match.py: names and re: before classes)
    rules.sort(key=lambda r: all(not t.startswith("re:") and "." not in t and t[:1].isupper() for t in r.targets))
    name = "+".join(dict.fromkeys(r.scheme.name for r in rules))
    return Scheme(name, "per_module", rules=tuple(rules), skip=_names(qc.get("ignore")), keep_dtype="")


def _ct_weights(w: dict, acts: Any, fmt: str) -> Scheme | None:
    """One config group's weights QuantizationArgs -> the Scheme its compressor writes."""
    bits, kind = w.get("num_bits"), str(w.get("type") or "int")
    strategy = str(w.get("strategy") or "tensor")
    g = _int(w.get("group_size"))
    static_in = isinstance(acts, dict) and acts.get("dynamic") is False
    in_global = isinstance(acts, dict) and str(acts.get("strategy")) == "tensor_group" and acts.get("dynamic") is not True
    if kind == "float" and bits == 4 and (fmt in _CT_FP4 or not fmt):
        mx = fmt == "mxfp4-pack-quantized" or strategy == "group"
        return Scheme("mxfp4" if mx else "nvfp4", "fp4_packed", g or (32 if mx else 16),
                      global_scale=strategy == "tensor_group", input_scale=in_global)
    if fmt == "pack-quantized" and kind == "int" and bits in (4, 8):
        return Scheme(f"ct-int{bits}", "ct_packed", g if strategy == "group" else 0, pack_bits=bits,
                      zero_point=w.get("symmetric") is False)
    if bits == 8 and kind in ("float", "int") and (fmt in _CT_NAIVE or not fmt):
        block = w.get("block_structure")
        blk = (_int(block[0]), _int(block[1])) if isinstance(block, list) and len(block) == 2 else (0, 0)
        if strategy == "block" and not all(blk):
            return None
        return Scheme("fp8" if kind == "float" else "int8", "scaled", g, fmt="F8_E4M3" if kind == "float" else "I8",
                      strategy=strategy, block=blk, input_scale=static_in,
                      zero_point=kind == "int" and w.get("symmetric") is False)
    return None


def modelopt(qc: dict) -> Scheme | None:
    """ModelOpt config (config.json's compressed-tensors-style dict, or hf_quant_config.json's
    `quantization` object) -> per-module rules (None: an algorithm not sized here)."""
    algo = str(qc.get("quant_algo") or "").upper()
    skip = _names(qc.get("exclude_modules")) or _names(qc.get("ignore"))
    group = _int(qc.get("group_size"), 16)
    if algo == "MIXED_PRECISION":
        layers = qc.get("quantized_layers")
        if not isinstance(layers, dict) or not layers:
            return None
        by_algo: dict[str, list[str]] = {}
        for name, spec in layers.items():
            if isinstance(name, str) and isinstance(spec, dict):
                by_algo.setdefault(str(spec.get("quant_algo") or "").upper(), []).append(name)
        rules = []
        for a, names in by_algo.items():
            scheme = _modelopt_algo(a, group)
            if scheme is None:
                return None
            rules.append(Rule(targets=tuple(names), scheme=scheme, exact=True))
        return Scheme("modelopt-mixed", "per_module", rules=tuple(rules), skip=skip, keep_dtype="", substring_skip=True)
    scheme = _modelopt_algo(algo, group)
    if scheme is None:
        return None
    return Scheme(f"modelopt-{scheme.name}", "per_module", rules=(Rule(("Linear",), scheme),), skip=skip,
                  keep_dtype="", substring_skip=True)


def _modelopt_algo(algo: str, group: int) -> Scheme | None:
    if algo == "NVFP4":
        return Scheme("nvfp4", "fp4_packed", group, global_scale=True, input_scale=True, names="modelopt")
    if algo == "FP8":
        return Scheme("fp8", "scaled", fmt="F8_E4M3", strategy="tensor", input_scale=True, scale_dtype="F32")
    if algo == "FP8_PER_CHANNEL_PER_TOKEN":
        return Scheme("fp8", "scaled", fmt="F8_E4M3", strategy="channel", scale_dtype="F32")
    if algo == "FP8_PB_WO":
        return Scheme("fp8", "scaled", fmt="F8_E4M3", strategy="block", block=(128, 128), scale_dtype="F32")
    return None


_MLX_EXPERTS = {"switch_mlp.gate_proj": "experts.gate_up_proj", "switch_mlp.up_proj": "experts.gate_up_proj",
                "switch_mlp.down_proj": "experts.down_proj"}


# model types whose MoE router mlx-lm / mlx-vlm keep as a raw parameter (`MoEGate.weight = mx.zeros((n_routed_experts,
# hidden))`, no `to_quantized`, so nn.quantize leaves it in the model dtype). mlx-lm @ d78bf58 mlx_lm/models/:
# deepseek.py:133, deepseek_v2.py:278, deepseek_v3.py:237, deepseek_v32.py:328, dots1.py:147, exaone_moe.py:97,
# glm4_moe.py:176, glm4_moe_lite.py:241, laguna.py:173, mimo_v2_flash.py:196, nemotron_h.py:357; kimi_k2 and
# joyai_llm_flash load deepseek_v3 (utils.py:51-52 MODEL_REMAPPING), glm_moe_dsa deepseek_v32 (glm_moe_dsa.py:7),
# kimi_k25 / kimi_vl deepseek_v3 (kimi_k25.py:11, kimi_vl.py:10), solar_open glm4_moe (solar_open.py:7).
# mlx-vlm @ 9b13f52 mlx_vlm/models/<type>/language.py the same for deepseek_vl_v2:302, glm4v_moe:204,
# llada2_moe:75, youtu_vl:204, deepseekocr:302; its mistral4 router is an nn.Linear (mistral4/language.py:163).
_MLX_RAW_ROUTER = frozenset({
    "deepseek", "deepseek_v2", "deepseek_v3", "deepseek_v32", "dots1", "exaone_moe", "glm4_moe", "glm4_moe_lite",
    "laguna", "mimo_v2_flash", "nemotron_h", "kimi_k2", "joyai_llm_flash", "glm_moe_dsa", "kimi_k25", "kimi_vl",
    "solar_open", "deepseek_vl_v2", "glm4v_moe", "llada2_moe", "youtu_vl", "deepseekocr"})


def mlx(qc: dict, raw_router: bool = False) -> Scheme | None:
    """mlx-lm's `quantization` {group_size, bits, mode, <module path>: {group_size, bits} | false} -> rules.

    mlx_lm/utils.py @ d78bf58: quantize_model (:818) writes the defaults (:858) and, for a module its
    model's quant_predicate sizes otherwise, the module's own parameters under its path (:876), then
    copies the dict to `quantization_config` (:889); load_model quantises a path listed there with its
    entry (:378-379). Only the affine mode (scales + biases) is sized; mxfp4 / nvfp4 / mxfp8 are not (None).
    A module the predicate left unquantised without saying so is not visible in the config: the header,
    when there is one, is the exact source. `raw_router`: the loader's router is a bare parameter
    (`_MLX_RAW_ROUTER`), which no quantize pass touches: kept in the model dtype.
    """
    bits, g = _int(qc.get("bits")), _int(qc.get("group_size"))
    if not bits or not g or str(qc.get("mode") or "affine") != "affine":
        return None
    rules: list[Rule] = []
    skip: list[str] = ["*.gate"] if raw_router else []
    for path, entry in qc.items():
        if not isinstance(path, str) or "." not in path:
            continue
        name = next((path[: -len(k)] + v for k, v in _MLX_EXPERTS.items() if path.endswith(k)), path)
        if entry is False:
            skip.append(name)
        elif isinstance(entry, dict):
            b, eg = _int(entry.get("bits")), _int(entry.get("group_size"), g)
            if not b or str(entry.get("mode") or "affine") != "affine":
                return None
            rules.append(Rule((name,), Scheme(f"mlx-{b}bit", "mlx_affine", eg, pack_bits=b, keep_dtype=""), exact=True))
    rules.append(Rule(("Linear",), Scheme(f"mlx-{bits}bit", "mlx_affine", g, pack_bits=bits, keep_dtype="")))
    return Scheme(f"mlx-{bits}bit-g{g}", "per_module", rules=tuple(rules), skip=tuple(skip), keep_dtype="")


def from_hf_quant_config(hq: dict) -> dict | None:
    """hf_quant_config.json -> the `quantization_config` dict vLLM builds from it (None: not ModelOpt's)."""
    q = hq.get("quantization")
    if not isinstance(q, dict):
        return None
    return {**q, "quant_method": "modelopt"}
