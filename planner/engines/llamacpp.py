"""llama.cpp (llama-server, llama-cli; Ollama and LM Studio run it): every fact the planner uses.

Sources are llama.cpp's own files (docs/engines.md "llama.cpp", docs/llamacpp.md): common/common.h (n_ubatch 512), src/llama-context.cpp
(context padded to 256, the compute-buffer reserve), common/fit.cpp (1 GiB per-device margin),
common/speculative.cpp (the draft compatibility check), common/arg.cpp (flags), PR #15860 (CUDA
context ~451-456 MiB) and PR #6766 (per-layer kernel launch cost).
"""

from __future__ import annotations

from ..core.constants import MiB
from ..core.spec import LayerSpec, ModelSpec
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
    Side,
    Verdict,
    first_text_mismatch,
    pad,
    weakest_basis,
    windowed,
)
from .llamacpp_launch import launch
from .llamacpp_speed import BANDWIDTH_EFFICIENCY, FORMAT_SHARE, FORWARD_OVERHEAD_BY_KIND, LAUNCH_PER_LAYER

NAME = "llama.cpp"
# n_ubatch default 512 (common/common.h); context padded to 256 (llama-context.cpp, GGML_PAD(n_ctx, 256));
# fit margin 1024 MiB per device (common/fit.cpp).
UBATCH = 512
CTX_PAD = 256
FIT_MARGIN_BYTES = 1024 * MiB
# common/speculative.cpp: SPEC_VOCAB_MAX_SIZE_DIFFERENCE (once 100) and SPEC_VOCAB_CHECK_START_TOKEN_ID.
MAX_VOCAB_DIFF = 128
CHECK_START_ID = 5
REFUSAL = ("llama.cpp reports any failed rule as 'draft model vocab type must match target model' "
           "(common/speculative.cpp common_speculative_are_compatible)")


# --- KV cache and compute buffer ----------------------------------------------------------------


def tokens_held(layer: LayerSpec, context: int, batch: int, chunk: int | None, is_windowed: bool) -> int:
    """One cache of pad(context x batch, 256) cells; SWA min(that, pad(window x batch + n_ubatch, 256)).

    The unified pool of `-np batch --kv-unified`, which `launch` below starts (docs/llamacpp.md).
    """
    cells = pad(context * batch, CTX_PAD)
    if is_windowed:
        return min(cells, pad((layer.window or context) * batch + (chunk or UBATCH), CTX_PAD))
    return cells


def prefill_chunk(context: int, batch: int) -> int:
    """The ubatch: n_ubatch tokens per forward (common/common.h)."""
    return UBATCH


def ffn_width(layer: LayerSpec, spec: ModelSpec) -> tuple[int, int]:
    """(FFN width F, extra rows of hidden width) of one layer's FFN in llama.cpp's graph.

    Dense: F = ffn_width. MoE (build_moe_ffn): gate/up/act are [expert_ff, n_used, n_tokens], so
    F = n_used x expert width (+ shared experts); the down projections give n_used hidden rows and
    their weighted sum one more (measured: Qwen3-30B-A3B shapes, docs/llamacpp.md).
    """
    if layer.ffn == "moe" and spec.moe:
        return (spec.moe.experts_per_token * spec.moe.expert_intermediate + spec.moe.shared_intermediate,
                spec.moe.experts_per_token + 1)
    return layer.ffn_width, 0


