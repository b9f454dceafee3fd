"""Load the real models the bench decodes with: local safetensors folders or .gguf files (transformers).

Why separate: loading is the only I/O in the bench. Safetensors folders go through the probe's
loader (trust_remote_code=False, use_safetensors=True); a .gguf file is dequantised by
transformers (`gguf_file=`), which is how the bench runs the real GGUF test models on CPU.
Prompts are encoded as plain text: chat templates from strangers are never rendered.
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.constants import REAL_EXTRA_HINT
from ..core.errors import IncompatiblePair, ModelNotFound, SourceError, UsageError
from ..probe import require_torch
from ..probe.acceptance import MAX_PROMPT_TOKENS, Prompt
from ..probe.device import available_bytes
from ..probe.real import check_local_model, check_tokenizer, load_causal_lm, load_errors, load_tokenizer
from ..sources.gguf_header import read_header as read_gguf_header
from ..sources.safetensors import read_dir_tensors


def check_model(ref: str, *, tokenizer: bool = True) -> Path:
    """The path of a model the bench can load, checked without loading any weights.

    A .gguf file must exist and have a valid GGUF header; a folder must hold config.json, readable
    safetensors headers and, unless every prompt is token ids (`tokenizer=False`), tokenizer files.
    The bench checks both models before it loads either.

    Raises:
        ModelNotFound: no such file or folder.
        UsageError: neither a folder nor a .gguf file, or a folder without config.json / safetensors.
        HeaderError: a truncated or corrupt safetensors or GGUF file.
        SourceError: a folder without tokenizer files.
    """
    p = paths.expand(ref)
    if not paths.exists(p):
        raise ModelNotFound(f"Cannot bench '{ref}': no such file or folder (expected a local model folder with "
                            f"config.json and *.safetensors, or a .gguf file). Check the path.", p)
    if p.suffix == ".gguf" and p.is_file():
        read_gguf_header(p)
        return p
    if not p.is_dir():
        raise UsageError(f"Cannot bench '{ref}': it is neither a model folder nor a .gguf file (expected a local "
                         f"folder with config.json and *.safetensors, or a .gguf file). Pass one of those.")
    check_local_model(p)
    return check_tokenizer(p) if tokenizer else p


_ITEMSIZE = {"F32": 4, "BF16": 2, "F16": 2}  # the bench loads every weight in its --dtype (GGUF de-quantised)


def weights_bytes(path: Path, dtype: str) -> int:
    """Bytes the weights of a checked model take once loaded in `dtype`: numel from the headers x itemsize.

    Why from headers: a header-only safetensors file can claim 24 GB of weights in a few kB; loading it
    would fault in every page. Counted before anything is loaded, so the bench refuses it instead.
    """
    size = _ITEMSIZE[dtype]
    if path.suffix == ".gguf":
        return sum(t.numel for t in read_gguf_header(path).tensors) * size
    found = read_dir_tensors(path)
    return sum(math.prod(shape) for _, _, shape in (found[0] if found else [])) * size


def check_memory(models: Sequence[Path], *, device: str, dtype: str) -> None:
    """Refuse before loading when the models' weights do not fit the memory free on `device`.

    Raises:
        UsageError: weights (both models, in `dtype`) over the probe's memory allowance
            (free memory x PROBE_MEMORY_FRACTION, less PROBE_MEMORY_RESERVE_BYTES).
    """
    need = sum(weights_bytes(p, dtype) for p in models)
    have = available_bytes(device)
    if need > have:
        raise UsageError(f"Cannot bench on {device}: the weights take {need:,} bytes in {dtype} (from the "
                         f"safetensors/GGUF headers), more than the {have:,} bytes free for it. Use --dtype bf16, "
                         f"a smaller pair, or a device with more memory.")


def load_model(ref: str, *, device: str, dtype: str = "F32", tokenizer: bool = True) -> tuple[Any, Any]:
    """(model, tokenizer) from a local model folder or a .gguf file; tokenizer None with `tokenizer=False`
    (token-id prompts) when the folder has no tokenizer files.

    Raises:
        UsageError: not a local folder with safetensors weights or a .gguf file; transformers missing.
        ModelNotFound, HeaderError, SourceError: see `check_model`; or transformers cannot load the model
            or its tokenizer (one line naming the file and the error).
    """
    torch = require_torch("bench")
    p = check_model(ref, tokenizer=tokenizer)
    try:
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging
    except ImportError as e:
        raise UsageError("Cannot run the bench: transformers is not installed (expected it with torch). "
                         f"Install all it needs at once: '{REAL_EXTRA_HINT}'.") from e
    hf_logging.disable_progress_bar()
    torch_dtype = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}[dtype]
    if p.suffix == ".gguf":
        # transformers de-quantises GGUF tensors under a raw tqdm bar on stderr, which its progress-bar
        # switch does not reach: the bench's stderr keeps to its own lines.
        with load_errors(p, "the GGUF model"), contextlib.redirect_stderr(io.StringIO()):
            model = AutoModelForCausalLM.from_pretrained(str(p.parent), gguf_file=p.name, dtype=torch_dtype,
                                                         trust_remote_code=False)
        tok = load_tokenizer(p.parent, gguf_file=p.name)
    else:
        model = load_causal_lm(p, device=device, dtype=dtype)
        tok = load_tokenizer(p) if tokenizer or has_tokenizer(p) else None
    # transformers types PreTrainedModel.to through a decorator whose stub drops `self`
    return model.to(device).eval(), tok  # type: ignore[arg-type]


def has_tokenizer(path: Path) -> bool:
    """Whether a model folder holds tokenizer files."""
    try:
        check_tokenizer(path)
    except SourceError:
        return False
    return True


def encode_prompts(tokenizer: Any, prompts: Sequence[Prompt], draft_tokenizer: Any = None,
                   limit: int | None = None, vocab: int | None = None) -> list[list[int]]:
    """Token ids of each prompt: given ids as they are, text through the tokenizer (no chat template),
    capped at MAX_PROMPT_TOKENS.

    Raises:
        IncompatiblePair: the draft's tokenizer encodes a prompt differently.
        UsageError: an id outside the models' vocabulary (`vocab`: the smaller of the two).
        SourceError: a text prompt and no tokenizer to encode it.
    """
    out = []
    for i, p in enumerate(prompts[:limit] if limit else prompts):
        if p.ids is not None:
            bad = [x for x in p.ids if vocab is not None and x >= vocab]
            if bad:
                raise UsageError(f"Cannot bench prompt {i} ({p.kind}): token id {bad[0]} is outside the models' "
                                 f"vocabulary (expected ids below {vocab}). Fix the prompts file.")
            out.append(list(p.ids)[-MAX_PROMPT_TOKENS:])
            continue
        if tokenizer is None:
            raise SourceError(f"Cannot bench prompt {i} ({p.kind}): it is text and the target folder has no "
                              f"tokenizer files. Copy the tokenizer files into it, or pass --prompts with token-id "
                              f"prompts ({{\"prompts\": [{{\"ids\": [1, 2, 3]}}]}}).", None)
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
