"""EAGLE-3 draft heads (`LlamaForCausalLMEagle3`, SpecForge / vLLM / SGLang): one Llama layer fed by
the target's fused hidden states.

Shapes from SpecForge specforge/modeling/draft/llama3_eagle.py (the layout vLLM llama_eagle3.py
loads): embed_tokens [vocab, h]; fc [h, 3 h] fusing three target layers; a midlayer whose q/k/v
take 2 h (token embedding + hidden state) with a hidden_norm beside input/post-attention norms;
a final norm; lm_head over `draft_vocab_size` rows; buffers d2t int64 [draft_vocab] and t2d bool
[vocab] mapping draft ids to target ids. Its one attention layer caches K/V like the target's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.spec import LayerSpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs


@dataclass
class Args(DecoderArgs):
    """The draft's LlamaConfig plus SpecForge's draft_vocab_size / target_hidden_size."""

    draft_vocab_size: int | None = None
    target_hidden_size: int | None = None


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    nkv, hd = args.num_key_value_heads or nq, args.head_dim or h // nq
    draft_vocab = args.draft_vocab_size or args.vocab_size
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.add("model.embed_tokens.weight", (args.vocab_size, h), "embedding")
    t.linear("model.fc", 3 * (args.target_hidden_size or h), h, "other")
    layers = []
    for i in range(args.num_hidden_layers):
        p = f"model.layers.{i}" if args.num_hidden_layers > 1 else "model.midlayer"
        a = f"{p}.self_attn"
        t.linear(f"{a}.q_proj", 2 * h, nq * hd, "attention", args.attention_bias)
        t.linear(f"{a}.k_proj", 2 * h, nkv * hd, "attention", args.attention_bias)
        t.linear(f"{a}.v_proj", 2 * h, nkv * hd, "attention", args.attention_bias)
        t.linear(f"{a}.o_proj", nq * hd, h, "attention", args.attention_bias)
        t.mlp(f"{p}.mlp", h, args.intermediate_size, bias=args.mlp_bias)
        for n in ("hidden_norm", "input_layernorm", "post_attention_layernorm"):
            t.norm(f"{p}.{n}", h)
        layers.append(LayerSpec(q_heads=nq, kv_heads=nkv, head_dim_k=hd, head_dim_v=hd,
                                ffn_width=args.intermediate_size))
    t.norm("model.norm", h)
    t.add("lm_head.weight", (draft_vocab, h), "lm_head")
    t.add("d2t", (draft_vocab,), "other", dtype="I64")
    t.add("t2d", (args.vocab_size,), "other", dtype="BOOL")
    return finish(args, t, layers, dtype_known=known)
