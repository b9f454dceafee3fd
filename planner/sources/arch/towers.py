"""Vision towers sized from their own sub-configs, one rule per tower family.

Why: a multimodal wrapper's `vision_config` uses the tower's own key names (Qwen2-VL `embed_dim`,
`depth`, `mlp_ratio`; Qwen3-VL `hidden_size`, `deepstack_visual_indexes`), and each family lays out
patch embedding, blocks and merger differently. A family without a rule here falls back to
base.vision_tower's SigLIP-shaped approximation, which says so (confidence low).
Shapes follow transformers modeling_qwen2_vl.py / modeling_qwen2_5_vl.py / modeling_qwen3_vl.py
and modeling_fuyu.py; the tower's weights stay resident (DESIGN: multimodal towers stay loaded).
"""

from __future__ import annotations

from typing import Any

from ...core.constants import MAX_HIDDEN, MAX_LAYERS
from ...core.errors import ConfigError
from .base import Tensors, vision_tower


def _get(vc: dict, key: str, default: int, origin: str, bound: int = MAX_HIDDEN * 8) -> int:
    v = vc.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= bound:
        raise ConfigError(f"Cannot size the vision tower from '{origin}': key 'vision_config.{key}' must be "
                          f"between 1 and {bound} (got {v!r:.40}).", origin, key=f"vision_config.{key}")
    return v


def _block(t: Tensors, b: str, h: int, inter: int, *, gated: bool = False, ln_bias: bool = True) -> None:
    """One ViT block: 2 norms, fused qkv + proj with biases, MLP (plain fc1/fc2 or gated) with biases."""
    t.add(f"{b}.norm1.weight", (h,), "vision")
    t.add(f"{b}.norm2.weight", (h,), "vision")
    if ln_bias:
        t.add(f"{b}.norm1.bias", (h,), "vision")
        t.add(f"{b}.norm2.bias", (h,), "vision")
    for name, (o, i) in (("attn.qkv", (3 * h, h)), ("attn.proj", (h, h))):
        t.add(f"{b}.{name}.weight", (o, i), "vision")
        t.add(f"{b}.{name}.bias", (o,), "vision")
    mlp = (("mlp.gate_proj", (inter, h)), ("mlp.up_proj", (inter, h)), ("mlp.down_proj", (h, inter))) if gated \
        else (("mlp.fc1", (inter, h)), ("mlp.fc2", (h, inter)))
    for name, (o, i) in mlp:
        t.add(f"{b}.{name}.weight", (o, i), "vision")
        t.add(f"{b}.{name}.bias", (o,), "vision")


def _merger(t: Tensors, p: str, ctx: int, merge: int, out: int, *, norm_width: int, ln_bias: bool = True) -> None:
    """PatchMerger: norm, then Linear(ctx*m^2 -> ctx*m^2) + GELU + Linear(-> out), both biased."""
    wide = ctx * merge * merge
    t.add(f"{p}.ln_q.weight", (norm_width,), "vision")
    if ln_bias:
        t.add(f"{p}.ln_q.bias", (norm_width,), "vision")
    t.add(f"{p}.mlp.0.weight", (wide, wide), "vision")
    t.add(f"{p}.mlp.0.bias", (wide,), "vision")
    t.add(f"{p}.mlp.2.weight", (out, wide), "vision")
    t.add(f"{p}.mlp.2.bias", (out,), "vision")


def qwen2_vl(t: Tensors, vc: dict, text_hidden: int, origin: str) -> str:
    """Qwen2-VL: Conv3d patch embed (no bias), `depth` LayerNorm blocks of width embed_dim with
    mlp_ratio x embed_dim MLPs, rotary positions (no table), merger into the text hidden size."""
    h = _get(vc, "embed_dim", 1280, origin)
    depth = _get(vc, "depth", 32, origin, MAX_LAYERS)
    inter = h * _get(vc, "mlp_ratio", 4, origin, 64)
    patch, tp = _get(vc, "patch_size", 14, origin, 1024), _get(vc, "temporal_patch_size", 2, origin, 64)
    t.add("visual.patch_embed.proj.weight", (h, _get(vc, "in_chans", 3, origin, 64), tp, patch, patch), "vision")
    for i in range(depth):
        _block(t, f"visual.blocks.{i}", h, inter)
    _merger(t, "visual.merger", h, _get(vc, "spatial_merge_size", 2, origin, 64),
            _get(vc, "hidden_size", text_hidden, origin), norm_width=h)
    return "vision tower: Qwen2-VL ViT from vision_config (embed_dim, depth, mlp_ratio)"


