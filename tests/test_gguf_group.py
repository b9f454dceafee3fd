"""gguf._group: a block tensor's group looked up once per kind, never different from `classify` itself."""

from __future__ import annotations

import pytest

from planner.sources.gguf import _group
from planner.sources.gguf_header import LEDGER_SKIP, read_header
from planner.sources.tensors import classify

from .test_gguf_real import GEMMA, SMOLLM, real

# llama.cpp tensor kinds (llama-arch.cpp LLM_TENSOR_NAMES) and names that test the rules' anchors
SUFFIXES = ("attn_q.weight", "attn_norm.weight", "ffn_gate_exps.weight", "ffn_up_shexp.weight", "ssm_conv1d.weight",
            "output.weight", "output.foo", "token_embd.weight", "wo.weight", "w1", "D", "ln_1.bias",
            "time_mix_key.weight", "nextn.eh_proj.weight", "post_attention_norm.weight", "exp_probs_b.bias")


@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_group_never_depends_on_the_layer_number(suffix, ndim):
    seen: dict[tuple[str, int], str] = {}
    first = _group(f"blk.0.{suffix}", ndim, seen)
    for n in (1, 9, 10, 47, 123):
        name = f"blk.{n}.{suffix}"
        assert _group(name, ndim, seen) == classify(name, ndim) == first
    assert seen == {(suffix, ndim): first}  # looked up once


@pytest.mark.parametrize("name", ["output.weight", "token_embd.weight", "blk.x.attn_q.weight", "blk.3", "blkz.1.a"])
def test_names_outside_blocks_are_classified_directly(name):
    seen: dict[tuple[str, int], str] = {}
    assert _group(name, 2, seen) == classify(name, 2)
    assert seen == {}


@pytest.mark.parametrize("name", [SMOLLM, GEMMA])
def test_real_files_group_as_classify_does(name):
    h = read_header(real(name), skip=LEDGER_SKIP)
    seen: dict[tuple[str, int], str] = {}
    assert [_group(t.name, len(t.shape), seen) for t in h.tensors] == [classify(t.name, len(t.shape)) for t in h.tensors]
    assert len(seen) < len(h.tensors) // 5  # a few dozen kinds over hundreds of tensors
