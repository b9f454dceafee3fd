"""Load the real models the bench decodes with: local safetensors folders or .gguf files (transformers).

Why separate: loading is the only I/O in the bench. Safetensors folders go through the probe's
loader (trust_remote_code=False, use_safetensors=True); a .gguf file is dequantised by
transformers (`gguf_file=`), which is how the bench runs the real GGUF test models on CPU.
Prompts are encoded as plain text: chat templates from strangers are never rendered.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.errors import IncompatiblePair, UsageError
from ..probe import require_torch
from ..probe.acceptance import MAX_PROMPT_TOKENS, Prompt
from ..probe.real import check_local_model, load_causal_lm


def load_model(ref: str, *, device: str, dtype: str = "F32") -> tuple[Any, Any]:
    """(model, tokenizer) from a local model folder or a .gguf file.

    Raises:
        UsageError: not a local folder with safetensors weights or a .gguf file; transformers missing.
    """
    torch = require_torch("bench")
    p = Path(ref).expanduser()
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging
    except ImportError as e:
        raise UsageError("Cannot run the bench: transformers is not installed (expected it with torch). "
                         "Install it with 'pip install spec-planner[real]'.") from e
    hf_logging.disable_progress_bar()
    torch_dtype = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}[dtype]
    if p.is_file() and p.suffix == ".gguf":
        kw = {"gguf_file": p.name, "trust_remote_code": False}
        model = AutoModelForCausalLM.from_pretrained(str(p.parent), dtype=torch_dtype, **kw)
        tok = AutoTokenizer.from_pretrained(str(p.parent), **kw)
    else:
        check_local_model(p)
        model = load_causal_lm(p, device=device, dtype=dtype)
        tok = AutoTokenizer.from_pretrained(str(p), trust_remote_code=False)
    return model.to(device).eval(), tok


def encode_prompts(tokenizer: Any, prompts: Sequence[Prompt], draft_tokenizer: Any = None,
                   limit: int | None = None) -> list[list[int]]:
    """Token ids of each prompt as plain text (no chat template), capped at MAX_PROMPT_TOKENS.

    Raises:
        IncompatiblePair: the draft's tokenizer encodes a prompt differently.
    """
    out = []
    for i, p in enumerate(prompts[:limit] if limit else prompts):
        ids = list(tokenizer(p.text)["input_ids"])[-MAX_PROMPT_TOKENS:]
        if draft_tokenizer is not None and list(draft_tokenizer(p.text)["input_ids"])[-MAX_PROMPT_TOKENS:] != ids:
            raise IncompatiblePair(f"Cannot bench this pair: the draft's tokenizer encodes prompt {i} ({p.kind}) "
                                   f"differently from the target's (expected identical ids). Plain speculative "
                                   f"decoding needs a shared tokenizer; see 'planner pair'.", ["token ids"])
        if ids:
            out.append(ids)
    if not out:
        raise UsageError("Cannot bench: every prompt encoded to zero tokens.")
    return out
