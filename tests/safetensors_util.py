"""Write real safetensors headers with the data region left as a hole (sparse files).

The format (safetensors docs): u64 little-endian header length, JSON header, data.
`truncate()` extends the file to its full size without writing the data, so a
16 GB checkpoint costs a few KB of disk and tests read the same headers a real
download has.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

ITEMSIZE = {"BF16": 2, "F16": 2, "F32": 4, "I32": 4, "U8": 1, "I8": 1, "F8_E4M3": 1}


def header_dict(tensors: list[tuple[str, str, tuple[int, ...]]]) -> tuple[dict, int]:
    """The safetensors header of `tensors` (name, dtype, shape), packed in order, and its data bytes."""
    header, offset = {}, 0
    for name, dtype, shape in tensors:
        n = ITEMSIZE[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    header["__metadata__"] = {"format": "pt"}
    return header, offset


def write_sparse(path: Path, tensors: list[tuple[str, str, tuple[int, ...]]], *, pad_to: int = 8) -> int:
    """Write `tensors` (name, dtype, shape) as a header-only safetensors file; returns data bytes."""
    header, offset = header_dict(tensors)
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % pad_to)
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(blob)))
        fh.write(blob)
        fh.truncate(8 + len(blob) + offset)
    return offset


def llama_tensors(cfg: dict) -> list[tuple[str, str, tuple[int, ...]]]:
    """Tensor names/shapes of a HF Llama checkpoint, written out by hand from modeling_llama."""
    h, inter, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nq, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or h // nq
    out = [("model.embed_tokens.weight", "BF16", (v, h))]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}"
        out += [(f"{p}.self_attn.q_proj.weight", "BF16", (nq * hd, h)),
                (f"{p}.self_attn.k_proj.weight", "BF16", (nkv * hd, h)),
                (f"{p}.self_attn.v_proj.weight", "BF16", (nkv * hd, h)),
                (f"{p}.self_attn.o_proj.weight", "BF16", (h, nq * hd)),
                (f"{p}.mlp.gate_proj.weight", "BF16", (inter, h)),
                (f"{p}.mlp.up_proj.weight", "BF16", (inter, h)),
                (f"{p}.mlp.down_proj.weight", "BF16", (h, inter)),
                (f"{p}.input_layernorm.weight", "BF16", (h,)),
                (f"{p}.post_attention_layernorm.weight", "BF16", (h,))]
    out.append(("model.norm.weight", "BF16", (h,)))
    out.append(("lm_head.weight", "BF16", (v, h)))
    return out


def write_sharded(d: Path, tensors, n_shards: int) -> int:
    """Split tensors over n shards + model.safetensors.index.json, as save_pretrained does."""
    per = -(-len(tensors) // n_shards)
    wmap, total = {}, 0
    for k in range(n_shards):
        chunk = tensors[k * per:(k + 1) * per]
        name = f"model-{k + 1:05d}-of-{n_shards:05d}.safetensors"
        total += write_sparse(d / name, chunk)
        wmap.update({t[0]: name for t in chunk})
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total},
                                                                  "weight_map": wmap}))
    return total