def qwen2_5_vl(t: Tensors, vc: dict, text_hidden: int, origin: str) -> str:
    """Qwen2.5-VL: as Qwen2-VL but width `hidden_size`, RMSNorm (weight only), gated MLP of
    intermediate_size, merger into out_hidden_size."""
    h = _get(vc, "hidden_size", 1280, origin)
    depth = _get(vc, "depth", 32, origin, MAX_LAYERS)
    patch, tp = _get(vc, "patch_size", 14, origin, 1024), _get(vc, "temporal_patch_size", 2, origin, 64)
    t.add("visual.patch_embed.proj.weight", (h, _get(vc, "in_chans", 3, origin, 64), tp, patch, patch), "vision")
    for i in range(depth):
        _block(t, f"visual.blocks.{i}", h, _get(vc, "intermediate_size", 3420, origin), gated=True, ln_bias=False)
    _merger(t, "visual.merger", h, _get(vc, "spatial_merge_size", 2, origin, 64),
            _get(vc, "out_hidden_size", text_hidden, origin), norm_width=h, ln_bias=False)
    return "vision tower: Qwen2.5-VL ViT from vision_config"


def qwen3_vl(t: Tensors, vc: dict, text_hidden: int, origin: str) -> str:
    """Qwen3-VL: Conv3d patch embed with bias, learned position table (num_position_embeddings), LayerNorm
    blocks with plain MLPs, a merger plus one post-shuffle-norm merger per deepstack_visual_indexes."""
    h = _get(vc, "hidden_size", 1152, origin)
    depth = _get(vc, "depth", 27, origin, MAX_LAYERS)
    patch, tp = _get(vc, "patch_size", 16, origin, 1024), _get(vc, "temporal_patch_size", 2, origin, 64)
    t.add("visual.patch_embed.proj.weight", (h, _get(vc, "in_channels", 3, origin, 64), tp, patch, patch), "vision")
    t.add("visual.patch_embed.proj.bias", (h,), "vision")
    t.add("visual.pos_embed.weight", (_get(vc, "num_position_embeddings", 2304, origin, 1 << 24), h), "vision")
    for i in range(depth):
        _block(t, f"visual.blocks.{i}", h, _get(vc, "intermediate_size", 4304, origin))
    merge, out = _get(vc, "spatial_merge_size", 2, origin, 64), _get(vc, "out_hidden_size", text_hidden, origin)
    _merger(t, "visual.merger", h, merge, out, norm_width=h)
    deep = vc.get("deepstack_visual_indexes") or []
    for j in range(len(deep) if isinstance(deep, list) else 0):
        # use_postshuffle_norm=True: the norm runs on the merged (h x m^2) features
        _merger(t, f"visual.deepstack_merger_list.{j}", h, merge, out, norm_width=h * merge * merge)
    return "vision tower: Qwen3-VL ViT + deepstack mergers from vision_config"


