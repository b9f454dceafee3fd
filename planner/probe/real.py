"""Real weights: the same cost curves measured on a local safetensors model run by transformers.

Why: the synthetic stack has the right shapes but not the framework's real kernels, layouts and
per-call overhead; with the weights at hand, the same t_v(n) / t_d are measured on the model
itself, and acceptance (acceptance.py) can be measured at all.

Safety: models load only from a local directory that holds *.safetensors files, with
`AutoModelForCausalLM.from_pretrained(local_dir, trust_remote_code=False, use_safetensors=True)`:
no pickle, no remote code, no network.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.constants import REAL_EXTRA_HINT
from ..core.errors import PlannerError, SourceError, UsageError
from ..core.spec import ModelSpec
from ..sources.safetensors import read_dir_tensors
from . import require_torch
from .device import is_out_of_memory
from .synthetic_shapes import DTYPE_BYTES, TORCH_DTYPES
from .timing import Deadline, sync

PREFILL_CHUNK = 512
# Files a transformers tokenizer is built from (fast: tokenizer.json; slow: the vocabulary files).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "spiece.model", "vocab.json", "vocab.txt", "tekken.json",
                   "tiktoken.model")


@contextlib.contextmanager
def load_errors(path: str | Path, what: str) -> Iterator[None]:
    """transformers' errors while loading `what` from `path`, as one SourceError line.

    Why: from_pretrained raises whatever its readers raise (OSError, ValueError, KeyError, JSON and
    safetensors errors, the tokenizers library's own exceptions) with a traceback; a bad input must
    end in one line and exit 2. Planner errors and out-of-memory errors pass through unchanged.

    Raises:
        SourceError: loading failed.
    """
    try:
        yield
    except PlannerError:
        raise
    except Exception as e:  # translating a third-party error at the boundary
        if is_out_of_memory(e):
            raise
        reason = (str(e).strip().split("\n", 1)[0] or "no message")[:200]
        raise SourceError(f"Cannot load {what} from '{path}': transformers failed ({type(e).__name__}: {reason}). "
                          f"Check that the files are complete and that this transformers version supports the model.",
                          path) from e


def check_local_model(path: str | Path) -> Path:
    """A local model directory with config.json and *.safetensors weights whose headers read, or a clear error.

    Raises:
        UsageError: not a directory, no config.json, or no safetensors weights.
        HeaderError: a safetensors file is truncated or its header is invalid.
    """
    p = Path(path)
    if not p.is_dir():
        raise UsageError(f"Cannot load real weights from '{p}': it is not a directory (expected a local model "
                         f"folder with config.json and *.safetensors). Drop --real to use the synthetic probe.")
    if not (p / "config.json").is_file():
        raise UsageError(f"Cannot load real weights from '{p}': config.json is missing (expected a transformers "
                         f"model folder). Pass the folder that holds config.json.")
    if not any(p.glob("*.safetensors")):
        raise UsageError(f"Cannot load real weights from '{p}': no *.safetensors file (expected safetensors "
                         f"weights; pickled .bin weights are never loaded). Convert the weights to safetensors.")
    read_dir_tensors(p)  # HeaderError for a truncated or corrupt file, before transformers reads any weights
    return p


def check_tokenizer(path: str | Path) -> Path:
    """A local model directory that holds tokenizer files, or a clear error.

    Raises:
        SourceError: none of TOKENIZER_FILES is there.
    """
    p = Path(path)
    if not any((p / name).is_file() for name in TOKENIZER_FILES):
        raise SourceError(f"Cannot load the tokenizer from '{p}': the folder has no tokenizer files (expected "
                          f"one of {', '.join(TOKENIZER_FILES)}). Copy the model's tokenizer files into it.", p)
    return p


def load_tokenizer(path: str | Path, *, gguf_file: str | None = None) -> Any:
    """transformers tokenizer of a local model folder (or of a .gguf file in it), no remote code.

    Raises:
        SourceError: no tokenizer files, or transformers cannot build the tokenizer from them.
    """
    from transformers import AutoTokenizer

    p = Path(path)
    where = p / gguf_file if gguf_file else check_tokenizer(p)
    kw = {"gguf_file": gguf_file} if gguf_file else {}
    with load_errors(where, "the tokenizer"):
        return AutoTokenizer.from_pretrained(str(p), trust_remote_code=False, **kw)


def load_causal_lm(path: str | Path, *, device: str, dtype: str) -> Any:
    """transformers model from a local safetensors folder, on `device`, in eval mode.

    Raises:
        UsageError: transformers missing, or the folder is not a local safetensors model.
        HeaderError: a safetensors file is truncated or its header is invalid.
        SourceError: transformers cannot load the model.
    """
    torch = require_torch("real-weights probe")
    p = check_local_model(path)
    try:
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging
    except ImportError as e:
        raise UsageError("Cannot run the real-weights probe: transformers is not installed (expected it with "
                         f"torch). Install all it needs at once: '{REAL_EXTRA_HINT}'.") from e
    hf_logging.disable_progress_bar()  # the probe shows its own progress on stderr
    with load_errors(p, "the model"):
        model = AutoModelForCausalLM.from_pretrained(str(p), trust_remote_code=False, use_safetensors=True,
                                                     dtype=getattr(torch, TORCH_DTYPES[dtype]))
    # transformers types PreTrainedModel.to through a decorator whose stub drops `self`
    return model.to(device).eval()  # type: ignore[arg-type]


def real_bytes(spec: ModelSpec, dtype: str, context: int) -> int:
    """Weights at the probe dtype + a full-attention KV cache for `context` tokens (an upper bound)."""
    db = DTYPE_BYTES[dtype]
    kv = sum(lay.kv_heads * (lay.head_dim_k + (lay.head_dim_v or lay.head_dim_k)) for lay in spec.layers)
    return spec.params_total * db + kv * context * db


def model_forward(model: Any, ids: Any, cache: Any = None, *, last_only: bool = False) -> Any:
    """Logits [n, vocab] of one forward of ids [n] (appending to `cache` when given).

    Handles both spellings of the cache argument (transformers 5.x `cache=`, 4.x `past_key_values=`).
    """
    torch = require_torch()
    kw: dict[str, Any] = {"input_ids": ids[None], "logits_to_keep": 1 if last_only else 0}
    if cache is not None:
        name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        kw.update({name: cache, "use_cache": True})
    else:
        kw["use_cache"] = False
    with torch.inference_mode():
        return model(**kw).logits[0]


def new_cache(model: Any) -> Any:
    """An empty transformers DynamicCache for `model`."""
    from transformers import DynamicCache

    try:
        return DynamicCache(config=model.config)
    except TypeError:  # transformers 4.x: no config argument
        return DynamicCache()


class RealLM:
    """A transformers model behind the probe's stack interface: forward, checkpoint, rollback, tokens.

    The KV cache (transformers DynamicCache) is filled with `context` random tokens by a chunked
    prefill; `rollback(n)` / `rollback_to(pos)` crop it back (`crop(-n)` removes n tokens).
    """

    def __init__(self, model: Any, *, device: str, context: int, seed: int, deadline: Deadline) -> None:
        self.torch, self.model, self.device = require_torch(), model, device
        self.vocab = int(model.config.get_text_config().vocab_size)
        self.cache = new_cache(model)
        self.base = self.pos = 0
        self._prefill(context, seed, deadline)

    def _prefill(self, context: int, seed: int, deadline: Deadline) -> None:
        ids = self.tokens(context, seed=seed)
        t0 = time.perf_counter()
        for start in range(0, context, PREFILL_CHUNK):
            chunk = ids[start:start + PREFILL_CHUNK]
            self.forward(chunk, all_logits=False)
            sync(self.device)
            done = start + len(chunk)
            rate = (time.perf_counter() - t0) / done
            if done < context and rate * (context - done) > deadline.left():
                raise UsageError(f"Cannot prefill {context} tokens within the budget: about "
                                 f"{rate * context:.0f} s needed, {max(deadline.left(), 0):.0f} s left (expected "
                                 f"the prefill to fit). Lower --context or raise --budget-s.")
        self.base = self.pos

    def forward(self, tokens: Any, *, all_logits: bool = True) -> Any:
        logits = model_forward(self.model, tokens, self.cache, last_only=not all_logits)
        self.pos += tokens.shape[0]
        return logits

    def checkpoint(self) -> None:
        """Nothing to save: an attention KV cache is rolled back by cropping."""

    def length(self) -> int:
        return self.pos

    def rollback(self, n: int) -> None:
        """Drop the last n tokens (bench Stepper protocol)."""
        self.rollback_to(self.pos - n)

    def rollback_to(self, pos: int) -> None:
        drop = self.pos - pos
        if drop < 0 or pos < self.base:
            raise UsageError(f"Cannot roll the cache back to position {pos} (expected {self.base}..{self.pos}).")
        if drop:
            if not getattr(self.cache, "is_croppable", True):
                raise UsageError("Cannot roll back this model's cache: transformers cannot crop it (recurrent or "
                                 "sliding layers). Use the synthetic probe for it (drop --real).")
            self.cache.crop(-drop)
        self.pos = pos

    def tokens(self, n: int, seed: int = 0) -> Any:
        g = self.torch.Generator(device="cpu")
        g.manual_seed(seed)
        return self.torch.randint(0, self.vocab, (n,), generator=g).to(self.device)
