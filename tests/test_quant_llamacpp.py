"""llama.cpp k-quant file types (core/quant_llamacpp.py): llama-quantize's per-tensor mix, held against a real file.

gemma-3-270m-q4_k_m.gguf (tests/gguf_dir.py) is a real llama-quantize Q4_K_M output: re-quantising its own 236
tensors (as BF16, same names and shapes) with `q4_k_m` must give every tensor the type the file stores (attn_v
and ffn_down at Q6_K in the use_more_bits layers, the tied token embedding at the output's type, and the
fallbacks of 640-wide rows: Q4_K -> Q5_0, Q6_K -> Q8_0). The HF-named case is worked by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from planner.core import dtypes, quant
from planner.core.quant_llamacpp import block_types, role, use_more_bits
from planner.core.spec import make_tensor
from planner.sources import load_spec
from planner.sources.tensors import classify

from .test_gguf_real import GEMMA, real


def test_use_more_bits_by_hand():
    # n 16: n/8 = 2, 7n/8 = 14; between them every third layer from 4 on
    assert [i for i in range(16) if use_more_bits(i, 16)] == [0, 1, 4, 7, 10, 13, 14, 15]


def test_the_real_q4_k_m_file_is_reproduced_tensor_by_tensor():
    from planner.sources.gguf_header import LEDGER_SKIP, read_header

    h = read_header(real(GEMMA), skip=LEDGER_SKIP)
    assert h.metadata["general.file_type"] == 15  # LLAMA_FTYPE_MOSTLY_Q4_K_M
    as_bf16 = [make_tensor(t.name, t.shape, "BF16", classify(t.name, len(t.shape))) for t in h.tensors]
    mine = quant.apply(as_bf16, quant.parse_scheme("q4_k_m"))
    assert [m.dtype for m in mine] == [t.dtype for t in h.tensors]
    assert sum(m.nbytes for m in mine) == h.tensor_bytes


def test_hf_names_by_hand():
    s = load_spec("llama-3.2-1b-instruct")  # 16 layers, tied embeddings (no lm_head stored)
    mixed = quant.apply(s.weights.tensors, quant.parse_scheme("q4_k_m"))
    more = {0, 1, 4, 7, 10, 13, 14, 15}
    for t in mixed:
        if len(t.shape) < 2:
            want = "F32"
        elif t.name.endswith(("v_proj.weight", "down_proj.weight")):
            want = "Q6_K" if t.layer in more else "Q4_K"
        elif t.group == "embedding":
            want = "Q6_K"  # the tied embedding is the output matrix: llama.cpp quantises it as the output
        else:
            want = "Q4_K"
        assert t.dtype == want, t.name
    total = sum(dtypes.nbytes(t.dtype, t.numel) for t in mixed)
    assert total == sum(t.nbytes for t in mixed)
    pure = quant.apply(s.weights.tensors, quant.parse_scheme("q4_k"))
    assert sum(t.nbytes for t in pure) < total  # --pure is smaller: every matrix at Q4_K


@pytest.mark.parametrize(("file_type", "v0", "v8", "down0", "down8", "o"), [
    ("Q3_K_M", "Q5_K", "Q4_K", "Q5_K", "Q4_K", "Q4_K"),  # n 16: attn_v Q5_K for the first two; ffn_down i < 1
    ("Q3_K_L", "Q5_K", "Q5_K", "Q5_K", "Q5_K", "Q5_K"),
    ("Q4_K_S", "Q5_K", "Q4_K", "Q5_K", "Q4_K", "Q4_K"),  # attn_v i < 4, ffn_down i < n/8 = 2
    ("Q5_K_M", "Q6_K", "Q5_K", "Q6_K", "Q5_K", "Q5_K"),
    ("Q3_K_S", "Q3_K", "Q3_K", "Q3_K", "Q3_K", "Q3_K"),
])
def test_each_file_type_by_hand(file_type, v0, v8, down0, down8, o):
    ts = []
    for i in range(16):
        for name in ("self_attn.v_proj", "self_attn.o_proj", "mlp.down_proj"):
            ts.append(make_tensor(f"model.layers.{i}.{name}.weight", (512, 512), "BF16", "attention"))
    got = dict(zip((t.name for t in ts), block_types(ts, file_type), strict=True))
    assert (got["model.layers.0.self_attn.v_proj.weight"], got["model.layers.8.self_attn.v_proj.weight"]) == (v0, v8)
    assert (got["model.layers.0.mlp.down_proj.weight"], got["model.layers.8.mlp.down_proj.weight"]) == (down0, down8)
    assert got["model.layers.8.self_attn.o_proj.weight"] == o


def test_roles_of_hf_and_gguf_names():
    assert role("lm_head.weight") == role("output.weight") == "output"
    assert role("model.layers.3.self_attn.v_proj.weight") == role("blk.3.attn_v.weight") == "attn_v"
    assert role("model.layers.3.mlp.experts.down_proj") == role("blk.3.ffn_down_exps.weight") == "ffn_down"
    assert role("model.layers.3.self_attn.q_proj.weight") is None


def test_cli_takes_the_file_type_names():
    r = subprocess.run([sys.executable, "-m", "planner", "memory", "qwen2.5-14b-instruct", "--weights-dtype",
                        "q4_k_m", "--engine", "llama.cpp", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)["models"][0]
    assert m["weights_dtype"].upper() in ("Q4_K", "Q4_K_M") and "re-sized as q4_k_m" in m["provenance"]["weights"]