def llama4_vision(t: Tensors, vc: dict, text_hidden: int, origin: str) -> str:
    """Llama 4 vision (modeling_llama4.py Llama4VisionModel): unfold-conv patch linear [h, C p^2] (no bias),
    class embedding, (image/p)^2 + 1 positions, pre/post LayerNorms, num_hidden_layers blocks with biased
    q/k/v/o and fc1/fc2, the pixel-shuffle adapter (fc1 [projector_input_dim, intermediate_size], fc2
    [projector_output_dim, same]) and the projector [text hidden, vision_output_dim], no biases."""
    h, inter = _get(vc, "hidden_size", 768, origin), _get(vc, "intermediate_size", 5632, origin)
    depth, patch = _get(vc, "num_hidden_layers", 34, origin, MAX_LAYERS), _get(vc, "patch_size", 14, origin, 1024)
    chans, image = _get(vc, "num_channels", 3, origin, 64), _get(vc, "image_size", 448, origin, 1 << 16)
    p = "vision_model"
    t.add(f"{p}.patch_embedding.linear.weight", (h, chans * patch * patch), "vision")
    t.add(f"{p}.class_embedding", (h,), "vision")
    t.add(f"{p}.positional_embedding_vlm", ((image // patch) ** 2 + 1, h), "vision")
    for n in ("layernorm_pre", "layernorm_post"):
        t.add(f"{p}.{n}.weight", (h,), "vision")
        t.add(f"{p}.{n}.bias", (h,), "vision")
    for i in range(depth):
        b = f"{p}.model.layers.{i}"
        for n, (o, k) in (("self_attn.q_proj", (h, h)), ("self_attn.k_proj", (h, h)), ("self_attn.v_proj", (h, h)),
                          ("self_attn.o_proj", (h, h)), ("mlp.fc1", (inter, h)), ("mlp.fc2", (h, inter))):
            t.add(f"{b}.{n}.weight", (o, k), "vision")
            t.add(f"{b}.{n}.bias", (o,), "vision")
        for n in ("input_layernorm", "post_attention_layernorm"):
            t.add(f"{b}.{n}.weight", (h,), "vision")
            t.add(f"{b}.{n}.bias", (h,), "vision")
    pin, pout = _get(vc, "projector_input_dim", 4096, origin), _get(vc, "projector_output_dim", 4096, origin)
    t.add(f"{p}.vision_adapter.mlp.fc1.weight", (pin, inter), "vision")
    t.add(f"{p}.vision_adapter.mlp.fc2.weight", (pout, pout), "vision")
    t.add("multi_modal_projector.linear_1.weight", (text_hidden, _get(vc, "vision_output_dim", 4096, origin)),
          "vision")
    return "vision tower: Llama 4 ViT + pixel-shuffle adapter from vision_config"


def gemma4_vision(t: Tensors, vc: dict, text_hidden: int, origin: str) -> str:
    """Gemma 4 vision (transformers modeling_gemma4.py): patch_embedder input_proj [h, 3 p^2] and a
    [2, position_embedding_size, h] table; Gemma3-style encoder layers (q/k/v/o without bias, q/k norms
    over head_dim, four norms, gated MLP); std_bias/std_scale [h] when `standardize`; then the
    multimodal embedder's embedding_projection [text hidden, h]."""
    h, inter = _get(vc, "hidden_size", 1152, origin), _get(vc, "intermediate_size", 4304, origin)
    depth, patch = _get(vc, "num_hidden_layers", 27, origin, MAX_LAYERS), _get(vc, "patch_size", 16, origin, 1024)
    nq = _get(vc, "num_attention_heads", 16, origin, 65536)
    hd = _get(vc, "head_dim", h // nq, origin, 65536)
    nkv = _get(vc, "num_key_value_heads", nq, origin, 65536)
    p = "model.vision_tower"
    t.add(f"{p}.patch_embedder.input_proj.weight", (h, 3 * patch * patch), "vision")
    t.add(f"{p}.patch_embedder.position_embedding_table",
          (2, _get(vc, "position_embedding_size", 10240, origin, 1 << 24), h), "vision")
    for i in range(depth):
        b = f"{p}.encoder.layers.{i}"
        for n, (o, k) in (("q_proj", (nq * hd, h)), ("k_proj", (nkv * hd, h)), ("v_proj", (nkv * hd, h)),
                          ("o_proj", (h, nq * hd))):
            t.add(f"{b}.self_attn.{n}.linear.weight", (o, k), "vision")
        t.add(f"{b}.self_attn.q_norm.weight", (hd,), "vision")
        t.add(f"{b}.self_attn.k_norm.weight", (hd,), "vision")
        for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm"):
            t.add(f"{b}.{n}.weight", (h,), "vision")
        for n, (o, k) in (("gate_proj", (inter, h)), ("up_proj", (inter, h)), ("down_proj", (h, inter))):
            t.add(f"{b}.mlp.{n}.linear.weight", (o, k), "vision")
    if vc.get("standardize", False) is True:
        t.add(f"{p}.std_bias", (h,), "vision")
        t.add(f"{p}.std_scale", (h,), "vision")
    t.add("model.embed_vision.embedding_projection.weight", (text_hidden, h), "vision")
    return "vision tower: Gemma 4 ViT + embedder from vision_config"


def qwen3_5_vision(t: Tensors, vc: dict, text_hidden: int, origin: str) -> str:
    """Qwen3.5 / Qwen3.5-MoE: Qwen3-VL's tower without deepstack (transformers modeling_qwen3_5.py
    Qwen3_5VisionModel(Qwen3VLVisionModel) deletes deepstack_merger_list, modular_qwen3_5.py:436-443; the MoE
    wrapper's Qwen3_5MoeVisionModel subclasses it, modular_qwen3_5_moe.py:243): a listed index builds nothing."""
    qwen3_vl(t, {**vc, "deepstack_visual_indexes": []}, text_hidden, origin)
    return "vision tower: Qwen3.5 ViT (Qwen3-VL's, no deepstack) from vision_config"


# the vision sub-config's model_type, else the wrapper's (the Qwen3.5-MoE release names its tower `qwen3_5_moe`)
def mllama_vision(t: Tensors, vc: dict, text_hidden: int, origin: str) -> str:
    """Llama 3.2 Vision's tower (modeling_mllama.py MllamaVisionModel): class_embedding [h], patch conv [h, C, p, p]
    without bias, a gated position embedding (gate, [(image/p)^2 + 1, h], tile_embedding [ratios + 1, tiles x
    positions x h], :147-161), gated pre- and post-tile embeddings (gate, [ratios + 1, tiles x h], :121-130),
    layernorm_pre / _post, num_hidden_layers blocks and num_global_layers gated blocks (gate_attn, gate_ffn) of
    q/k/v/o without bias, fc1 / fc2 with bias and two LayerNorms; then multi_modal_projector [text,
    vision_output_dim] + bias. ratios = len(supported_aspect_ratios) (8 by default)."""
    h, inter = _get(vc, "hidden_size", 1280, origin), _get(vc, "intermediate_size", 5120, origin)
    patch, image = _get(vc, "patch_size", 14, origin, 1024), _get(vc, "image_size", 448, origin, 1 << 16)
    chans, tiles = _get(vc, "num_channels", 3, origin, 64), _get(vc, "max_num_tiles", 4, origin, 64)
    local, glob = (_get(vc, k, d, origin, MAX_LAYERS) for k, d in (("num_hidden_layers", 32), ("num_global_layers", 8)))
    ratios = vc.get("supported_aspect_ratios")
    rows = (len(ratios) if isinstance(ratios, list) and ratios else 8) + 1
    out = _get(vc, "vision_output_dim", 7680, origin)
    positions = (image // patch) ** 2 + 1
    p = "vision_model"
    t.add(f"{p}.class_embedding", (h,), "vision")
    t.add(f"{p}.patch_embedding.weight", (h, chans, patch, patch), "vision")
    t.add(f"{p}.gated_positional_embedding.gate", (1,), "vision")
    t.add(f"{p}.gated_positional_embedding.embedding", (positions, h), "vision")
    t.add(f"{p}.gated_positional_embedding.tile_embedding.weight", (rows, tiles * positions * h), "vision")
    for name in ("pre_tile_positional_embedding", "post_tile_positional_embedding"):
        t.add(f"{p}.{name}.gate", (1,), "vision")
        t.add(f"{p}.{name}.embedding.weight", (rows, tiles * h), "vision")
    for name in ("layernorm_pre", "layernorm_post"):
        _proj_norm(t, f"{p}.{name}", h)
    for stack, depth, gated in (("transformer", local, False), ("global_transformer", glob, True)):
        for i in range(depth):
            b = f"{p}.{stack}.layers.{i}"
            if gated:
                t.add(f"{b}.gate_attn", (1,), "vision")
                t.add(f"{b}.gate_ffn", (1,), "vision")
            for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
                _proj(t, f"{b}.self_attn.{name}", h, h, False)
            _proj(t, f"{b}.mlp.fc1", h, inter, True)
            _proj(t, f"{b}.mlp.fc2", inter, h, True)
            _proj_norm(t, f"{b}.input_layernorm", h)
            _proj_norm(t, f"{b}.post_attention_layernorm", h)
    _proj(t, "multi_modal_projector", out, text_hidden, True)
    return "vision tower: Llama 3.2 Vision (MllamaVisionModel) from vision_config + projector"


def _proj_norm(t: Tensors, name: str, h: int) -> None:
    t.add(f"{name}.weight", (h,), "vision")
    t.add(f"{name}.bias", (h,), "vision")


_BY_TYPE = {"mllama_vision_model": mllama_vision, "mllama": mllama_vision,
            "gemma4_vision": gemma4_vision, "gemma4": gemma4_vision, "llama4_vision_model": llama4_vision,
            "llama4": llama4_vision, "qwen2_vl": qwen2_vl, "qwen2_5_vl": qwen2_5_vl, "qwen3_vl": qwen3_vl,
            "qwen3_vl_moe": qwen3_vl, "qwen3_5_vision": qwen3_5_vision, "qwen3_5_moe_vision": qwen3_5_vision,
            "qwen3_5": qwen3_5_vision, "qwen3_5_moe": qwen3_5_vision}


def fuyu(t: Tensors, top: dict, text_hidden: int, origin: str) -> str:
    """Fuyu has no vision encoder: patches go through one Linear(patch^2 x channels -> hidden) with bias."""
    patch, chans = _get(top, "patch_size", 30, origin, 1024), _get(top, "num_channels", 3, origin, 64)
    t.add("vision_embed_tokens.weight", (text_hidden, patch * patch * chans), "vision")
    t.add("vision_embed_tokens.bias", (text_hidden,), "vision")
    return "vision: Fuyu patch projection from patch_size x num_channels"


def clip(t: Tensors, vc: dict, origin: str, p: str = "vision_tower.vision_model") -> int:
    """CLIP vision transformer (modeling_clip.py CLIPVisionTransformer): class embedding, patch conv
    [h, C, p, p] (no bias), (image/p)^2 + 1 positions, pre/post LayerNorms, blocks with biased q/k/v/out
    projections, fc1/fc2 and two LayerNorms. Returns its width."""
    h, inter = _get(vc, "hidden_size", 768, origin), _get(vc, "intermediate_size", 3072, origin)
    depth, patch = _get(vc, "num_hidden_layers", 12, origin, MAX_LAYERS), _get(vc, "patch_size", 32, origin, 1024)
    chans, image = _get(vc, "num_channels", 3, origin, 64), _get(vc, "image_size", 224, origin, 1 << 16)
    t.add(f"{p}.embeddings.class_embedding", (h,), "vision")
    t.add(f"{p}.embeddings.patch_embedding.weight", (h, chans, patch, patch), "vision")
    t.add(f"{p}.embeddings.position_embedding.weight", ((image // patch) ** 2 + 1, h), "vision")
    for n in ("pre_layrnorm", "post_layernorm"):
        t.add(f"{p}.{n}.weight", (h,), "vision")
        t.add(f"{p}.{n}.bias", (h,), "vision")
    for i in range(depth):
        b = f"{p}.encoder.layers.{i}"
        for n, (o, k) in (("self_attn.q_proj", (h, h)), ("self_attn.k_proj", (h, h)), ("self_attn.v_proj", (h, h)),
                          ("self_attn.out_proj", (h, h)), ("mlp.fc1", (inter, h)), ("mlp.fc2", (h, inter))):
            t.add(f"{b}.{n}.weight", (o, k), "vision")
            t.add(f"{b}.{n}.bias", (o,), "vision")
        for n in ("layer_norm1", "layer_norm2"):
            t.add(f"{b}.{n}.weight", (h,), "vision")
            t.add(f"{b}.{n}.bias", (h,), "vision")
    return h


def pixtral(t: Tensors, vc: dict, origin: str, p: str = "vision_tower") -> int:
    """Pixtral ViT (modeling_pixtral.py): patch_conv [h, C, p, p] (no bias), ln_pre RMSNorm, blocks of
    attention_norm, q/k/v/o (no bias), ffn_norm and a gated MLP; 2-D RoPE, no position table."""
    h, inter = _get(vc, "hidden_size", 1024, origin), _get(vc, "intermediate_size", 4096, origin)
    depth, patch = _get(vc, "num_hidden_layers", 24, origin, MAX_LAYERS), _get(vc, "patch_size", 16, origin, 1024)
    nq = _get(vc, "num_attention_heads", 16, origin, 65536)
    hd = _get(vc, "head_dim", h // nq, origin, 65536)
    t.add(f"{p}.patch_conv.weight", (h, _get(vc, "num_channels", 3, origin, 64), patch, patch), "vision")
    t.add(f"{p}.ln_pre.weight", (h,), "vision")
    for i in range(depth):
        b = f"{p}.transformer.layers.{i}"
        for n, (o, k) in (("attention.q_proj", (nq * hd, h)), ("attention.k_proj", (nq * hd, h)),
                          ("attention.v_proj", (nq * hd, h)), ("attention.o_proj", (h, nq * hd)),
                          ("feed_forward.gate_proj", (inter, h)), ("feed_forward.up_proj", (inter, h)),
                          ("feed_forward.down_proj", (h, inter))):
            t.add(f"{b}.{n}.weight", (o, k), "vision")
        t.add(f"{b}.attention_norm.weight", (h,), "vision")
        t.add(f"{b}.ffn_norm.weight", (h,), "vision")
    return h


def siglip(t: Tensors, vc: dict, origin: str, p: str = "vision_tower.vision_model") -> int:
    """SigLIP vision transformer (modeling_siglip.py): patch Conv2d [h, C, p, p] with bias, (image/p)^2
    positions (SiglipVisionEmbeddings:116-134), blocks of LayerNorm1, q/k/v/out projections, LayerNorm2 and
    fc1/fc2, all biased; post_layernorm; the attention-pooling head (probe, nn.MultiheadAttention, LayerNorm, MLP:
    :621-630) only under vision_use_head (the config class's default True, :103). Returns its width."""
    h, inter = _get(vc, "hidden_size", 768, origin), _get(vc, "intermediate_size", 3072, origin)
    patch, image = _get(vc, "patch_size", 16, origin, 1024), _get(vc, "image_size", 224, origin, 1 << 16)
    chans, depth = _get(vc, "num_channels", 3, origin, 64), _get(vc, "num_hidden_layers", 12, origin, MAX_LAYERS)
    e = f"{p}.embeddings"
    t.add(f"{e}.patch_embedding.weight", (h, chans, patch, patch), "vision")
    t.add(f"{e}.patch_embedding.bias", (h,), "vision")
    t.add(f"{e}.position_embedding.weight", ((image // patch) ** 2, h), "vision")

    def mlp(b: str) -> None:
        _proj(t, f"{b}.mlp.fc1", h, inter, True)
        _proj(t, f"{b}.mlp.fc2", inter, h, True)

    def norm(name: str) -> None:
        t.add(f"{name}.weight", (h,), "vision")
        t.add(f"{name}.bias", (h,), "vision")

    for i in range(depth):
        b = f"{p}.encoder.layers.{i}"
        norm(f"{b}.layer_norm1")
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            _proj(t, f"{b}.self_attn.{name}", h, h, True)
        norm(f"{b}.layer_norm2")
        mlp(b)
    norm(f"{p}.post_layernorm")
    if vc.get("vision_use_head", True) is not False:
        t.add(f"{p}.head.probe", (1, 1, h), "vision")
        t.add(f"{p}.head.attention.in_proj_weight", (3 * h, h), "vision")
        t.add(f"{p}.head.attention.in_proj_bias", (3 * h,), "vision")
        _proj(t, f"{p}.head.attention.out_proj", h, h, True)
        norm(f"{p}.head.layernorm")
        mlp(f"{p}.head")
    return h


def paligemma(t: Tensors, top: dict, vc: dict, text_hidden: int, origin: str) -> str:
    """PaliGemma (modeling_paligemma.py): SigLIP tower, multi_modal_projector.linear [projection_dim, vision]
    with bias (PaliGemmaMultiModalProjector:74-77; the wrapper's projection_dim is the vision config's)."""
    h = siglip(t, vc, origin)
    _proj(t, "multi_modal_projector.linear", h, _get(top, "projection_dim", _get(vc, "projection_dim", 2048, origin),
                                                    origin), True)
    return "vision tower: SigLIP from vision_config + PaliGemma projector"


def gemma3(t: Tensors, top: dict, vc: dict, text_hidden: int, origin: str) -> str:
    """Gemma 3 (modeling_gemma3.py): SigLIP tower (the releases set vision_use_head false) and
    Gemma3MultiModalProjector: mm_input_projection_weight [vision, text] (a bare parameter) and
    mm_soft_emb_norm [vision] (a Gemma RMSNorm, weight only); the average pooling to mm_tokens_per_image has
    no weights."""
    h = siglip(t, vc, origin)
    t.add("multi_modal_projector.mm_input_projection_weight", (h, text_hidden), "vision")
    t.add("multi_modal_projector.mm_soft_emb_norm.weight", (h,), "vision")
    return "vision tower: SigLIP from vision_config + Gemma 3 projector"


def _proj(t: Tensors, name: str, d_in: int, d_out: int, bias: bool) -> None:
    t.add(f"{name}.weight", (d_out, d_in), "vision")
    if bias:
        t.add(f"{name}.bias", (d_out,), "vision")


def llava(t: Tensors, top: dict, vc: dict, text_hidden: int, origin: str) -> str:
    """LLaVA / LLaVA-NeXT: CLIP tower, multi_modal_projector linear_1 [text, vision] + GELU + linear_2
    [text, text] with biases (modeling_llava.py); LLaVA-NeXT adds image_newline [text]."""
    h = clip(t, vc, origin)
    bias = top.get("multimodal_projector_bias", True) is not False
    _proj(t, "multi_modal_projector.linear_1", h, text_hidden, bias)
    _proj(t, "multi_modal_projector.linear_2", text_hidden, text_hidden, bias)
    if top.get("model_type") == "llava_next":
        t.add("image_newline", (text_hidden,), "vision")
    return "vision tower: CLIP from vision_config + LLaVA projector"


def mistral3(t: Tensors, top: dict, vc: dict, text_hidden: int, origin: str) -> str:
    """Mistral 3 (modeling_mistral3.py): Pixtral tower, then the projector: RMSNorm [vision],
    patch_merger.merging_layer [vision, vision x merge^2], linear_1 [text, vision], linear_2 [text, text]
    (biases per multimodal_projector_bias)."""
    h = pixtral(t, vc, origin)
    merge = _get(top, "spatial_merge_size", 2, origin, 64)
    bias = top.get("multimodal_projector_bias") is True
    t.add("multi_modal_projector.norm.weight", (h,), "vision")
    _proj(t, "multi_modal_projector.patch_merger.merging_layer", h * merge * merge, h, False)
    _proj(t, "multi_modal_projector.linear_1", h, text_hidden, bias)
    _proj(t, "multi_modal_projector.linear_2", text_hidden, text_hidden, bias)
    return "vision tower: Pixtral from vision_config + Mistral 3 projector"


# Vision encoders named by checkpoint id rather than described by a sub-config, with their published
# shapes: openai/clip-vit-large-patch14-336 config.json vision_config; timm vision_transformer.py
# vit_so400m_patch14_siglip_384 (embed_dim 1152, depth 27, mlp_ratio 3.7362 -> 4304, patch 14).
NAMED_ENCODERS = {
    "openai/clip-vit-large-patch14-336": {"hidden_size": 1024, "intermediate_size": 4096,
                                          "num_hidden_layers": 24, "patch_size": 14, "image_size": 336},
    "vit_so400m_patch14_siglip_384": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
                                      "patch_size": 14, "image_size": 384},
}


def phi3_v(t: Tensors, top: dict, text_hidden: int, origin: str) -> tuple[str | None, bool]:
    """Phi-3/3.5-vision (modeling_phi3_v.py): the CLIP encoder `img_processor.model_name` names, the HD
    projection Linear(4 x image_dim_out -> h) + GELU + Linear(h -> h) with biases, glb_GN and sub_GN."""
    ip = top.get("img_processor")
    if not isinstance(ip, dict):
        ip = {}  # no img_processor block: no encoder named, so none is known
    enc = NAMED_ENCODERS.get(str(ip.get("model_name")))
    if enc is None:
        return "vision encoder of img_processor not known: not sized", True
    clip(t, enc, origin, p="model.vision_embed_tokens.img_processor.vision_model")
    embd = top.get("embd_layer")
    if not isinstance(embd, dict):
        embd = {}
    # use_hd_transform: 2 x 2 crops concatenated before the projection
    dim = _get(ip, "image_dim_out", enc["hidden_size"], origin) * (4 if embd.get("use_hd_transform", True) else 1)
    _proj(t, "model.vision_embed_tokens.img_projection.0", dim, text_hidden, True)
    _proj(t, "model.vision_embed_tokens.img_projection.2", text_hidden, text_hidden, True)
    t.add("model.vision_embed_tokens.glb_GN", (1, 1, dim), "vision")
    t.add("model.vision_embed_tokens.sub_GN", (1, 1, 1, dim), "vision")
    return "vision: CLIP ViT-L/14-336 (img_processor) + HD projection", False


def minicpmv(t: Tensors, top: dict, text_hidden: int, origin: str) -> tuple[str | None, bool]:
    """MiniCPM-V 2 (remote modeling_minicpmv.py + resampler.py): the timm SigLIP `vision_encoder` names
    (last block dropped with drop_vision_last_layer; patch conv and norms with biases, a position table,
    no pooling head), then the Resampler: query [query_num, h], kv_proj [h, vision], an
    nn.MultiheadAttention (in_proj [3h, h] + b, out_proj + b), ln_q/ln_kv/ln_post, proj [h, h] and the
    fixed 2-D sin-cos pos_embed [query_num, h] it stores as a parameter."""
    name = str(top.get("vision_encoder") or "").split(".")[0]
    enc = NAMED_ENCODERS.get(name)
    if enc is None:
        return f"vision encoder '{name}' not known: not sized", True
    v, inter, patch = enc["hidden_size"], enc["intermediate_size"], enc["patch_size"]
    depth = enc["num_hidden_layers"] - (1 if top.get("drop_vision_last_layer") else 0)
    t.add("vpm.patch_embed.proj.weight", (v, 3, patch, patch), "vision")
    t.add("vpm.patch_embed.proj.bias", (v,), "vision")
    t.add("vpm.pos_embed", (1, (enc["image_size"] // patch) ** 2, v), "vision")
    for i in range(depth):
        _block(t, f"vpm.blocks.{i}", v, inter)
    t.add("vpm.norm.weight", (v,), "vision")
    t.add("vpm.norm.bias", (v,), "vision")
    q, h = _get(top, "query_num", 64, origin, 1 << 16), text_hidden
    t.add("resampler.query", (q, h), "vision")
    t.add("resampler.pos_embed", (q, h), "vision")
    _proj(t, "resampler.kv_proj", v, h, False)
    _proj(t, "resampler.attn.in_proj", h, 3 * h, True)
    _proj(t, "resampler.attn.out_proj", h, h, True)
    for n in ("ln_q", "ln_kv", "ln_post"):
        t.add(f"resampler.{n}.weight", (h,), "vision")
        t.add(f"resampler.{n}.bias", (h,), "vision")
    t.add("resampler.proj", (h, h), "vision")
    return "vision: timm SigLIP (vision_encoder) + MiniCPM-V resampler", False


_WRAPPERS = {"llava": llava, "llava_next": llava, "mistral3": mistral3, "paligemma": paligemma, "gemma3": gemma3}
# top-level keys those rules read (so confidence.py does not call them unread)
TOWER_KEYS = frozenset({"img_processor", "embd_layer", "vision_encoder", "drop_vision_last_layer", "query_num",
                        "patch_size", "num_channels", "spatial_merge_size", "multimodal_projector_bias"})
_FLAT = {"phi3_v": phi3_v, "minicpmv": minicpmv}


def size_towers(t: Tensors, top: dict[str, Any], vision: dict[str, Any] | None, wrapper: str,
                text_hidden: int, origin: str) -> tuple[str | None, bool]:
    """Add the wrapper's towers to `t`. Returns (note, approximated): approximated means a tower was
    sized by the SigLIP-shaped fallback or not at all (no rule here)."""
    if wrapper == "fuyu":
        return fuyu(t, top, text_hidden, origin), False
    if wrapper in _FLAT:
        return _FLAT[wrapper](t, top, text_hidden, origin)
    if not vision:
        return None, False
    if wrapper in _WRAPPERS:
        return _WRAPPERS[wrapper](t, top, vision, text_hidden, origin), False
    rule = _BY_TYPE.get(str(vision.get("model_type") or wrapper)) or _BY_TYPE.get(wrapper)
    if rule is not None:
        return rule(t, vision, text_hidden, origin), False
    return vision_tower(t, vision, text_hidden, origin=origin), True
