"""Environment variables and tunable defaults, read in one place.

Why: tests patch one module, and every default that changes a number in a ledger
is named here with its source so reports can cite it. No other module reads
`os.environ`.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VARS_TRUE_VALUES = {"1", "ON", "YES", "TRUE"}

MiB = 1024**2
GiB = 1024**3


def _is_true(value: str | None) -> bool:
    return (value or "").strip().upper() in ENV_VARS_TRUE_VALUES


def is_offline() -> bool:
    """True when SPEC_PLANNER_OFFLINE or HF_HUB_OFFLINE asks us not to touch the network."""
    return _is_true(os.environ.get("SPEC_PLANNER_OFFLINE")) or _is_true(os.environ.get("HF_HUB_OFFLINE"))


def is_debug() -> bool:
    """SPEC_PLANNER_DEBUG=1 makes the CLI show tracebacks for planner errors."""
    return _is_true(os.environ.get("SPEC_PLANNER_DEBUG"))


def hf_token() -> str | None:
    """HF_TOKEN, passed to huggingface_hub for gated repos (None lets the hub find its own)."""
    return os.environ.get("HF_TOKEN") or None


def catalog_dir() -> Path:
    """Where the bundled catalogs live: SPEC_PLANNER_CATALOG, else `catalogs/` beside the package."""
    override = os.environ.get("SPEC_PLANNER_CATALOG")
    if override:
        return Path(override)
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "catalogs", here / "catalogs"):
        if candidate.is_dir():
            return candidate
    return here.parent / "catalogs"


# --- bounds on untrusted inputs -------------------------------------------------
# safetensors: same cap as huggingface_hub (SAFETENSORS_MAX_HEADER_LENGTH, 25 MB).
SAFETENSORS_MAX_HEADER_BYTES = 25_000_000
# JSON side files (config, generation_config, index, tokenizer_config).
JSON_MAX_BYTES = 16 * MiB
# tokenizer.json of a 262k vocabulary is ~33 MB; 64 MiB leaves room, no more.
TOKENIZER_JSON_MAX_BYTES = 64 * MiB
# The most shards an index may name before we call it implausible.
MAX_SHARDS = 10_000
# Config sanity: no real decoder has more (largest public: ~1.6T params, 128 layers).
MAX_LAYERS = 2_048
MAX_HIDDEN = 1 << 20
MAX_VOCAB = 1 << 24
MAX_CONTEXT = 1 << 28
HUB_TIMEOUT_S = 10.0

# --- engine defaults (each sourced; overridable from the CLI) -----------------
# llama.cpp: n_ubatch default 512 (common/common.h), context padded to 256
# (llama-context.cpp, GGML_PAD(n_ctx, 256)), fit margin 1024 MiB per device (common/fit.cpp).
LLAMACPP_UBATCH = 512
LLAMACPP_CTX_PAD = 256
LLAMACPP_FIT_MARGIN_BYTES = 1024 * MiB
# vLLM: KV block of 16 tokens (v1/kv_cache_interface.py), max_num_batched_tokens 2048 for the
# OpenAI server on most GPUs (8192 for the offline LLM class), gpu_memory_utilization 0.9.
VLLM_BLOCK_TOKENS = 16
VLLM_MAX_BATCHED_TOKENS = 2048
VLLM_GPU_UTILIZATION = 0.9
# SGLang: chunked prefill 2048-8192 by GPU size; we use 4096 (server_args.py default for 24-80 GB GPUs).
SGLANG_CHUNKED_PREFILL = 4096
# Runtime overhead per device, measured upstream:
#  - llama.cpp / Ollama: CUDA context + driver, ~451-456 MiB per RTX 4090 (llama.cpp PR #15860).
#  - torch CUDA context: 300-700 MiB (we take 500 MiB); transformers runs on it.
#  - vLLM non-torch memory 1.79 GiB at TP1 on A100-80G (vLLM PR #10511), plus the torch context.
#  - MLX on Metal: no separate context to speak of; the limit is the working set (machine side).
OVERHEAD_BYTES = {
    "llama.cpp": 456 * MiB,
    "transformers": 500 * MiB,
    "vllm": 1833 * MiB,  # 1.79 GiB
    "sglang": 1833 * MiB,
    "mlx": 0,
}
OVERHEAD_SOURCES = {
    "llama.cpp": "CUDA context/driver ~451-456 MiB per device (llama.cpp PR #15860)",
    "transformers": "torch CUDA context 300-700 MiB, 500 MiB assumed",
    "vllm": "vLLM non-torch memory 1.79 GiB at TP1 (vLLM PR #10511)",
    "sglang": "assumed equal to vLLM's non-torch memory (1.79 GiB)",
    "mlx": "MLX/Metal: no per-device context counted; usable share is set by the machine",
}
ENGINES = ("transformers", "vllm", "sglang", "llama.cpp", "mlx")
