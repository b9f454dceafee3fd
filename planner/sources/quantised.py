"""Real pre-quantised int4 checkpoints of catalogued models (catalogs/quantised/int4.json), and the convert
step that writes one where none is catalogued.

Why: vLLM and SGLang do not turn a 16-bit checkpoint into AWQ/GPTQ int4 at load, so a plan sized at int4
that launched the 16-bit model served something other than the plan. A launch serves the catalogued
repo (each id found named by its model card or Hub pages, the URL kept as `source`), or else quantises
first with llm-compressor and serves the folder it wrote.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..core.constants import catalog_dir
from ..core.errors import ConfigError
from ..core.jsonio import read_json_object

# The --weights-dtype spellings whose ledger is AWQ/GPTQ int4 (core/quant.py parse_scheme).
INT4 = ("int4", "gptq", "awq", "w4a16")
METHODS = ("awq", "gptq")


@dataclass(frozen=True)
class QuantisedRepo:
    """One pre-quantised checkpoint: the model it was made from, its Hub id, format, bits and group."""

    base: str  # the 16-bit model's Hub id
    repo: str  # the quantised checkpoint's Hub id
    method: str  # awq | gptq (its config.json quant_method)
    bits: int
    group_size: int
    source: str  # where the id was found named


def is_int4(quant: str | None) -> bool:
    """Whether a --weights-dtype spelling is sized as AWQ/GPTQ int4."""
    return (quant or "").strip().lower().replace("-", "_") in INT4


def int4_repo(ref: str, *, directory: str | Path | None = None) -> QuantisedRepo | None:
    """The catalogued int4 checkpoint of the model `ref` names (its Hub id, any case), else None.

    Raises:
        ConfigError: a malformed catalog entry (names the file and the key).
    """
    key = ref.strip().lower()
    for r in entries(directory):
        if r.base.lower() == key:
            return r  # the first listed wins: AWQ before GPTQ (no g_idx, as the ledger counts)
    return None


def entries(directory: str | Path | None = None) -> tuple[QuantisedRepo, ...]:
    """Every entry of catalogs/quantised/*.json, validated."""
    return _entries(str(Path(directory) if directory is not None else catalog_dir() / "quantised"))


@lru_cache(maxsize=4)
def _entries(directory: str) -> tuple[QuantisedRepo, ...]:
    out = []
    for f in sorted(Path(directory).glob("*.json")):
        items = read_json_object(f, what="quantised-checkpoint catalog").get("repos")
        if not isinstance(items, list):
            raise ConfigError(f"Cannot read quantised-checkpoint catalog '{f}': expected a 'repos' list.", f,
                              key="repos")
        out += [_entry(f, i, it) for i, it in enumerate(items)]
    return tuple(out)


def _entry(f: Path, i: int, it: object) -> QuantisedRepo:
    if not isinstance(it, dict):
        raise ConfigError(f"Cannot read quantised-checkpoint catalog '{f}': entry {i} is not an object.", f,
                          key="repos")
    try:
        r = QuantisedRepo(base=str(it["base"]), repo=str(it["repo"]), method=str(it["method"]),
                          bits=int(it["bits"]), group_size=int(it["group_size"]), source=str(it["source"]))
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"Cannot read quantised-checkpoint catalog '{f}': entry {i} lacks {e} (expected base, "
                          f"repo, method, bits, group_size, source).", f, key=str(e)) from e
    if r.method not in METHODS or r.bits != 4 or "/" not in r.repo or not r.source.startswith("https://"):
        raise ConfigError(f"Cannot read quantised-checkpoint catalog '{f}': entry {i} ({r.repo:.80}) has method "
                          f"{r.method!r:.20}, bits {r.bits} (expected awq|gptq, 4, an owner/name repo and an "
                          f"https source).", f, key="method")
    return r


# llm-compressor's documented oneshot call (the Quick Tour of vllm-project/llm-compressor's README @0229b79:
# oneshot(model=..., dataset="open_platypus", recipe=..., output_dir=..., max_seq_length=2048,
# num_calibration_samples=512)), with the recipe of its int4 weight-only example
# (`recipe = GPTQModifier(targets="Linear", scheme="W4A16", ignore=["lm_head"])`, "4 bit with GPTQ with a
# group size 128", examples/quantization_w4a16/llama3_example.py:52-54 @feab612, which names its folder
# `model_id.split("/")[-1] + "-W4A16-G128"`, :76): a compressed-tensors checkpoint vLLM loads (the same
# README, its inference-with-vLLM part).
_ONESHOT = ("from llmcompressor import oneshot; from llmcompressor.modifiers.quantization import GPTQModifier; "
            "oneshot(model={model}, dataset=\"open_platypus\", recipe=GPTQModifier(scheme=\"W4A16\", "
            "targets=\"Linear\", ignore=[\"lm_head\"]), output_dir={out}, max_seq_length=2048, "
            "num_calibration_samples=512)")


def w4a16_folder(ref: str) -> str:
    """The folder the convert step writes for `ref`: its last path part + -W4A16-G128 (llm-compressor's own
    naming), in the working directory."""
    name = ref.rstrip("/").rsplit("/", 1)[-1] or "model"
    return f"{name}-W4A16-G128"


def w4a16_convert(ref: str) -> tuple[str, str]:
    """(convert step, folder it writes): one shell command running llm-compressor's oneshot W4A16 on `ref`.

    The model and folder go into the Python source as JSON strings (valid Python literals, any character
    escaped), and the whole program is shell-quoted, so a path with spaces or quotes stays one argument.
    """
    out = w4a16_folder(ref)
    program = _ONESHOT.format(model=json.dumps(ref), out=json.dumps(out))
    return f"python -c {shlex.quote(program)}", out
