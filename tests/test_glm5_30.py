"""GLM-5.x (`glm_moe_dsa`) for issue #30 part B: DeepSeek-V3.2's layout with the DSA indexer only on the
layers `indexer_types` marks "full", and an MTP layer that ships its own embedding and head copies.

tests/fixtures/heldout30/GLM-5.3.json: the structural keys of zai-org's GLM-5.3 config.json as a public
loader's test transcribes them (glm_moe_dsa; indexer_types "full" for layers 0-2 and every fourth layer from
6, the schedule GLM-5.2 states as index_topk_freq 4 / index_skip_topk_offset 3).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner import engines
from planner.core.errors import ConfigError
from planner.fits.memory import Settings, kv_per_token, model_ledger
from planner.sources import load_spec

from .test_hybrids30 import _meta_params

HERE = Path(__file__).parent / "fixtures" / "heldout30"


def _load(tmp_path: Path, **overrides):
    d = tmp_path / "glm5"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({**json.loads((HERE / "GLM-5.3.json").read_text()), **overrides}))
    return load_spec(str(d))


def _hand_count() -> tuple[int, int, int]:
    """(decoder params, MTP params, full-indexer layers) of GLM-5.3 from its shapes."""
    h, v, nh, ql, kvl, nope, rope, vd, n = 6144, 154880, 64, 2048, 512, 192, 64, 256, 78
    attn = (h * ql + ql + ql * nh * (nope + rope) + h * (kvl + rope) + kvl + kvl * nh * (nope + vd)
            + nh * vd * h + 2 * h)  # q_a, its norm, q_b, kv_a, its norm, kv_b, o, two layer norms
    indexer = ql * 32 * 128 + h * 128 + 2 * 128 + 32 * h  # wq_b, wk, k_norm (w + b), weights_proj
    dense = 3 * h * 12288
    moe = 256 * h + 256 + 256 * 3 * 2048 * h + 3 * h * 2048  # router + correction bias, experts, shared
    full = 3 + len(range(6, 78, 4))
    params = n * attn + full * indexer + 3 * dense + 75 * moe + 2 * v * h + h
    mtp = attn + indexer + moe + 3 * h + 2 * h * h + 2 * v * h  # enorm, hnorm, head norm; eh_proj; embed, head
    return params, mtp, full


def test_glm53_indexer_only_on_full_layers(tmp_path):
    params, mtp, full = _hand_count()
    assert (params, full) == (743_377_019_904, 21)  # zai-org: GLM-5 "744B total parameters"
    s = _load(tmp_path)
    assert s.params_total == params
    assert s.mtp is not None and s.mtp.layers == 1 and s.mtp.params == mtp
    # checkpoint = decoder + MTP layer (with its own embedding and head copies); resident = decoder only
    assert s.checkpoint_bytes == s.weights.resident_bytes + 2 * mtp == 2 * (params + mtp)
    # KV per token (vLLM): the MLA latent (512 + 64) x 2 B in all 78 layers, and the indexer's fp8 key +
    # fp32 scale per 128 (132 B) in the 21 full layers only (was 78 x 132 as V3.2: shared layers cache none)
    assert kv_per_token(s, Settings(context=8192, resolved_engine=engines.get("vllm"))) == 78 * 576 * 2 + 21 * 132


def test_glm53_matches_transformers_on_the_meta_device():
    # transformers builds the 78 decoder layers (the MTP layer, model.layers.78, is ignored on load); the 75
    # routers' e_score_correction_bias [256] are buffers there (nn.Buffer, modeling_deepseek_v3.py), not
    # parameters, though the checkpoint stores them
    assert _meta_params("GLM-5.3") == _hand_count()[0] - 75 * 256


def test_glm5_indexer_schedule_without_a_list(tmp_path):
    # GLM-5.2's keys: index_topk_freq 4, index_skip_topk_offset 3 -> the same 21 full layers
    s = _load(tmp_path, indexer_types=None, index_topk_freq=4, index_skip_topk_offset=3)
    assert sum(1 for layer in s.layers if layer.index_dim) == 21
    (tmp_path / "b").mkdir()
    with pytest.raises(ConfigError, match="indexer_types"):
        _load(tmp_path / "b", indexer_types=["full", "sometimes"] * 39)


def test_mtp_residency_is_stated_per_engine(tmp_path):
    s = _load(tmp_path)
    for engine, says in (("vllm", "method mtp"), ("sglang", "NEXTN"), ("llama.cpp", "draft-mtp"),
                         ("mlx", "runs no MTP speculation: never resident")):
        led = model_ledger(s, Settings(context=4096, resolved_engine=engines.get(engine)))
        assert says in led.provenance["mtp"]
        # plain decoding: the MTP layer is stored (checkpoint) but not in the resident weights
        assert led.checkpoint_bytes - led.weights_bytes == led.mtp_bytes == s.mtp.nbytes