def compute_bytes(spec: ModelSpec, context: int, batch: int, chunk: int, swa: bool, *,
                  flash_attn: bool = True) -> int:
    """llama.cpp's device compute buffer: what ggml-alloc reserves for the worst-case graph.

    At start-up llama.cpp reserves the graph of one ubatch of u = min(n_ctx, n_ubatch) tokens,
    every row an output, over the full KV cache (llama-context.cpp sched_reserve/graph_reserve),
    and keeps that buffer. Intermediate tensors are freed after their last use, so the buffer is
    the largest of three stages (f32 activations, widths per token; masks f16 with flash attention):

      output   u x (vocab + hidden) x 4                 logits + final normed hidden state
      ffn      u x (3 F + 3 hidden) x 4 + masks         gate, up, swiglu (+ MoE: n_used hidden rows)
      attention u x (2 hidden + 2 q + k + v) x 4 + masks  flash attention (default: -fa auto)
               + cells x u x n_head x 4                 without it: the K*Q scores (-fa off)
      masks    sum over caches (full, SWA) of cells x u x 2 (f16; f32 = 4 B without flash attention)

    Calibration (tests/test_llamacpp.py, docs/llamacpp.md): exact for the published CUDA logs of
    Qwen2.5-3B (300.75 MiB, LLamaSharp #1099) and Mistral-7B without flash attention (164.00 and
    2144.00 MiB at 2k/32k context, fedora-copr/logdetective PR #106); CPU-only builds keep one
    more u x hidden x 4 in the same buffer (measured with llama-cpp-python 0.3.36). A GPU run also
    holds a host buffer (inputs: u x hidden x 4 + f32 masks) and the output buffer (n_seq x vocab x
    4, growing to the rows one batch asks for) in RAM; neither is on the device.
    """
    hidden = spec.hidden
    u = min(chunk, pad(context * batch, CTX_PAD))

    def held(layer: LayerSpec) -> int:
        return tokens_held(layer, context, batch, chunk, windowed(layer, swa))

    caches = {held(layer) for layer in spec.layers if layer.has_kv}
    mask_bytes = sum(c * u * (2 if flash_attn else 4) for c in caches)
    layer_peak = 0
    for layer in spec.layers:
        ffn, rows = ffn_width(layer, spec)
        peak = 3 * ffn + (3 + rows) * hidden
        if layer.has_kv:
            q, q_out = layer.q_heads * layer.head_dim_k, layer.q_heads * layer.head_dim_v
            kv = layer.kv_heads * (layer.head_dim_k + layer.head_dim_v)
            attn = u * 4 * (2 * hidden + q + q_out + kv)
            if not flash_attn:
                attn = u * 4 * (2 * hidden + 2 * q) + held(layer) * u * layer.q_heads * 4
            peak = max(u * 4 * peak, attn)
        else:
            peak = u * 4 * peak
        layer_peak = max(layer_peak, peak)
    out = u * 4 * (spec.vocab + hidden) if spec.vocab else 0
    return max(out, layer_peak + mask_bytes)


def activation_bytes(spec: ModelSpec, context: int, batch: int, chunk: int, swa: bool) -> int:
    """The ledger's activations term for llama.cpp: its reserved compute buffer (flash attention on)."""
    return compute_bytes(spec, context, batch, chunk, swa)


# --- the draft compatibility check --------------------------------------------------------------


def _token_tables(t: Side, d: Side, end: int) -> tuple[str | None, str, bool]:
    """(failure, what was checked, lowered confidence) of the token-text rule."""
    if t.fp is not None and d.fp is not None and t.fp.tokens is not None and d.fp.tokens is not None:
        i = first_text_mismatch(t.fp, d.fp, start=CHECK_START_ID, end=end)
        if i is not None:
            return (f"token {i} differs: target {t.fp.token_text(i)!r}, draft {d.fp.token_text(i)!r} "
                    f"(ids {CHECK_START_ID}..{end - 1} must match)"), "", False
        return None, f"token text equal for ids {CHECK_START_ID}..{end - 1}", False
    if t.fp is not None and d.fp is not None and t.fp.family and d.fp.family:
        if t.fp.family != d.fp.family:
            return (f"tokenizer families differ (catalog facts): target '{t.fp.family}', draft "
                    f"'{d.fp.family}', so token texts differ"), "", False
        return None, f"same tokenizer family '{t.fp.family}' (catalog facts): token text taken as equal", False
    return None, "token text not compared (no token table on both sides): lower confidence", True


def _special_ids(t: Side, d: Side) -> tuple[str, str] | None:
    """The first failing add_bos/bos/add_eos/eos rule as (rule, why), or None."""
    (tb, tb_src), (db, db_src) = t.add_bos(), d.add_bos()
    if tb is not None and db is not None:
        if tb != db:
            return "add_bos", f"add_bos differs: target {tb} ({tb_src}), draft {db} ({db_src})"
        if tb and t.bos != d.bos:
            return "bos_id", f"both add BOS but the ids differ: target {t.bos}, draft {d.bos}"
    elif t.bos is not None and d.bos is not None and t.bos != d.bos:
        return "bos_id", f"bos ids differ: target {t.bos}, draft {d.bos} (add_bos unknown, assumed added)"
    te, de = t.add_eos(), d.add_eos()
    if te is not None and de is not None:
        if te != de:
            return "add_eos", f"add_eos differs: target {te}, draft {de}"
        if te and t.eos != d.eos:
            return "eos_id", f"both add EOS but the ids differ: target {t.eos}, draft {d.eos}"
    return None


