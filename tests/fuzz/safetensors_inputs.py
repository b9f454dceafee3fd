"""The valid safetensors checkpoint the fuzz tests mutate: a tiny Llama, whole and in two shards.

The data region is present (zeros), so truncation and offset mutations can land past the end of the file.
Used by tests/test_fuzz_safetensors.py and by the corpus runner (tests/test_fuzz_corpus.py).
"""

from __future__ import annotations

import json
import struct

from ..safetensors_util import header_dict, llama_tensors

TINY = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "max_position_embeddings": 2048,
        "torch_dtype": "bfloat16", "tie_word_embeddings": False, "rms_norm_eps": 1e-5}
TENSORS = llama_tensors(TINY)


def safetensors_bytes(header: dict | bytes, data_bytes: int, length: int | None = None) -> bytes:
    """u64 header length (or `length`, to lie), the header JSON padded to 8 bytes, then `data_bytes` zeros."""
    blob = header if isinstance(header, bytes) else json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    return struct.pack("<Q", len(blob) if length is None else length) + blob + b"\x00" * data_bytes


SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
HALF = len(TENSORS) // 2
SHARD_FILES = {SHARDS[0]: safetensors_bytes(*header_dict(TENSORS[:HALF])),
               SHARDS[1]: safetensors_bytes(*header_dict(TENSORS[HALF:]))}
