"""Molmo (`molmo`, AllenAI remote code: Molmo-7B-D / 7B-O / 72B): an OLMo-style LLM with fused projections
plus a CLIP ViT-L/14 vision backbone that the config does not describe.

Why its own file: `intermediate_size` is the fused ff_proj width (gate and up together), so the standard
decoder rule sizes a gated MLP twice too wide (+36% on Molmo-7B-D). Shapes from vLLM
vllm/model_executor/models/molmo.py @ f06ae65 (MolmoAttention, LanguageModelMLP, ImageProjectorMLP,
VisionBackboneConfig, VisionTransformer, MultiHeadDotProductAttention, MolmoVisionBackbone), under the
checkpoint's names (its WeightsMapper):
  LLM block: att_proj [(heads + 2 kv) x head_dim, hidden] (+ bias when qkv_bias), attn_out [hidden, hidden],
    ff_proj [intermediate_size, hidden] (gate + up), ff_out [hidden, intermediate_size / 2], attn_norm,
    ff_norm (RMS: weight only); q/k norms when attention_layer_norm
  wte.embedding [embedding_size, hidden] + wte.new_embedding [128, hidden] (ADDITIONAL_VOCAB_SIZE);
    ln_f; ff_out (the head) [vocab, hidden] unless weight_tying
  vision backbone (VisionBackboneConfig defaults; the config carries none): ViT of 23 blocks x 1024 wide,
    16 heads, MLP 4096, 577 positions, 14 px patches (patch_embedding [1024, 588], no bias), LayerNorms
    with bias; image_pooling_2d over the two VIT_LAYERS ([-2, -9]: q/k/v [1024, 2048] + bias, wo);
    image_projector w1/w3 [intermediate_size / 2, 1024], w2 [hidden, intermediate_size / 2]; pad_embed [2, 2048]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, BaseArgs, Tensors, config_dtype, finish, require_positive

# vLLM molmo.py VisionBackboneConfig defaults and module constants
_VIT = {"width": 1024, "heads": 16, "layers": 23, "mlp": 4096, "positions": 577, "patch": 14}
_VIT_LAYERS = 2  # VIT_LAYERS = [-2, -9]
_NEW_VOCAB = 128  # ADDITIONAL_VOCAB_SIZE


@dataclass
class Args(BaseArgs):
    """MolmoConfig keys (the Hub's config_molmo.py) as Molmo-7B-D's config.json writes them."""

    REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "intermediate_size")
    hidden_size: int = 0
    num_hidden_layers: int = 0
    num_attention_heads: int = 0
    num_key_value_heads: int | None = None
    vocab_size: int = 0
    embedding_size: int | None = None
    intermediate_size: int = 0
    max_position_embeddings: int = 2048
    qkv_bias: bool = False
    attention_layer_norm: bool = False
    weight_tying: bool = False
    tie_word_embeddings: bool = False
    moe_num_experts: int = 0


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                     "intermediate_size", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv, hd = args.num_key_value_heads or nq, h // nq
    half = args.intermediate_size // 2  # LanguageModelMLP: intermediate_size // 2 per branch
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    p = "model.transformer"
    t.add(f"{p}.wte.embedding", (args.embedding_size or args.vocab_size, h), "embedding")
    t.add(f"{p}.wte.new_embedding", (_NEW_VOCAB, h), "embedding")
    layers = []
    for i in range(args.num_hidden_layers):
        b = f"{p}.blocks.{i}"
        t.linear(f"{b}.att_proj", h, (nq + 2 * nkv) * hd, "attention", args.qkv_bias)
        t.linear(f"{b}.attn_out", h, h, "attention")
        if args.attention_layer_norm:
            t.norm(f"{b}.q_norm", h)
            t.norm(f"{b}.k_norm", nkv * hd)
        t.linear(f"{b}.ff_proj", h, args.intermediate_size, "ffn")
        t.linear(f"{b}.ff_out", half, h, "ffn")
        t.norm(f"{b}.attn_norm", h)
        t.norm(f"{b}.ff_norm", h)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd, ffn_width=half))
    t.norm(f"{p}.ln_f", h)
    tied = args.weight_tying or args.tie_word_embeddings
    if not tied:
        t.add(f"{p}.ff_out.weight", (args.vocab_size, h), "lm_head")
    _vision(t, h, half)
    guesses = (("MoE blocks (moe_num_experts, MolmoE) sized as dense",) if args.moe_num_experts else ())
    spec = finish(args, t, layers, dtype_known=known, guesses=guesses,
                  notes=["vision backbone sized from vLLM molmo.py's VisionBackboneConfig defaults (CLIP ViT-L/14 "
                         "336 px, 23 blocks): the config carries no vision keys"])
    return dataclasses.replace(spec, tied=tied)


def _vision(t: Tensors, hidden: int, half: int) -> None:
    """Molmo's vision backbone (resident, never quantised by Molmo's bnb export: it is skipped there)."""
    w, v = _VIT["width"], "model.vision_backbone"
    vit = f"{v}.image_vit"
    t.add(f"{vit}.class_embedding", (w,), "vision")
    t.add(f"{vit}.positional_embedding", (_VIT["positions"], w), "vision")
    t.add(f"{vit}.patch_embedding.weight", (w, _VIT["patch"] ** 2 * 3), "vision")
    for name in ("weight", "bias"):
        t.add(f"{vit}.pre_ln.{name}", (w,), "vision")
    for j in range(_VIT["layers"]):
        r = f"{vit}.transformer.resblocks.{j}"
        _mhdpa(t, f"{r}.attention", w, w)
        for name, d_in, d_out in (("w1", w, _VIT["mlp"]), ("w2", _VIT["mlp"], w)):
            t.add(f"{r}.feed_forward.{name}.weight", (d_out, d_in), "vision")
            t.add(f"{r}.feed_forward.{name}.bias", (d_out,), "vision")
        for norm in ("attention_norm", "ffn_norm"):
            t.add(f"{r}.{norm}.weight", (w,), "vision")
            t.add(f"{r}.{norm}.bias", (w,), "vision")
    _mhdpa(t, f"{v}.image_pooling_2d", _VIT_LAYERS * w, w)
    t.add(f"{v}.image_projector.w1.weight", (half, w), "vision")
    t.add(f"{v}.image_projector.w3.weight", (half, w), "vision")
    t.add(f"{v}.image_projector.w2.weight", (hidden, half), "vision")
    t.add(f"{v}.pad_embed", (2, _VIT_LAYERS * w), "vision")


def _mhdpa(t: Tensors, p: str, d_in: int, w: int) -> None:
    """MultiHeadDotProductAttention: wq/wk/wv [w, d_in] and wo [w, w], all with biases (16 kv heads = heads)."""
    for name in ("wq", "wk", "wv"):
        t.add(f"{p}.{name}.weight", (w, d_in), "vision")
        t.add(f"{p}.{name}.bias", (w,), "vision")
    t.add(f"{p}.wo.weight", (w, w), "vision")
    t.add(f"{p}.wo.bias", (w,), "vision")
