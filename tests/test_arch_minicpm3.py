"""MiniCPM3 / Youtu-LLM (`minicpm3`, `youtu`): DeepSeek-V2's latent attention over dense layers, by hand.

MiniCPM3Config's defaults are openbmb/MiniCPM3-4B's (configuration_minicpm3.py: "the class defaults otherwise
match openbmb/MiniCPM3-4B"). Before these rules both went through the standard decoder rule (q/k/v/o in place
of the latent projections: -0.6% and -11%, low); transformers 5.24 builds the same models on the meta device
with 4,073,875,968 and 1,961,560,064 parameters.
"""

from __future__ import annotations

import json

from planner import engines
from planner.core.spec import MLA
from planner.fits.memory import Settings, kv_per_token
from planner.sources import load_spec


def _mla_layer(h: int, heads: int, q_rank: int, kv_rank: int, nope: int, rope: int, v: int, inter: int) -> int:
    return (h * q_rank + q_rank + q_rank * heads * (nope + rope) + h * (kv_rank + rope) + kv_rank
            + kv_rank * heads * (nope + v) + heads * v * h + 2 * h + 3 * h * inter)


def _spec(tmp_path, cfg):
    d = tmp_path / cfg["model_type"]
    d.mkdir()
    (d / "config.json").write_text(json.dumps({**cfg, "torch_dtype": "bfloat16"}))
    return load_spec(str(d))


def test_minicpm3_4b_by_hand(tmp_path):
    s = _spec(tmp_path, {"model_type": "minicpm3", "architectures": ["MiniCPM3ForCausalLM"], "hidden_size": 2560,
                         "num_hidden_layers": 62, "num_attention_heads": 40, "vocab_size": 73448,
                         "intermediate_size": 6400, "q_lora_rank": 768, "kv_lora_rank": 256, "qk_nope_head_dim": 64,
                         "qk_rope_head_dim": 32, "tie_word_embeddings": True})
    # v_head_dim absent: 2560 // 40 = 64 (MiniCPM3Config.__post_init__)
    layer = _mla_layer(2560, 40, 768, 256, 64, 32, 64, 6400)
    assert s.architecture == "minicpm3" and s.confidence == "high"
    assert s.params_total == 73448 * 2560 + 62 * layer + 2560 == 4_073_875_968
    assert {layer.attention for layer in s.layers} == {MLA}
    # the latent cache: kv_lora_rank + the shared rope key per layer, bf16
    assert kv_per_token(s, Settings(resolved_engine=engines.get("vllm"))) == 62 * (256 + 32) * 2


def test_youtu_defaults_by_hand(tmp_path):
    s = _spec(tmp_path, {"model_type": "youtu", "architectures": ["YoutuForCausalLM"], "hidden_size": 2048,
                         "num_hidden_layers": 32, "num_attention_heads": 16, "vocab_size": 128256,
                         "intermediate_size": 6144, "tie_word_embeddings": True})
    layer = _mla_layer(2048, 16, 1536, 512, 128, 64, 128, 6144)
    assert s.architecture == "youtu" and s.confidence == "high"
    assert s.params_total == 128256 * 2048 + 32 * layer + 2048 == 1_961_560_064