def pair_rule(t: Side, d: Side, same: bool | None) -> Verdict:
    """common_speculative_are_compatible, rule by rule, naming the first that fails."""
    weakest = weakest_basis(t, d)
    conf = EXACT if weakest == "tokens" else CATALOG if weakest == "catalog" else LOWER

    def fail(rule: str, why: str) -> Verdict:
        return Verdict(NAME, False, rule, None, f"{why}. {REFUSAL}; builds of about mid-2025 "
                       f"to mid-2026 translated such pairs through text instead (--spec-replace, PR #12635), "
                       f"which is slow; current builds refuse.", conf)

    if t.vocab_type and d.vocab_type and t.vocab_type != d.vocab_type:
        return fail("vocab_type", f"vocab types differ: target {t.vocab_type}, draft {d.vocab_type}")
    special = _special_ids(t, d)
    if special:
        return fail(*special)
    notes = []
    unadded = [f"{k} {a} vs {b}" for k, a, b in (("bos", t.bos, d.bos), ("eos", t.eos, d.eos))
               if a is not None and b is not None and a != b]
    if unadded:
        notes.append(f"ids not added differ ({', '.join(unadded)}): current builds ignore them, older builds "
                     f"compared bos/eos ids unconditionally and refuse this pair")
    diff = abs(t.n_vocab - d.n_vocab)
    if diff > MAX_VOCAB_DIFF:
        return fail("n_vocab_difference", f"n_vocab {t.n_vocab} (target) vs {d.n_vocab} (draft): difference "
                    f"{diff} > {MAX_VOCAB_DIFF} (SPEC_VOCAB_MAX_SIZE_DIFFERENCE)")
    end = min(t.n_vocab, d.n_vocab)
    failure, checked, lowered = _token_tables(t, d, end)
    if failure:
        return fail("token_text", failure)
    if lowered:
        conf = LOWER
    tb, db = t.add_bos()[0], d.add_bos()[0]
    detail = (f"vocab type {t.vocab_type or '?'}/{d.vocab_type or '?'}, add_bos {tb}/{db}, n_vocab "
              f"{t.n_vocab}/{d.n_vocab} (difference {diff} <= {MAX_VOCAB_DIFF}); {checked}")
    return Verdict(NAME, True, None, None, "; ".join([detail, *notes]), conf)


