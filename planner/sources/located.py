"""`Located`: the raw files that describe one model, before any interpretation.

Why its own module: resolve.py builds it from directories, the HF cache and the catalog,
gguf.py builds it from a .gguf header, and `load_spec` (sources/__init__.py) interprets
both; each imports this module, none imports another for the type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .safetensors import RawTensor

if TYPE_CHECKING:  # start-up: a folder's ledger never loads the GGUF reader (tests/test_cli_startup.py)
    from .gguf_header import GGUFHeader

# A model name that says it is tuned to follow instructions (HF repo names, GGUF general.name).
INSTRUCT_NAME = re.compile(r"instruct|chat|(^|[-_])it($|[-_])|-sft|-dpo|thinking", re.I)


@dataclass
class Located:
    """The raw description of one model, before any interpretation."""

    ref: str
    source: str  # local | hf-cache | hub | catalog | gguf
    config: dict[str, Any]
    config_origin: str
    path: Path | None = None
    generation_config: dict[str, Any] | None = None
    tensors: list[RawTensor] | None = None
    tensor_files: list[str] = field(default_factory=list)
    tokenizer_files: dict[str, Path] = field(default_factory=dict)
    catalog_entry: dict[str, Any] | None = None
    revision: str | None = None
    notes: list[str] = field(default_factory=list)
    gguf: GGUFHeader | None = None  # GGUF header reader result, for .gguf sources
