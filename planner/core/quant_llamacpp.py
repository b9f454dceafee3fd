"""llama.cpp's k-quant file types (Q4_K_M, Q5_K_S, Q3_K_L...): which block type llama-quantize gives each tensor.

Why: a "Q4_K_M" GGUF is not every matrix in Q4_K. llama-quantize (src/llama-quant.cpp
`llama_tensor_get_type`, ggml-org/llama.cpp) raises some tensors to more bits by name and layer, so sizing a
checkpoint re-quantised to Q4_K_M as pure Q4_K under-counts it by several percent. The plain block names
(`--weights-dtype q4_k`) stay what `llama-quantize --pure` writes; the file-type names below follow the mix.

The rules, for the file types here (not the IQ types, MXFP4_MOE or Falcon's own branches):
* the output matrix (`lm_head`; the token embedding when the model ties it and stores no head) -> Q6_K, Q8_0
  where its rows do not fill 256-wide blocks;
* attn_v (`v_proj`): Q3_K_M -> Q5_K for the first two, else Q4_K; Q3_K_L -> Q5_K; Q4_K_M and Q5_K_M -> Q6_K where
  `use_more_bits(i, n)` (i < n/8, i >= 7n/8, or (i - n/8) % 3 == 2, over the attn_v tensors in order); Q4_K_S ->
  Q5_K for the first four; then a 70B model (LLM_TYPE_70B; here: 80 layers, as Llama 70B has) takes Q5_K for a
  Q3_K or Q4_K attn_v, and
  an 8-expert model Q8_0 (attn_k too);
* ffn_down (`down_proj`, expert and shared-expert ones included): Q3_K_M -> Q5_K for i < n/16, else Q4_K; Q3_K_L
  -> Q5_K; Q4_K_M and Q5_K_M -> Q6_K where use_more_bits; Q4_K_S -> Q5_K for i < n/8 (i counts the ffn_down
  tensors in order; for an MoE model it is the layer index, as llama.cpp parses it from the name);
* attn_output (`o_proj`): Q3_K_M -> Q4_K, Q3_K_L -> Q5_K; an 8-expert model Q5_K for Q3_K_S/M and Q4_K_S/M;
* attn_qkv (a fused qkv): Q3_K_M/L -> Q4_K, Q4_K_M -> Q5_K, Q5_K_M -> Q6_K;
* everything else takes the file type's base block type; a row its blocks do not divide falls back as
  `quant.GGML_FALLBACK` says (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, then F16); 1-D tensors stay F32.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .spec import TensorInfo

# file type -> its base block type (llama_model_quantize_impl's `default_type`)
FILE_TYPES = {"Q3_K_S": "Q3_K", "Q3_K_M": "Q3_K", "Q3_K_L": "Q3_K", "Q4_K_S": "Q4_K", "Q4_K_M": "Q4_K",
              "Q5_K_S": "Q5_K", "Q5_K_M": "Q5_K"}

_ROLES = (  # HF and GGUF spellings of the tensors llama_tensor_get_type looks for
    ("output", re.compile(r"(^|\.)(lm_head|output)\.weight$")),
    ("attn_v", re.compile(r"(\.v_proj|attn_v)\.weight$")),
    ("attn_k", re.compile(r"(\.k_proj|attn_k)\.weight$")),
    ("attn_qkv", re.compile(r"(qkv_proj|query_key_value|W_pack|c_attn|attn_qkv)\.weight$")),
    ("attn_output", re.compile(r"(self_attn\.o_proj|attention\.o_proj|attn_output)\.weight$")),
    ("ffn_down", re.compile(r"(down_proj|ffn_down[a-z_]*)(\.weight)?$")),
)


def role(name: str) -> str | None:
    """The llama.cpp tensor kind a name is (None: a tensor the rules leave at the base type)."""
    for kind, pattern in _ROLES:
        if pattern.search(name):
            return kind
    return None


def use_more_bits(i: int, n: int) -> bool:
    """llama-quant.cpp's use_more_bits lambda (C integer division)."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def block_types(tensors: Sequence[TensorInfo], file_type: str) -> list[str]:
    """The block type llama-quantize picks for each tensor of `tensors` (matrices only; the caller keeps 1-D
    tensors in F32 and applies the row-divisibility fallback)."""
    base = FILE_TYPES[file_type]
    roles = [role(t.name) if len(t.shape) >= 2 else None for t in tensors]
    has_output = "output" in roles
    n_layers = len({t.layer for t in tensors if t.layer is not None})
    experts = max((t.shape[0] for t in tensors if t.group == "experts" and len(t.shape) == 3), default=1)
    moe = any(t.group == "experts" for t in tensors)
    n_v, n_down = roles.count("attn_v"), roles.count("ffn_down")
    i_v = i_down = 0
    out: list[str] = []
    for t, kind in zip(tensors, roles, strict=True):
        new = base
        if kind == "output" or (not has_output and t.group == "embedding"):
            new = "Q6_K"
        elif kind == "attn_v":
            new = _attn_v(file_type, base, i_v, n_v, n_layers, experts)
            i_v += 1
        elif kind == "attn_k" and experts == 8:
            new = "Q8_0"
        elif kind == "ffn_down":
            i = t.layer if moe and t.layer is not None else i_down
            n = n_layers if moe else n_down
            new = _ffn_down(file_type, base, i, n)
            i_down += 1
        elif kind == "attn_output":
            new = _attn_output(file_type, base, experts)
        elif kind == "attn_qkv":
            new = {"Q3_K_M": "Q4_K", "Q3_K_L": "Q4_K", "Q4_K_M": "Q5_K", "Q5_K_M": "Q6_K"}.get(file_type, base)
        out.append(new)
    return out


def _attn_v(ft: str, base: str, i: int, n: int, n_layers: int, experts: int) -> str:
    new = base
    if ft == "Q3_K_M":
        new = "Q5_K" if i < 2 else "Q4_K"
    elif ft == "Q3_K_L":
        new = "Q5_K"
    elif ft in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, n):
        new = "Q6_K"
    elif ft == "Q4_K_S" and i < 4:
        new = "Q5_K"
    if n_layers == 80 and new in ("Q3_K", "Q4_K"):  # LLM_TYPE_70B: attn_v is 8x smaller than attn_q there
        new = "Q5_K"
    return "Q8_0" if experts == 8 else new


def _ffn_down(ft: str, base: str, i: int, n: int) -> str:
    if ft == "Q3_K_M":
        return "Q5_K" if i < n // 16 else "Q4_K"
    if ft == "Q3_K_L":
        return "Q5_K"
    if ft in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, n):
        return "Q6_K"
    if ft == "Q4_K_S" and i < n // 8:
        return "Q5_K"
    return base


def _attn_output(ft: str, base: str, experts: int) -> str:
    if experts == 8:
        return "Q5_K" if ft in ("Q3_K_S", "Q3_K_M", "Q4_K_S", "Q4_K_M") else base
    return {"Q3_K_M": "Q4_K", "Q3_K_L": "Q5_K"}.get(ft, base)