ENGINE = Engine(
    name=NAME,
    aliases=("llamacpp", "llama-cpp", "llama_cpp", "ollama", "lmstudio"),
    summary="llama.cpp: GGUF files, any backend (CUDA, Metal, Vulkan, CPU); llama-server",
    overhead_bytes=456 * MiB,
    overhead_source="CUDA context/driver ~451-456 MiB per device (llama.cpp PR #15860)",
    # per-op kernel launches; CUDA graphs removed (1/138.31 - 1/146.81) s per token for LLaMA-2-7B
    # q4_0 on an RTX 4090 (PR #6766) = 0.419 ms / 32 layers = 13.1 us per layer (an upper bound on
    # CUDA builds with graphs; the cost on Metal/CPU backends, which launch per op).
    forward_overhead_s=(0.0, LAUNCH_PER_LAYER[0]),
    forward_overhead_source=LAUNCH_PER_LAYER[1],
    forward_overhead_by_kind=FORWARD_OVERHEAD_BY_KIND,
    tokens_held=tokens_held,
    prefill_chunk=prefill_chunk,
    pair_rule=pair_rule,
    launch=launch,
    kv_options=("f16", "q8_0"),
    activation_bytes=activation_bytes,
    activation_source="estimate of llama.cpp's compute buffer ({chunk}-token ubatch graph, flash attention; "
                      "calibrated on published logs, docs/llamacpp.md)",
    latent_mla=True,  # V-less latent cache since PR #19067
    sixteen_bit=True,  # the converter writes f16/bf16 GGUFs
    default_kv_format="F16",
    swa_needs_arch=True,
    recurrent_state_f32=True,
    device_margin_bytes=FIT_MARGIN_BYTES,
    # row split (--split-mode row) splits only the layers' matrices, keeping the rest on the main GPU
    tp_unsplit_groups=frozenset({"embedding", "lm_head", "norm", "other", "vision"}),
    tp_main_device_only=True,
    tp_splits_heads=False,  # row split divides rows by --tensor-split shares: no head count to divide
    # "there is very little benefit to offloading the input layer" (src/llama-model.cpp dev_input = cpu)
    host_input_embedding=True,
    tied_copy_on_last_stage=True,
    default_split="pp",  # --split-mode layer
    kv_suggestion="q8_0",
    weights_ladder=("q8_0", "q6_k", "q5_k", "q4_k"),
    partial_offload=True,  # -ngl N, --n-cpu-moe N (common/arg.cpp:2789, :2767)
    verify_backend={"gpu": "llama.cpp-cuda", "apple": "llama.cpp-metal", "cpu": "llama.cpp-cpu"},
    sampled_acceptance="target",
    sampled_acceptance_source=("common/speculative.cpp:363 @ 0c1e570: the draft proposes its top candidate; "
                               "common/sampling.cpp:696: the target samples and keeps it while 'draft[i] == id'"),
    confidence_stop=("--spec-draft-p-min P --spec-draft-n-min N (older builds: --draft-p-min, --draft-min): "
                     "common_speculative_gen_draft keeps each draft token and stops after the first under p_min; "
                     "drafts under n_min are dropped. Defaults: current builds n_max 3, n_min 0, p_min 0.0 "
                     "(common/arg.cpp:4140-4197 @ 0c1e570); 16, 0, 0.75 through 2025 and early 2026 (common/common.h "
                     "common_params_speculative); 16, 5, 0.9 when llama-server gained drafting (common/speculative.h, "
                     "PR #10455, Nov 2024)"),
    # priced beside every round drafting K (plan/drafting_stop.py): llama-server's default p-min of 2025-early 2026
    default_stop=(0.75, 0),
    methods={DRAFT_MODEL: "--spec-type draft-simple -md DRAFT.gguf (common/arg.cpp:4241, :4249)",
             EAGLE3: "--spec-type draft-eagle3 -md HEAD.gguf (common/speculative.cpp:36, PR #18039)",
             MTP: "--spec-type draft-mtp on the target's nextn layers (common/speculative.cpp:37, :2556-2566)",
             NGRAM: "--spec-type ngram-simple (common/speculative.cpp:40, common/arg.cpp:4290-4308)"},
    method_refusals={EARLY_EXIT: "llama.cpp has no early-exit self-speculation (spec types: "
                                 "common/speculative.cpp:34-44)"},
    ngram_variants={
        "ngram-simple": "the m tokens after the last earlier match of the current n-gram (docs/speculative.md "
                        "@ a71f4a0 'n-gram Map (ngram-simple)')",
        "ngram-map-k": "the m tokens that followed the current n-gram key, once it was seen --spec-ngram-map-k-"
                       "min-hits times (default 1) (docs/speculative.md @ a71f4a0 'n-gram Map Key')",
        "ngram-map-k4v": "experimental: the most frequent of up to four m-grams after the key (docs/speculative.md "
                         "@ a71f4a0 'n-gram Map Key-4-Values')",
        "ngram-mod": "a rolling-hash pool (~16 MB) shared by all slots, variable draft length; the docs advise "
                     "n-match 24, draft 48-64 ('small n are not recommended', docs/speculative.md @ a71f4a0)",
        "ngram-cache": "drafts from n-gram statistics, optionally loaded from files (docs/speculative.md @ "
                       "a71f4a0 'n-gram Cache'; PRs #5479, #6828, #6848)",
    },
    # predicted / measured on the same runs: Qwen3-30B-A3B 0.54-0.58 on an RTX 4090 (PR #16834), RTX 5090
    # (PR #21086) and RTX PRO 6000 (build 6413), DeepSeek-V2-Lite 0.47 on an RTX 3090 (PR #15525), where the
    # same runs' dense models sit at 0.80-1.33; gpt-oss-20b (4 experts of 2880 x 2880) 0.86-1.18
    moe_baseline_caveat=("the predicted baseline is low confidence for an MoE target: published llama.cpp batch-1 "
                         "decodes of MoE models with many small routed experts reach about half of it (Qwen3-30B-A3B "
                         "0.54-0.58 of the prediction on RTX 4090/5090/PRO 6000, DeepSeek-V2-Lite 0.47 on an RTX "
                         "3090; dense models on the same GPUs 0.80-1.33; gpt-oss-20b 0.86-1.18): the roofline prices "
                         "the touched experts' bytes, not the many small expert reads"),
    format_share=FORMAT_SHARE,
    bandwidth_efficiency=BANDWIDTH_EFFICIENCY,
)
