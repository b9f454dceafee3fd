"""mlx-lm on Apple silicon (`mlx_lm.server`, `mlx_lm.generate`): every fact the planner uses.

Sources (docs/engines.md "mlx-lm"): mlx_lm/generate.py (`--draft-model`, `--num-draft-tokens`; the draft is refused
when `draft_tokenizer.vocab_size != tokenizer.vocab_size`; prefill_step_size 2048), mlx_lm/models/cache.py
(KVCache grows in steps of 256, RotatingKVCache holds the window), ml-explore/mlx PR #871 (graph
construction cost per forward).
"""

from __future__ import annotations

from ..core.calibration import ANY, get, sourced
from ..core.spec import LayerSpec
from .base import (
    CATALOG,
    DRAFT_MODEL,
    EAGLE3,
    EARLY_EXIT,
    EXACT,
    LOWER,
    MTP,
    NGRAM,
    Engine,
    LaunchInput,
    Side,
    Verdict,
    pad,
    quote,
    weakest_basis,
    with_notes,
)

NAME = "mlx"
PREFILL_STEP = 2048  # mlx_lm generate prefill_step_size
CACHE_STEP = 256  # KVCache.step


def tokens_held(layer: LayerSpec, context: int, batch: int, chunk: int | None, is_windowed: bool) -> int:
    """KVCache grows in steps of 256; RotatingKVCache holds the window."""
    if is_windowed:
        return batch * min(context, layer.window or context)
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


# The planner's KV spellings -> mlx_lm.server --kv-bits (group 64: 8 bits = 8.5 bits/element with scales,
# as q8_0; 4 bits = 4.5, as q4_0).
KV_BITS = {"q8_0": 8, "q8": 8, "int8": 8, "q4_0": 4, "q4": 4, "int4": 4}


def launch(x: LaunchInput) -> dict[str, str]:
    """`mlx_lm.server` (mlx-lm 0.32.2 mlx_lm/server.py: --model :1925, --draft-model :1953,
    --num-draft-tokens :1959, --kv-bits :2054; a draft or --kv-bits turns batching off, :460, :768-773)."""
    notes: list[str] = []
    convert, model = _converted(x.target, x.weights_quant)
    draft_convert, draft = _converted(x.draft, x.draft_weights_quant or x.weights_quant) if x.draft else ([], None)
    cmd = f"mlx_lm.server --model {quote(model or x.target)}"  # `model` is None only for no target
    kv = (x.kv_dtype or "auto").lower()
    if kv in KV_BITS:
        cmd += f" --kv-bits {KV_BITS[kv]}"
        notes.append("--kv-bits disables batching in mlx_lm.server")
    elif kv not in ("auto", "f16", "bf16"):
        notes.append(f"KV type '{x.kv_dtype}' has no mlx_lm --kv-bits equivalent: left unquantised")
    if x.draft:
        cmd += f" --draft-model {quote(draft or x.draft)} --num-draft-tokens {x.k}"
        notes.insert(0, "a draft model disables batching in mlx_lm.server")
        if x.heterogeneous:
            notes.append("mlx_lm has no heterogeneous-vocabulary path: mlx_lm.generate refuses the pair, "
                         "mlx_lm.server only warns and drafts with mismatched ids")
    steps = convert + draft_convert
    out = {"convert": " && ".join(steps), "command": cmd} if steps else {"command": cmd}
    return with_notes(out, notes)


def _converted(ref: str | None, quant: str | None) -> tuple[list[str], str | None]:
    """The convert step a weights format the ledger sized needs, and the folder it writes (else `ref` itself).

    mlx_lm.server loads what it is given, so an 8- or 4-bit plan quantises first: mlx_lm.convert
    --hf-path REF -q --q-bits N --q-group-size 64 --mlx-path DIR (mlx_lm/convert.py configure_parser's
    --hf-path, --mlx-path, -q, --q-group-size, --q-bits; ml-explore/mlx-lm 04494c9), the same group size
    the ledger sizes; the server then serves DIR. convert() refuses a DIR that already exists.
    """
    bits = {"int8": 8, "int4": 4, "q8": 8, "q4": 4}.get((quant or "").lower())
    if ref is None or not bits:
        return [], ref
    folder = f"{ref.rstrip('/').rsplit('/', 1)[-1]}-{bits}bit"
    return [f"mlx_lm.convert --hf-path {quote(ref)} -q --q-bits {bits} --q-group-size 64 "
            f"--mlx-path {quote(folder)}"], folder


ENGINE = Engine(
    name=NAME,
    aliases=("mlx-lm", "mlx_lm", "mlxlm"),
    summary="mlx-lm: Apple silicon, unified memory, one device",
    overhead_bytes=0,
    overhead_source="MLX/Metal: no per-device context counted; usable share is set by the machine",
    # lazy graph construction: 1450 graphs/s for Mistral-7B 4-bit (ml-explore/mlx PR #871)
    # = 0.69 ms per forward / 32 layers = 21.6 us per layer
    forward_overhead_s=(0.0, get(NAME, ANY, "forward_per_layer_s").value),
    forward_overhead_source=get(NAME, ANY, "forward_per_layer_s").source,
    tokens_held=tokens_held,
    prefill_chunk=prefill_chunk,
    pair_rule=pair_rule,
    launch=launch,
    tp_unsplit_groups=frozenset({"embedding", "norm", "other", "vision"}),
    default_split="single",
    kv_suggestion="q8_0",
    weights_ladder=("int8", "int4"),
    quant_group_size=64,
    verify_backend={"apple": "mlx-metal"},
    sampled_acceptance="match",
    sampled_acceptance_source=("mlx_lm/generate.py:616 @ d78bf58e (speculative_generate_step): the draft and the "
                               "target each sample with the same sampler and the round stops at the first "
                               "'if tn != dtn: break' (the same rule since mlx-examples PR #1155)"),
    methods={DRAFT_MODEL: "--draft-model DRAFT --num-draft-tokens K (mlx_lm/server.py:1953, :1959)"},
    method_refusals={
        EAGLE3: "mlx-lm drafts only with a separate --draft-model (mlx_lm/server.py:1953): no EAGLE-3 heads",
        MTP: "mlx-lm drafts only with a separate --draft-model (mlx_lm/server.py:1953): MTP layers are not used",
        NGRAM: "mlx-lm has no n-gram drafting (prompt lookup was proposed in ml-explore/mlx-lm PR #1297, "
               "closed unmerged)",
        EARLY_EXIT: "mlx-lm has no early-exit self-speculation (only --draft-model, mlx_lm/server.py:1953)"},
    bandwidth_efficiency={
        # single die: M3 Pro Qwen2.5-7B 4-bit 29.21 t/s x 4.28 GB = 0.83 of 150 GB/s (lmstudio-ai/mlx-engine PR #83),
        # Qwen2.5-32B 4-bit 7.30 t/s x 18.4 GB = 0.90 (LM Studio 0.3.10 blog)
        "apple": sourced(NAME, "apple", "bandwidth_share"),
        # two dies (UltraFusion): mlx-lm Qwen2.5-32B 4-bit on M2 Ultra 31.77 t/s x ~18.4 GB = 0.73 of 800 GB/s (mlx #1861)
        "apple-ultra": sourced(NAME, "apple-ultra", "bandwidth_share"),
    },
)
