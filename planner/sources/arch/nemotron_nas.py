"""Nemotron-NAS / DeciLM (`nemotron-nas`, `DeciLMForCausalLM`): a Llama whose layers were cut per block by
neural architecture search (Llama-3.3-Nemotron-Super-49B, Llama-3.1-Nemotron-Ultra-253B, Nemotron-51B).

Why its own file: `block_configs` holds one entry per layer, and each may drop its attention (`no_op`: no
q/k/v/o, no input_layernorm, no KV cache), keep it with its own KV grouping (`n_heads_in_group`: kv heads =
heads // n_heads_in_group), drop its FFN (`no_op`: no MLP, no post_attention_layernorm), or give the FFN its
own width (`ffn_mult`). Sized as one Llama layer per block, Super-49B is +110% and its KV 13x.

Rules from vLLM vllm/model_executor/models/nemotron_nas.py @ 2ee6ae7:
  :64-74   intermediate = round_up(int(2 * ffn_mult * hidden / 3), 256)   (`_ffn_mult_to_intermediate_size`)
  :152-168 attention only when not no_op: DeciLMAttention(num_kv_heads = heads // n_heads_in_group)
           and its input_layernorm; a no-op block has neither
  :170-190 FFN only when not no_op: LlamaMLP(intermediate from ffn_mult, else ffn.intermediate_size)
           and its post_attention_layernorm
`replace_with_linear` (one hidden x hidden linear in place of the block's attention or FFN, checkpoint keys
`self_attn.linear_attn` / `mlp.linear_mlp`) is not built by vLLM's DeciLM: sized so, and said as a guess.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ...core.constants import MAX_LAYERS
from ...core.errors import ConfigError
from ...core.spec import NONE, LayerSpec
from .base import ArchSpec, Tensors, config_dtype, finish, require_positive
from .decoder import DecoderArgs

_MAX_FFN_MULT = 64.0  # Ultra-253B's widest block is 39.0; past this the value is not a width multiplier


@dataclass
class Args(DecoderArgs):
    """DeciLMConfig keys (the Hub's configuration_decilm.py): LlamaConfig plus the per-block plan."""

    vocab_size: int = 32000
    max_position_embeddings: int = 2048
    block_configs: list | None = None


@dataclass(frozen=True)
class Block:
    """One layer's plan: kv heads (0 = no attention), FFN width (0 = no FFN), linear stand-ins."""

    kv_heads: int
    ffn_width: int
    linear_attention: bool = False
    linear_ffn: bool = False


def ffn_width(mult: float, hidden: int) -> int:
    """vLLM nemotron_nas.py:64-74: int(2 * ffn_mult * hidden / 3) rounded up to a multiple of 256."""
    n = int(2 * mult * hidden / 3)
    return n if n % 256 == 0 else n + 256 - n % 256


def _bad(origin: str, i: int, what: str, value: Any) -> ConfigError:
    return ConfigError(f"Cannot size the model from '{origin}': block_configs[{i}] {what} "
                       f"(got {value!r:.60}).", origin, key="block_configs")


def _block(raw: Any, i: int, heads: int, hidden: int, origin: str) -> Block:
    """One block_configs entry -> Block, each value checked (an untrusted config)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("attention", {}), dict) \
            or not isinstance(raw.get("ffn", {}), dict):
        raise _bad(origin, i, "must be an object with 'attention' and 'ffn' objects", raw)
    att, ffn = raw.get("attention") or {}, raw.get("ffn") or {}
    kv, lin_att = 0, bool(att.get("replace_with_linear"))
    if not att.get("no_op") and not lin_att:
        g = att.get("n_heads_in_group")
        if not isinstance(g, int) or isinstance(g, bool) or g < 1 or heads % g:
            raise _bad(origin, i, f"attention.n_heads_in_group must divide the {heads} heads", g)
        kv = heads // g
    width, lin_ffn = 0, bool(ffn.get("replace_with_linear"))
    if not ffn.get("no_op") and not lin_ffn:
        mult, inter = ffn.get("ffn_mult"), ffn.get("intermediate_size")
        if isinstance(mult, (int, float)) and not isinstance(mult, bool) and 0 < mult <= _MAX_FFN_MULT:
            width = ffn_width(float(mult), hidden)
        elif isinstance(inter, int) and not isinstance(inter, bool) and 0 < inter <= 64 * hidden:
            width = inter
        else:
            raise _bad(origin, i, f"ffn needs ffn_mult in (0, {_MAX_FFN_MULT:g}] or a positive intermediate_size",
                       mult if inter is None else inter)
    return Block(kv, width, lin_att and not att.get("no_op"), lin_ffn and not ffn.get("no_op"))


def blocks(args: Args, origin: str = "config.json") -> list[Block]:
    """The per-layer plan; one entry per num_hidden_layers, as DeciLMDecoderLayer indexes it."""
    raw = args.block_configs
    n = args.num_hidden_layers
    if not isinstance(raw, list) or len(raw) != n or n > MAX_LAYERS:
        got = len(raw) if isinstance(raw, list) else raw
        raise ConfigError(f"Cannot size the model from '{origin}': block_configs must list one block per layer "
                          f"({n} layers, got {got!r:.40}).", origin, key="block_configs")
    return [_block(b, i, args.num_attention_heads, args.hidden_size, origin) for i, b in enumerate(raw)]


def to_spec(args: Args, origin: str = "config.json") -> ArchSpec:
    require_positive(args, "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", origin=origin)
    h, nq = args.hidden_size, args.num_attention_heads
    hd = args.head_dim or h // nq
    plan = blocks(args, origin)
    dtype, known = config_dtype(args)
    t = Tensors(dtype)
    t.embeddings(args.vocab_size, h, args.tie_word_embeddings)
    layers, linear = [], 0
    for i, b in enumerate(plan):
        p = f"model.layers.{i}"
        if b.kv_heads:
            t.attention(f"{p}.self_attn", hidden=h, q_heads=nq, kv_heads=b.kv_heads, head_dim=hd,
                        qkv_bias=args.attention_bias, o_bias=args.attention_bias)
        if b.linear_attention:
            t.linear(f"{p}.self_attn.linear_attn", h, h, "attention")
        if b.kv_heads or b.linear_attention:
            t.norm(f"{p}.input_layernorm", h)
        if b.ffn_width:
            t.mlp(f"{p}.mlp", h, b.ffn_width, bias=args.mlp_bias)
        if b.linear_ffn:
            t.linear(f"{p}.mlp.linear_mlp", h, h, "ffn")
        if b.ffn_width or b.linear_ffn:
            t.norm(f"{p}.post_attention_layernorm", h)
        linear += b.linear_attention + b.linear_ffn
        kind = "dense" if b.ffn_width or b.linear_ffn else "none"
        width = b.ffn_width or (h if b.linear_ffn else 0)
        if b.kv_heads:
            layers.append(LayerSpec(q_heads=nq, kv_heads=b.kv_heads, head_dim_k=hd, head_dim_v=hd, ffn=kind,
                                    ffn_width=width))
        else:
            layers.append(LayerSpec(attention=NONE, ffn=kind, ffn_width=width))
    skipped = sum(1 for b in plan if not b.kv_heads and not b.linear_attention)
    notes = [f"block_configs: {len(plan) - skipped} attention blocks, {skipped} no-op (no KV cache), FFN widths "
             f"{min(b.ffn_width for b in plan)}..{max(b.ffn_width for b in plan)} (vLLM nemotron_nas.py rules)"]
    guesses = ((f"{linear} replace_with_linear block part(s) sized as one hidden x hidden linear "
                "(no engine source at hand builds them)",) if linear else ())
    spec = finish(args, t, layers, dtype_known=known, notes=notes, guesses=guesses)
    return dataclasses.replace(spec, intermediate=max(b.ffn_width for b in plan))
