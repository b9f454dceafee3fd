"""Storage formats and their exact sizes: one table for safetensors and GGUF.

Why a table: every byte count in the ledger (headers, config-derived tensors,
quantisation overrides, KV cache types) goes through `nbytes(dtype, numel)` so a
block-quantised type is sized by its real block layout (llama.cpp ggml-common.h
block structs), never by a rounded bits-per-weight.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import UsageError


@dataclass(frozen=True)
class Format:
    """A storage format: `block_bytes` bytes hold `block_elems` elements."""

    name: str
    block_elems: int
    block_bytes: int
    is_float: bool = True

    def nbytes(self, numel: int) -> int:
        # bytes = ceil(numel / block) * block_bytes  (rows are padded to whole blocks)
        blocks = -(-numel // self.block_elems)
        return blocks * self.block_bytes


def _f(name: str, elems: int, nbytes: int, is_float: bool = True) -> Format:
    return Format(name, elems, nbytes, is_float)


# safetensors dtype names (safetensors/src/tensor.rs Dtype) and ggml types
# (ggml/include/ggml.h ggml_type; block sizes from ggml-common.h).
FORMATS: dict[str, Format] = {f.name: f for f in [
    _f("F64", 1, 8), _f("F32", 1, 4), _f("F16", 1, 2), _f("BF16", 1, 2),
    _f("F8_E4M3", 1, 1), _f("F8_E5M2", 1, 1), _f("F8_E8M0", 1, 1), _f("F4", 2, 1),
    _f("I64", 1, 8, False), _f("I32", 1, 4, False), _f("I16", 1, 2, False), _f("I8", 1, 1, False),
    _f("U64", 1, 8, False), _f("U32", 1, 4, False), _f("U16", 1, 2, False), _f("U8", 1, 1, False),
    _f("BOOL", 1, 1, False),
    # ggml block types: (elements per block, bytes per block)
    _f("Q4_0", 32, 18), _f("Q4_1", 32, 20), _f("Q5_0", 32, 22), _f("Q5_1", 32, 24),
    _f("Q8_0", 32, 34), _f("Q8_1", 32, 36),
    _f("Q2_K", 256, 84), _f("Q3_K", 256, 110), _f("Q4_K", 256, 144), _f("Q5_K", 256, 176),
    _f("Q6_K", 256, 210), _f("Q8_K", 256, 292),
    _f("IQ2_XXS", 256, 66), _f("IQ2_XS", 256, 74), _f("IQ2_S", 256, 82), _f("IQ3_XXS", 256, 98),
    _f("IQ3_S", 256, 110), _f("IQ1_S", 256, 50), _f("IQ1_M", 256, 56), _f("IQ4_NL", 32, 18),
    _f("IQ4_XS", 256, 136), _f("TQ1_0", 256, 54), _f("TQ2_0", 256, 66),
    _f("MXFP4", 32, 17),
    # block_nvfp4: 4 UE4M3 scales + 32 B of 4-bit quants per 64; block_q1_0: f16 d + 16 B per 128
    # (ggml-common.h; gguf-py GGML_QUANT_SIZES agrees).
    _f("NVFP4", 64, 36), _f("Q1_0", 128, 18),
    _f("I8_GGML", 1, 1, False),
]}

# Friendly names users type (CLI, TOML) -> canonical format names.
ALIASES = {
    "f64": "F64", "float64": "F64", "fp32": "F32", "f32": "F32", "float32": "F32", "float": "F32",
    "fp16": "F16", "f16": "F16", "float16": "F16", "half": "F16",
    "bf16": "BF16", "bfloat16": "BF16",
    "fp8": "F8_E4M3", "f8": "F8_E4M3", "fp8_e4m3": "F8_E4M3", "float8_e4m3fn": "F8_E4M3",
    "fp8_e5m2": "F8_E5M2", "float8_e5m2": "F8_E5M2", "int8": "I8", "mxfp4": "MXFP4",
}


def canonical(name: str) -> str:
    """Canonical format name for a user/config/header spelling (`bf16`, `bfloat16`, `BF16`, `q8_0`)."""
    key = name.strip()
    if key in FORMATS:
        return key
    if key.lower() in ALIASES:
        return ALIASES[key.lower()]
    if key.upper() in FORMATS:
        return key.upper()
    raise UsageError(f"Cannot use dtype '{name}': unknown (expected one of "
                     f"{', '.join(sorted(set(ALIASES) | {k.lower() for k in FORMATS}))}).")


def is_known(name: str) -> bool:
    try:
        canonical(name)
    except UsageError:
        return False
    return True


def nbytes(dtype: str, numel: int) -> int:
    """Exact bytes of `numel` elements stored as `dtype` (blocks padded to whole blocks)."""
    f = FORMATS.get(dtype) or FORMATS[canonical(dtype)]
    return f.nbytes(numel)


def row_bytes(dtype: str, numel: int) -> int:
    """Bytes of one row of `numel` elements: llama.cpp `ggml_row_size` (numel must fill blocks)."""
    return nbytes(dtype, numel)
