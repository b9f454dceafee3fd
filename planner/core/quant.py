"""Re-size a tensor inventory under a quantisation scheme.

Why one module: a pre-quantised checkpoint described only by its config
(`quantization_config`: fp8 with block scales, MXFP4, GPTQ/AWQ, bitsandbytes) and a
user's `--weights-dtype` override are the same operation: replace each
quantisable matrix by the tensors that format really stores (packed weights +
scales + zeros), with the layouts of the public formats, and keep the rest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from . import dtypes, memo, quant_llamacpp
from .errors import UsageError
from .quant_names import aliases, module_of, skipped
from .spec import QUANTISABLE_GROUPS, TensorInfo, make_tensor

_ROUTER = re.compile(r"\.(gate|router)\.weight$|\.router\.|shared_expert_gate")


@dataclass(frozen=True)
class Scheme:
    """A weight format: `kind` selects the layout; `group_size` for int4 groups / fp8 blocks."""

    name: str
    kind: str  # float | fp8 | int8 | int4 | nf4 | mxfp4 | ggml | ggml_mix | ct_packed | mlx_affine
    group_size: int = 128
    fmt: str = "BF16"  # float kind: target float format; ggml kind: the block type
    keep_dtype: str = "BF16"  # what non-quantised tensors are kept in
    block_2d: bool = False  # fp8 with [block, block] scales (DeepSeek-V3 style)
    skip: tuple[str, ...] = ()  # fnmatch patterns of modules left unquantised
    g_idx: bool = False  # GPTQ: an int32 group index per input column is stored (AutoGPTQ/GPTQModel QuantLinear)
    double_quant: bool = False  # bitsandbytes bnb_4bit_use_double_quant: absmax itself 8-bit + nested fp32 scales
    bnb_state: bool = False  # a saved bitsandbytes checkpoint: each 4-bit weight stores its quant_state json too
    pack_bits: int = 4  # compressed-tensors pack-quantized: bits per packed weight
    zero_point: bool = False  # compressed-tensors asymmetric: packed zero points are stored too
    # per-module formats (quant_checkpoint.py): rules resolved by module name; keep_dtype "" keeps each
    # unquantised tensor in the dtype it was given
    rules: tuple[Rule, ...] = ()
    substring_skip: bool = False  # ModelOpt: an exclude entry also matches as a substring (vLLM is_layer_excluded)
    global_scale: bool = False  # fp4_packed: one fp32 global scale per module (NVFP4 tensor_group)
    input_scale: bool = False  # a stored static activation scale per module
    names: str = "ct"  # fp4_packed tensor names: "ct" (weight_packed...) or "modelopt" (weight, weight_scale_2)
    strategy: str = "channel"  # scaled kind: tensor | channel | group | block
    block: tuple[int, int] = (0, 0)  # scaled kind, strategy block: [rows, cols] per scale
    scale_dtype: str = ""  # scaled kind: "" = the model's dtype (compressed-tensors initialize.py)


@dataclass(frozen=True)
class Rule:
    """One weights scheme and the modules it targets: "Linear" (every quantisable matrix), `re:` patterns
    (compressed-tensors matches them with re.match on the module name), or module names (`exact`: the
    ModelOpt MIXED_PRECISION per-layer list, where per-expert names stand for the fused expert tensors)."""

    targets: tuple[str, ...]
    scheme: Scheme
    exact: bool = False


SCHEMES = ("bf16", "fp16", "fp32", "fp8", "int8", "int4", "nf4", "mxfp4",
           "q8_0", "q6_k", "q5_k", "q5_0", "q5_1", "q4_k", "q4_0", "q4_1", "q3_k", "q2_k",
           "q5_k_m", "q5_k_s", "q4_k_m", "q4_k_s", "q3_k_l", "q3_k_m", "q3_k_s")


def parse_scheme(name: str, *, group_size: int = 128) -> Scheme:
    """User spelling (`int4`, `fp8`, `nf4`, `q4_k`, `bf16`...) -> Scheme.

    Memoised by value (a Scheme is frozen): a fleet report parses the same few spellings ~40k times.

    Raises:
        UsageError: unknown scheme or a group size that is not a positive integer.
    """
    return _parse_scheme(name, group_size)


@memo.cached(maxsize=256)
def _parse_scheme(name: str, group_size: int) -> Scheme:
    if group_size < 1:
        raise UsageError(f"Cannot use --group-size {group_size}: it must be a positive integer.")
    key = name.strip().lower().replace("-", "_")
    if key in ("bf16", "bfloat16", "fp16", "f16", "float16", "fp32", "f32", "float32"):
        fmt = dtypes.canonical(key)
        return Scheme(key, "float", fmt=fmt, keep_dtype=fmt)
    if key in ("fp8", "f8", "float8", "fp8_e4m3"):
        return Scheme("fp8", "fp8", group_size)
    if key in ("int8", "w8a16", "w8a8"):
        return Scheme("int8", "int8", group_size)
    if key in ("int4", "gptq", "awq", "w4a16"):
        return Scheme("int4", "int4", group_size, keep_dtype="F16")
    if key in ("nf4", "bnb4", "bitsandbytes"):
        return Scheme("nf4", "nf4", 64)
    if key == "mxfp4":
        return Scheme("mxfp4", "mxfp4", 32)
    if key.upper() in dtypes.FORMATS and dtypes.FORMATS[key.upper()].block_elems > 1:
        return Scheme(key, "ggml", fmt=key.upper(), keep_dtype="F16")  # every matrix alike (llama-quantize --pure)
    if key.upper() in quant_llamacpp.FILE_TYPES:  # a llama.cpp file type: llama-quantize's per-tensor mix
        return Scheme(key, "ggml_mix", fmt=quant_llamacpp.FILE_TYPES[key.upper()], keep_dtype="F16")
    raise UsageError(f"Cannot use weights dtype '{name}': unknown (expected one of {', '.join(SCHEMES)}).")


_EXPERT = re.compile(r"\.experts\.\d+\.(gate_proj|up_proj|w1|w3)$")
_EXPERT_DOWN = re.compile(r"\.experts\.\d+\.(down_proj|w2)$")


def _fused_name(module: str) -> str:
    """A per-expert module name as the fused 3-D tensor it belongs to in the inventory."""
    return _EXPERT_DOWN.sub(".experts.down_proj", _EXPERT.sub(".experts.gate_up_proj", module))


def _targets(rule: Rule, module: str, t: TensorInfo) -> bool:
    names = aliases(module)  # a multimodal checkpoint's `re:` targets name its text layers its own way
    for target in rule.targets:
        if target.startswith("re:"):
            try:
                if any(re.match(target[3:], m) for m in names):
                    return True
            except re.error:
                continue
        elif (target == "Linear" or (target.endswith("MoE") and t.group == "experts") or target in names
              or (not rule.exact and module.endswith("." + target))):
            return True
    return False


def rule_for(t: TensorInfo, s: Scheme, exact_names: dict[int, frozenset[str]] | None = None) -> Scheme | None:
    """The scheme that quantises tensor `t` under per-module scheme `s` (None: left as stored)."""
    module = module_of(t.name)
    if skipped(t.name, s.skip, s.substring_skip):
        return None
    for i, rule in enumerate(s.rules):
        if rule.exact and exact_names is not None:
            if any(m in exact_names[i] for m in aliases(module)) and quantisable(t, rule.scheme):
                return rule.scheme
        elif _targets(rule, module, t) and quantisable(t, rule.scheme):
            return rule.scheme
    return None


def quantisable(t: TensorInfo, scheme: Scheme) -> bool:
    """Matrices of attention/FFN/experts/recurrent projections, minus routers and skipped modules.

    MLX (kind "mlx_affine") quantises every module with `to_quantized` (Linear, Embedding, SwitchLinear: routers,
    embeddings and the head too) whose input width the group divides: mlx_lm/utils.py:866-870 @ d78bf58
    (quantize_model's wrapped_predicate); convolutions and norms have no `to_quantized`. A vision tower stays in
    the model dtype: mlx-lm drops it (qwen3_5.py:430), mlx-vlm's convert skips every multimodal module
    (convert.py:309-311 @ 9b13f52, utils.py:538 skip_multimodal_module; "legacy" exports that quantised it are
    what its loader's skip_vision handles, utils.py:919-923). Two Qwen3.5 MLX VLM exports: exact to the byte and
    within 1.5 KB with the tower in bf16, -2.2% and -2.9% with it quantised."""
    if scheme.kind == "mlx_affine":
        linear = t.group in _MLX_GROUPS or (t.group == "other" and bool(_ROUTER.search(t.name)))
        return (linear and len(t.shape) >= 2 and t.shape[-1] % scheme.group_size == 0
                and not t.name.endswith("bias") and not skipped(t.name, scheme.skip))
    return (t.group in QUANTISABLE_GROUPS and len(t.shape) >= 2 and t.shape[-1] >= 16
            and not t.name.endswith("bias") and not _ROUTER.search(t.name) and not skipped(t.name, scheme.skip))


_MLX_GROUPS = QUANTISABLE_GROUPS | {"embedding", "lm_head"}


_TORCH_DTYPE = {"F16": "float16", "BF16": "bfloat16", "F32": "float32"}


def _bnb_state_len(t: TensorInfo, s: Scheme) -> int:
    """Bytes of the uint8 `quant_state.bitsandbytes__nf4` tensor a bitsandbytes 4-bit weight saves beside itself.

    bitsandbytes functional.py QuantState.as_dict(packed=True) @ 8b3c0f3 keeps the non-tensor items
    {quant_type, blocksize, dtype (str(dtype).strip("torch.")), shape} (+ nested_blocksize, nested_dtype,
    nested_offset under double quant) and utils.py pack_dict_to_tensor stores json.dumps(...) as uint8.
    The nested offset is a float of the data (its repr, not its value, sets the length): a 19-character
    repr is assumed, off by a few bytes per tensor at most.
    """
    state: dict[str, object] = {"quant_type": "nf4", "blocksize": s.group_size or 64,
                                "dtype": _TORCH_DTYPE.get(t.dtype, "float16"), "shape": list(t.shape)}
    if s.double_quant:
        state.update({"nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 0.01234567890123456})
    return len(json.dumps(state).encode())


def quantise_tensor(t: TensorInfo, s: Scheme) -> list[TensorInfo]:
    """The tensors format `s` stores for matrix `t` ([..., out, in], HF Linear layout)."""
    *lead_dims, d_out, d_in = t.shape
    base = t.name[: -len(".weight")] if t.name.endswith(".weight") else t.name
    lead = tuple(lead_dims)
    ceil = lambda a, b: -(-a // b)  # noqa: E731
    if s.kind == "fp8":
        # weight e4m3 + fp32 scales: per [block x block] tile (DeepSeek-V3) or per output row
        scale = (*lead, block_rows(t.name, d_out, s.group_size), ceil(d_in, s.group_size)) if s.block_2d \
            else (*lead, d_out, 1)
        return [make_tensor(f"{base}.weight", t.shape, "F8_E4M3", t.group),
                make_tensor(f"{base}.weight_scale_inv", scale, "F32", t.group)]
    if s.kind == "int8":
        # W8 per output channel + fp32 scale (bitsandbytes SCB / compressed-tensors channel)
        return [make_tensor(f"{base}.weight", t.shape, "I8", t.group),
                make_tensor(f"{base}.SCB", (*lead, d_out), "F32", t.group)]
    if s.kind == "int4":
        # GPTQ/AWQ: qweight int32 packs 8 weights; per group of g inputs: fp16 scale + 4-bit zero
        g = ceil(d_in, s.group_size) if s.group_size else 1
        out = [make_tensor(f"{base}.qweight", (*lead, ceil(d_in, 8), d_out), "I32", t.group),
               make_tensor(f"{base}.qzeros", (*lead, g, ceil(d_out, 8)), "I32", t.group),
               make_tensor(f"{base}.scales", (*lead, g, d_out), "F16", t.group)]
        if s.g_idx:
            out.append(make_tensor(f"{base}.g_idx", (*lead, d_in), "I32", t.group))
        return out
    if s.kind == "nf4":
        # bitsandbytes 4-bit: two weights per byte + fp32 absmax per 64-weight block + 16-entry code
        n = t.numel
        blocks = ceil(n, 64)
        # a saved checkpoint also stores the quant_state json (uint8); loading parses it, nothing stays resident
        state = [make_tensor(f"{base}.weight.quant_state.bitsandbytes__nf4", (_bnb_state_len(t, s),), "U8",
                             t.group)] if s.bnb_state else []
        if s.double_quant:
            # absmax 8-bit, re-quantised in blocks of 256 with fp32 nested_absmax, a 256-entry nested_quant_map
            # and the fp32 offset (bitsandbytes QuantState.as_dict)
            return [make_tensor(f"{base}.weight", (ceil(n, 2), 1), "U8", t.group),
                    make_tensor(f"{base}.weight.absmax", (blocks,), "U8", t.group),
                    make_tensor(f"{base}.weight.nested_absmax", (ceil(blocks, 256),), "F32", t.group),
                    make_tensor(f"{base}.weight.nested_quant_map", (256,), "F32", t.group),
                    make_tensor(f"{base}.weight.quant_map", (16,), "F32", t.group), *state]
        return [make_tensor(f"{base}.weight", (ceil(n, 2), 1), "U8", t.group),
                make_tensor(f"{base}.weight.absmax", (blocks,), "F32", t.group),
                make_tensor(f"{base}.weight.quant_map", (16,), "F32", t.group), *state]
    if s.kind == "ct_packed":
        # compressed-tensors: 32 / bits weights per int32; scale per group (0: per output channel)
        g = ceil(d_in, s.group_size) if s.group_size else 1
        out = [make_tensor(f"{base}.weight_packed", (*lead, d_out, ceil(d_in * s.pack_bits, 32)), "I32", t.group),
               make_tensor(f"{base}.weight_scale", (*lead, d_out, g), t.dtype, t.group),
               make_tensor(f"{base}.weight_shape", (2,), "I64", t.group)]
        if s.zero_point:
            out.append(make_tensor(f"{base}.weight_zero_point", (*lead, ceil(d_out * s.pack_bits, 32), g), "I32",
                                   t.group))
        return out
    if s.kind == "mxfp4":
        # OCP MX: 16 bytes of e2m1 pairs + one e8m0 scale byte per 32 weights (17 B / 32)
        blocks = ceil(d_in, 32)
        return [make_tensor(f"{base}_blocks", (*lead, d_out, blocks, 16), "U8", t.group),
                make_tensor(f"{base}_scales", (*lead, d_out, blocks), "U8", t.group)]
    if s.kind == "mlx_affine":
        # mx.quantize, affine mode (mlx python/mlx/nn/layers/quantized.py @ 29a620c, QuantizedLinear.from_linear
        # and QuantizedEmbedding.from_embedding: weight, scales, biases = mx.quantize(w, group_size, bits)): 32 / bits weights per uint32, one scale and one bias per group
        # of inputs, both in the weight's float dtype.  # bytes = out x in x bits/8 + 2 x out x in/g x dtype
        groups = ceil(d_in, s.group_size)
        return [make_tensor(f"{base}.weight", (*lead, d_out, ceil(d_in * s.pack_bits, 32)), "U32", t.group),
                make_tensor(f"{base}.scales", (*lead, d_out, groups), t.dtype, t.group),
                make_tensor(f"{base}.biases", (*lead, d_out, groups), t.dtype, t.group)]
    if s.kind == "fp4_packed":
        return _fp4_packed(t, s, base, lead, d_out, d_in)
    if s.kind == "scaled":
        return _scaled(t, s, base, lead, d_out, d_in)
    if s.kind == "ggml":
        return [make_tensor(t.name, t.shape, s.fmt, t.group)]
    raise UsageError(f"Cannot quantise with scheme '{s.name}'.")


def block_rows(name: str, d_out: int, block: int) -> int:
    """Rows of a 2-D block-scale grid. A fused `gate_up_proj` stands for two checkpoint matrices (each expert's
    gate_proj and up_proj, as DeepSeek-V3 / Qwen3 FP8 ship them: one weight_scale_inv
    [ceil(inter / block), ceil(hidden / block)] per projection per expert), so its grid is two grids:
    2 x ceil(inter / block), not ceil(2 inter / block), when the block does not divide the width."""
    if name.endswith("gate_up_proj") or name.endswith("gate_up_proj.weight"):
        return 2 * -(-(d_out // 2) // block)
    return -(-d_out // block)


def _fp4_packed(t: TensorInfo, s: Scheme, base: str, lead: tuple[int, ...], d_out: int,
                d_in: int) -> list[TensorInfo]:
    """NVFP4 / MXFP4: two e2m1 weights per uint8 + one fp8 scale per group (+ fp32 global/input scales).

    # bytes = out x in/2 + out x ceil(in/group) (+ 4 per global scale, + 4 per input scale)"""
    ceil = -(-d_in // s.group_size)
    mo = s.names == "modelopt"
    out = [make_tensor(f"{base}.weight" if mo else f"{base}.weight_packed", (*lead, d_out, -(-d_in // 2)), "U8",
                       t.group),
           make_tensor(f"{base}.weight_scale", (*lead, d_out, ceil), "F8_E4M3", t.group)]
    if s.global_scale:
        out.append(make_tensor(f"{base}.weight_scale_2" if mo else f"{base}.weight_global_scale", (*lead, 1), "F32",
                               t.group))
    if s.input_scale:
        out.append(make_tensor(f"{base}.input_scale" if mo else f"{base}.input_global_scale", (*lead, 1), "F32",
                               t.group))
    return out


def _scaled(t: TensorInfo, s: Scheme, base: str, lead: tuple[int, ...], d_out: int, d_in: int) -> list[TensorInfo]:
    """fp8 / int8 weights of the same shape + a scale shaped by the strategy (+ zero point, input scale)."""
    sd = s.scale_dtype or t.dtype
    if s.strategy == "tensor":
        scale: tuple[int, ...] = (*lead, 1)
    elif s.strategy == "group" and s.group_size:
        scale = (*lead, d_out, -(-d_in // s.group_size))
    elif s.strategy == "block" and all(s.block):
        scale = (*lead, block_rows(t.name, d_out, s.block[0]), -(-d_in // s.block[1]))
    else:
        scale = (*lead, d_out, 1)
    out = [make_tensor(f"{base}.weight", t.shape, s.fmt, t.group), make_tensor(f"{base}.weight_scale", scale, sd,
                                                                                t.group)]
    if s.zero_point:
        out.append(make_tensor(f"{base}.weight_zero_point", scale, "I8", t.group))
    if s.input_scale:
        out.append(make_tensor(f"{base}.input_scale", (*lead, 1), sd, t.group))
    return out


def _exact_names(s: Scheme) -> dict[int, frozenset[str]]:
    """MIXED_PRECISION per-layer names, per-expert names folded onto the fused expert tensors."""
    return {i: frozenset(_fused_name(n) for n in r.targets) for i, r in enumerate(s.rules) if r.exact}


def apply(tensors: Iterable[TensorInfo], s: Scheme) -> tuple[TensorInfo, ...]:
    """Inventory under scheme `s`: quantisable matrices converted, other float tensors in keep_dtype."""
    if s.kind == "ggml_mix":
        listed = tuple(tensors)
        return tuple(_ggml(t, fmt) for t, fmt in zip(listed, quant_llamacpp.block_types(listed, s.name.upper()),
                                                        strict=True))
    out: list[TensorInfo] = []
    exact = _exact_names(s) if s.kind == "per_module" else None
    for t in tensors:
        if s.kind == "per_module":
            r = rule_for(t, s, exact)
            out.extend(quantise_tensor(t, r) if r is not None else [t])
        elif s.kind == "float":
            out.append(_as(t, s.fmt))
        elif s.kind == "ggml":
            out.append(_ggml(t, s.fmt))
        elif quantisable(t, s):
            out.extend(quantise_tensor(t, s))
        else:
            out.append(_as(t, s.keep_dtype))
    return tuple(out)


# llama-quantize's fallback for a row length the 256-wide k-quant/i-quant blocks do not divide
# (src/llama-quant.cpp llama_tensor_get_type, `convert_incompatible_tensor`): a 32-wide type of about
# the same size; F16 only when even that does not divide the row (Qwen2.5-72B's 29568-wide FFN rows
# take Q5_0 at Q4_K, not F16).
GGML_FALLBACK = {"TQ1_0": "Q4_0", "TQ2_0": "Q4_0", "IQ2_XXS": "IQ4_NL", "IQ2_XS": "IQ4_NL", "IQ2_S": "IQ4_NL",
                 "IQ3_XXS": "IQ4_NL", "IQ3_S": "IQ4_NL", "IQ1_S": "IQ4_NL", "IQ1_M": "IQ4_NL", "Q2_K": "IQ4_NL",
                 "Q3_K": "IQ4_NL", "IQ4_XS": "IQ4_NL", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}


def _ggml(t: TensorInfo, fmt: str) -> TensorInfo:
    """llama-quantize: every matrix whose rows fill whole blocks (token_embd and output included)
    takes the block type, else its fallback type (GGML_FALLBACK), else f16; 1-D tensors (norms,
    biases) stay f32."""
    dtype = _ggml_dtype(t, fmt)
    return t if dtype is None else make_tensor(t.name, t.shape, dtype, t.group)


def _ggml_dtype(t: TensorInfo, fmt: str) -> str | None:
    """The format _ggml stores `t` in (None: as it is)."""
    if not dtypes.FORMATS[t.dtype].is_float:
        return None
    if len(t.shape) < 2:
        return _as_dtype(t, "F32")
    for cand in (fmt, GGML_FALLBACK.get(fmt)):
        if cand and t.shape[-1] % dtypes.FORMATS[cand].block_elems == 0:
            return cand
    return _as_dtype(t, "F16")


def _as(t: TensorInfo, fmt: str) -> TensorInfo:
    """`t` stored as float format `fmt`; integer tensors (packed weights, indices) stay as they are."""
    dtype = _as_dtype(t, fmt)
    return t if dtype is None else make_tensor(t.name, t.shape, dtype, t.group)


def _as_dtype(t: TensorInfo, fmt: str) -> str | None:
    """The format _as stores `t` in (None: as it is)."""
    if not dtypes.FORMATS[t.dtype].is_float or t.dtype == fmt:
        return None
    return fmt


ONE_TO_ONE_KINDS = ("float", "ggml")  # schemes whose apply maps each tensor to one tensor of the same name


def resized(t: TensorInfo, s: Scheme) -> tuple[str, int]:
    """(format, bytes) `apply` stores `t` as under a one-tensor-in, one-tensor-out scheme (ONE_TO_ONE_KINDS),
    without building the tensor.

    Why: a fleet report tries each scheme of an engine's weights ladder on every target that does not fit
    as stored, and a rejected scheme needs only the bytes per layer and group (fits/split.py) and per format
    (fits/memory.py), not a new inventory of every tensor (issue #33). Equal to apply's by construction: the
    same format choice (tests/test_quant_resized.py).
    """
    if s.kind == "float":
        dtype = _as_dtype(t, s.fmt)
    elif s.kind == "ggml":
        dtype = _ggml_dtype(t, s.fmt)
    else:
        raise ValueError(f"resized: scheme kind {s.kind} maps a tensor to several (use apply)")
    if dtype is None:
        return t.dtype, t.nbytes
    return dtypes.canonical(dtype), dtypes.nbytes(dtype, t.numel)
