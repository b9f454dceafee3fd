"""mlx-lm on Apple silicon (`mlx_lm.server`, `mlx_lm.generate`): every fact the planner uses.

Sources (ENGINES.md): mlx_lm/generate.py (`--draft-model`, `--num-draft-tokens`; the draft is refused
when `draft_tokenizer.vocab_size != tokenizer.vocab_size`; prefill_step_size 2048), mlx_lm/models/cache.py
(KVCache grows in steps of 256, RotatingKVCache holds the window), ml-explore/mlx PR #871 (graph
construction cost per forward).
"""

from __future__ import annotations

from ..core.spec import LayerSpec
from .base import CATALOG, EXACT, LOWER, Engine, LaunchInput, Side, Verdict, pad, quote, weakest_basis

NAME = "mlx"
PREFILL_STEP = 2048  # mlx_lm generate prefill_step_size
CACHE_STEP = 256  # KVCache.step


def tokens_held(layer: LayerSpec, context: int, batch: int, chunk: int | None, is_windowed: bool) -> int:
    """KVCache grows in steps of 256; RotatingKVCache holds the window."""
    if is_windowed:
        return batch * min(context, layer.window)
    return batch * pad(context, CACHE_STEP)


def prefill_chunk(context: int, batch: int) -> int:
    return min(PREFILL_STEP, context * batch)


def pair_rule(t: Side, d: Side, same: bool | None) -> Verdict:
    """mlx_lm generate: `draft_tokenizer.vocab_size != tokenizer.vocab_size` -> refuse (base vocabulary)."""
    tf, df = t.fp, d.fp
    if tf and df and tf.base_vocab_size is not None and df.base_vocab_size is not None:
        a, b, what, conf = tf.base_vocab_size, df.base_vocab_size, "tokenizer.vocab_size (base vocabulary)", EXACT
        if weakest_basis(t, d) == "catalog":
            conf = CATALOG
    elif tf and df and tf.family and df.family and tf.family == df.family:
        return Verdict(NAME, True, None, None, f"same tokenizer family '{tf.family}' (catalog facts): "
                       f"equal tokenizer.vocab_size", CATALOG)
    elif tf and df and tf.basis != "config" and df.basis != "config":
        a, b, what, conf = tf.vocab_size, df.vocab_size, "len(tokenizer) (base vocabulary size unknown)", LOWER
    else:
        a, b, what, conf = t.spec.vocab, d.spec.vocab, "config vocab_size (no tokenizer facts)", LOWER
    if a == b:
        return Verdict(NAME, True, None, None, f"{what} {a} on both", conf)
    return Verdict(NAME, False, "tokenizer.vocab_size", None,
                   f"{what} {a} (target) vs {b} (draft): mlx_lm refuses ('Draft model tokenizer does not match "
                   f"model tokenizer', mlx_lm/generate.py); no heterogeneous-vocabulary path", conf)


def launch(x: LaunchInput) -> dict[str, str]:
    cmd = f"mlx_lm.server --model {quote(x.target)}"
    if x.draft:
        cmd += f" --draft-model {quote(x.draft)} --num-draft-tokens {x.k}"
    return {"command": cmd, "note": "a draft model disables batching in mlx_lm.server"}


ENGINE = Engine(
    name=NAME,
    aliases=("mlx-lm", "mlx_lm", "mlxlm"),
    summary="mlx-lm: Apple silicon, unified memory, one device",
    overhead_bytes=0,
    overhead_source="MLX/Metal: no per-device context counted; usable share is set by the machine",
    # lazy graph construction: 1450 graphs/s for Mistral-7B 4-bit (ml-explore/mlx PR #871)
    # = 0.69 ms per forward / 32 layers = 21.6 us per layer
    forward_overhead_s=(0.0, 1 / 1450.453 / 32),
    forward_overhead_source="graph construction 0.69 ms per Mistral-7B forward, 21.6 us/layer (ml-explore/mlx "
                            "PR #871)",
    tokens_held=tokens_held,
    prefill_chunk=prefill_chunk,
    pair_rule=pair_rule,
    launch=launch,
    tp_unsplit_groups=frozenset({"embedding", "norm", "other", "vision"}),
    default_split="single",
    kv_suggestion="q8_0",
    weights_ladder=("int8", "int4"),
    quant_group_size=64,
)
