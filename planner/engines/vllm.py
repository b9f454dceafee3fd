"""vLLM (`vllm serve`): every fact the planner uses.

Sources (docs/engines.md "vLLM"): vllm/v1/kv_cache_interface.py (16-token blocks, sliding-window blocks),
vllm/config/speculative.py (draft_model method and its vocab_size check, use_heterogeneous_vocab),
vllm/model_executor/layers/vocab_parallel_embedding.py (vocabulary-parallel embedding and lm_head),
vllm/distributed/utils.py get_pp_indices (pipeline stages), PR #10511 (non-torch memory 1.79 GiB
at TP1, 3.58 GiB at TP2), PR #17866 and RFC #6854 (per-step CPU work).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ..core.calibration import ANY, Calibration, get, sourced
from ..core.constants import MiB
from ..core.spec import LayerSpec
from ..sources import quantised
from .base import (
    CUDA_GEMM_EFFICIENCY,
    DRAFT_MODEL,
    EAGLE3,
    EARLY_EXIT,
    MTP,
    NGRAM,
    Engine,
    LaunchInput,
    Side,
    Verdict,
    pad,
    quote,
    with_notes,
)

NAME = "vllm"
# KV block of 16 tokens (v1/kv_cache_interface.py); max_num_batched_tokens 2048 for the OpenAI server
# on most GPUs (8192 for the offline LLM class); gpu_memory_utilization 0.92 (CacheConfig
# Field(default=0.92), vllm/config/cache.py:215 in 0.33.0, unchanged at upstream 002f10e0; it was 0.9
# before); the sampler's profile run samples max_num_seqs (256) rows.
BLOCK_TOKENS = 16
MAX_BATCHED_TOKENS = 2048
GPU_UTILIZATION = 0.92
MAX_NUM_SEQS = 256
NON_TORCH_BYTES = 1833 * MiB  # 1.79 GiB (PR #10511)


def tokens_held(layer: LayerSpec, context: int, batch: int, chunk: int | None, is_windowed: bool) -> int:
    """Per sequence ceil(context/16) blocks of 16; SWA cdiv(min(window - 1 + max_batched_tokens,
    context), 16) + 1 blocks (v1/kv_cache_interface.py)."""
    if is_windowed:
        blocks = -(-min((layer.window or context) - 1 + (chunk or MAX_BATCHED_TOKENS), context) // BLOCK_TOKENS) + 1
        return batch * min(blocks * BLOCK_TOKENS, pad(context, BLOCK_TOKENS))
    return batch * pad(context, BLOCK_TOKENS)


def prefill_chunk(context: int, batch: int) -> int:
    """max_num_batched_tokens of the OpenAI server (chunked prefill)."""
    return MAX_BATCHED_TOKENS


def pair_rule(t: Side, d: Side, same: bool | None) -> Verdict:
    """The draft_model check: config vocab_size must be equal, nothing else is compared
    (vllm/config/speculative.py verify_equal_vocab_size_if_draft_model)."""
    tv, dv = t.spec.vocab, d.spec.vocab
    if tv == dv:
        extra = (" The tokenizers differ, and vLLM does no token-text check: it runs the pair and rejects "
                 "nearly every draft token." if same is False else "")
        return Verdict(NAME, True, None, None, f"config vocab_size {tv} on both (vLLM draft_model compares only "
                       f"this, vllm/config/speculative.py).{extra}")
    pad_note = (" Same tokenizer: the sizes differ only by embedding padding, vLLM refuses anyway." if same else "")
    return Verdict(NAME, False, "vocab_size",
                   "speculative_config {\"method\": \"draft_model\", \"use_heterogeneous_vocab\": true} "
                   "(TLI, greedy drafting only)",
                   f"config vocab_size {tv} (target) vs {dv} (draft): 'Target and draft model should have the "
                   f"same vocabulary size' (vllm/config/speculative.py).{pad_note}")


# --kv-cache-dtype values the planner sizes (vllm/config/cache.py:44-60 CacheDType; fp8 = fp8_e4m3).
KV_CACHE_DTYPES = ("fp8", "fp8_e4m3", "fp8_e5m2")


# Weights formats vLLM quantises a 16-bit checkpoint to at load, and the flag that asks for it: fp8
# (--quantization fp8, model_executor/layers/quantization/__init__.py:18) and 4-bit NF4 through
# bitsandbytes ("Append the following to your model arguments for 4bit inflight quantization:
# --quantization bitsandbytes",
# docs/features/quantization/bnb.md:37-58 @03c1ab5; the ledger sizes it as nf4, blocks of 64).
ONLINE_QUANT = {"fp8": "--quantization fp8", "nf4": "--quantization bitsandbytes"}


def weights_notes(quant: str | None, online: dict[str, str] | None = None) -> list[str]:
    """What a weights format the ledger sized needs at launch: a format the engine quantises to at
    load gets its flag in the command (`online`); other formats need a checkpoint stored that way."""
    online = ONLINE_QUANT if online is None else online
    if quant is None or quant.lower() in (*online, "bf16", "f16", "fp16"):
        return []
    alt = (f"; or quantise at load: {' / '.join(f'{v} (plan it with --weights-dtype {k})' for k, v in online.items() if k != 'fp8')}"
           if any(k != "fp8" for k in online) else "")
    return [f"weights sized as {quant}: serve a checkpoint stored in that format (an AWQ/GPTQ repo for int4); "
            f"the engine does not quantise a 16-bit checkpoint to {quant} at load{alt}"]


def launch(x: LaunchInput) -> dict[str, str]:
    """`vllm serve` with the method's speculative config (speculative_config(); draft TP 1 or the target's).

    Flags (vLLM 0.33.0 vllm/engine/arg_utils.py): --max-model-len :991, --tensor-parallel-size :1209,
    --pipeline-parallel-size :1171, --quantization :992 (fp8: online quantisation of a 16-bit
    checkpoint, model_executor/layers/quantization/__init__.py:18),
    --gpu-memory-utilization :1389, --kv-cache-dtype :1397, --speculative-config :1866 (JSON, the
    SpeculativeConfig fields of vllm/config/speculative.py: method :419, model :416,
    num_speculative_tokens :413, draft_tensor_parallel_size :427, use_heterogeneous_vocab :496).
    """
    served = int4_served(x.target, MARLIN, CONVERTED) if quantised.is_int4(x.weights_quant) else None
    cmd = f"vllm serve {quote(served.model if served else x.target)} --max-model-len {x.context}"
    notes = list(served.notes) if served else []
    if x.tp > 1:
        cmd += f" --tensor-parallel-size {x.tp}"
    if x.pp > 1:
        cmd += f" --pipeline-parallel-size {x.pp}"
    if served:
        cmd += " " + served.flag
    else:
        notes += weights_notes(x.weights_quant)
    if (x.weights_quant or "").lower() in ONLINE_QUANT:
        cmd += " " + ONLINE_QUANT[(x.weights_quant or "").lower()]
    if x.gpu_memory_utilization:
        cmd += f" --gpu-memory-utilization {x.gpu_memory_utilization}"
    if x.kv_dtype and x.kv_dtype in KV_CACHE_DTYPES:
        cmd += f" --kv-cache-dtype {x.kv_dtype}"
    elif x.kv_dtype and x.kv_dtype.lower() not in ("auto", "f16", "bf16"):
        notes.append(f"KV type '{x.kv_dtype}' is not a vLLM --kv-cache-dtype the planner sizes: left at auto")
    out = {}
    spec = speculative_config(x)
    draft = _int4_draft(x) if spec is not None else None
    if spec is not None and draft is not None:
        # the draft the ledger sized at int4, as vLLM loads it: SpeculativeConfig.model and .quantization
        # ("Quantization method that was used to quantize the draft model weights. If None, we assume the
        # model weights are not quantized", vllm/config/speculative.py)
        spec.update(model=draft.model, quantization=draft.flag.split()[-1])
        notes += [n.replace("serves ", "drafts with ", 1) if n.startswith("serves ") else n for n in draft.notes]
    if spec is not None:
        out["speculative_config"] = json.dumps(spec)
        cmd += f" --speculative-config {quote(out['speculative_config'])}"
    steps = [v.convert for v in (served, draft) if v is not None and v.convert]
    if steps:
        out["convert"] = " && ".join(steps)
    out["command"] = cmd
    return with_notes(out, notes)


def _int4_draft(x: LaunchInput) -> Served | None:
    """The int4 checkpoint a separate draft model loads when the ledger sized it at int4, else None (a
    head, MTP or n-gram loads no draft checkpoint of its own)."""
    quant = x.draft_weights_quant or x.weights_quant
    if x.method != DRAFT_MODEL or not x.draft or not quantised.is_int4(quant):
        return None
    return int4_served(x.draft, MARLIN, CONVERTED)


# An int4 plan's checkpoint as vLLM loads it: a catalogued AWQ/GPTQ repo through the Marlin kernels
# (--quantization awq_marlin | gptq_marlin, QuantizationMethods in
# vllm/model_executor/layers/quantization/__init__.py:23, :25 @0034007), else the folder llm-compressor
# writes, whose config names compressed-tensors (:27).
MARLIN = {"awq": "--quantization awq_marlin", "gptq": "--quantization gptq_marlin"}
CONVERTED = "--quantization compressed-tensors"


@dataclass(frozen=True)
class Served:
    """What an int4 plan serves: the model (a Hub id or the folder a convert step writes), the engine's
    flag for its format, the convert step when one is needed ("" else) and what to tell the user."""

    model: str
    flag: str
    convert: str
    notes: tuple[str, ...]


def int4_served(ref: str, flags: Mapping[str, str], converted: str) -> Served:
    """The checkpoint an int4 plan of `ref` serves (sources/quantised.py): the catalogued pre-quantised repo
    with `flags[method]`, else llm-compressor's W4A16 folder with `converted` after its convert step.

    Why: neither vLLM nor SGLang quantises a 16-bit checkpoint to AWQ/GPTQ int4 at load; serving the
    16-bit model would not be the plan the ledger sized.
    """
    repo = quantised.int4_repo(ref)
    if repo is not None:
        return Served(repo.repo, flags[repo.method], "",
                      (f"serves {repo.repo}: the {repo.method.upper()} int4 checkpoint of {repo.base} "
                       f"(catalogs/quantised)",))
    step, folder = quantised.w4a16_convert(ref)
    return Served(folder, converted, step,
                  (f"no catalogued int4 checkpoint of {ref}: the convert step (pip install llmcompressor; "
                   f"GPTQ W4A16, group 128, 512 calibration samples) writes {folder}, which the command "
                   f"serves",))


# prompt_lookup_min when the planner prints n-gram lookup: vLLM's own default is 5 for both ends
# (speculative.py:1302-1305); a 2-token minimum matches more often, and every draft is verified anyway.
NGRAM_MIN = 2
NGRAM_MAX = 5


def speculative_config(x: LaunchInput) -> dict | None:
    """The --speculative-config JSON for each method (vllm/config/speculative.py 0.33.0):

    draft_model: {"method": "draft_model", "model": DRAFT, ...} (method :419, values :74-83);
    eagle3: {"method": "eagle3", "model": HEAD} (EagleModelTypes :71-73; the head repo is `model`, :416);
    mtp: {"method": "mtp"} with no model: the target's own checkpoint is loaded as the draft (:1252-1266;
    the per-architecture names such as deepseek_mtp are deprecated aliases of mtp, :1246-1250);
    ngram: {"method": "ngram", "prompt_lookup_min", "prompt_lookup_max"} (:503, :506; min <= max, :1322).
    """
    if x.method == DRAFT_MODEL and not x.draft:
        return None
    named = x.method in (DRAFT_MODEL, EAGLE3)  # a draft checkpoint or head the engine loads
    spec: dict = {"method": x.method, **({"model": x.draft} if named else {}), "num_speculative_tokens": x.k}
    if named:
        spec["draft_tensor_parallel_size"] = 1 if x.tp == 1 else x.tp
    elif x.method == NGRAM:
        hi = x.ngram_max or NGRAM_MAX
        spec.update(prompt_lookup_min=min(NGRAM_MIN, hi), prompt_lookup_max=hi)
    if x.heterogeneous and x.method == DRAFT_MODEL:
        spec["use_heterogeneous_vocab"] = True  # TLI; greedy drafting only (speculative.py:2000-2005)
    return spec



def _cal(term: str) -> Calibration:
    """vLLM's fitted constant `term` on every machine (catalogs/calibration/vllm.json)."""
    return get(NAME, ANY, term)

ENGINE = Engine(
    name=NAME,
    aliases=(),
    summary="vLLM: paged KV in 16-token blocks, CUDA graphs, draft_model / EAGLE speculation",
    overhead_bytes=NON_TORCH_BYTES,
    overhead_source="vLLM non-torch memory 1.79 GiB at TP1 (vLLM PR #10511)",
    # per-step CPU work (scheduler, input prep, sampler) outside the CUDA graph, measured as batch-1 TPOT
    # above the weight stream at the 0.75 share: V1 Llama-3.1-8B on an H100 7.07 ms (issue #20780) and
    # 7.52 ms (133 tok/s, PR #16937) against 6.39 ms = 0.68 and 1.13 ms; Llama-3.2-1B TPOT 2.64-2.73 ms
    # (PR #17866) ~1.9 ms above its ~0.8 ms read. The median, 1.1 ms, taken (V0 showed ~4 ms, RFC #6854).
    forward_overhead_s=(_cal("forward_fixed_s").value, 0.0),
    forward_overhead_source=_cal("forward_fixed_s").source,
    # a draft step runs in the proposer's loop (vllm/v1/spec_decode/eagle.py propose: one head forward per
    # drafted token, no scheduler pass or sampler): issue #20780 EAGLE-3 K = 4, TPOT 4.05 ms at acceptance
    # length 3.08 = 12.47 ms a round, less the verify of 5 tokens (7.07 ms x 1.13, the cuda-serving float
    # curve) and the machinery (0.78 ms, #49548), leaves 0.93 ms per drafted token, 0.61 ms above the
    # head's 0.32 ms weight read
    draft_forward_overhead_s=(_cal("draft_forward_fixed_s").value, 0.0),
    draft_forward_overhead_source=_cal("draft_forward_fixed_s").source,
    tokens_held=tokens_held,
    prefill_chunk=prefill_chunk,
    pair_rule=pair_rule,
    launch=launch,
    kv_options=("auto", "fp8"),
    heterogeneous_fallback=True,
    latent_mla=True,
    dsa_indexer_fp8=True,  # deepseek_v2.py DeepseekV32IndexerCache: head_dim + head_dim // 128 * 4 uint8 (SGLang inherits)
    sixteen_bit=True,  # dtype="auto" runs float32 checkpoints in 16-bit (vllm config _get_and_verify_dtype)
    state_copies_per_spec_token=True,  # mamba state x (1 + speculative blocks)
    min_logit_rows=MAX_NUM_SEQS,
    gpu_utilization=GPU_UTILIZATION,
    # NCCL and custom all-reduce buffers: non_torch_memory 1.79 GiB at TP1, 3.58 GiB at TP2 (PR #10511)
    tp_comm_bytes=NON_TORCH_BYTES,
    # VocabParallelEmbedding / ParallelLMHead shard the vocabulary; the vision tower is sharded too
    tp_unsplit_groups=frozenset({"norm", "other"}),
    tied_copy_on_last_stage=True,
    pp_vllm_stages=True,
    kv_suggestion="fp8",
    weights_ladder=("fp8", "int4"),
    verify_backend={"gpu": "cuda-serving"},
    compute_efficiency=CUDA_GEMM_EFFICIENCY,
    # speculation enabled at K = 0 (drafts switched off by a dynamic schedule) still costs: TPOT 14.374 ->
    # 15.317 ms at concurrency 2 and 77.164 -> 93.820 ms at 189 (vLLM 0.27.1, H100 NVL, gemma-4-31B FP8,
    # issue #49548): slope (16.656 - 0.943) ms / 187 = 84 us per sequence, 0.775 ms fixed, per round
    spec_round_overhead_s=(_cal("spec_round_fixed_s").value, _cal("spec_round_per_sequence_s").value),
    spec_round_overhead_source=_cal("spec_round_fixed_s").source,
    methods={DRAFT_MODEL: "method draft_model (vllm/config/speculative.py:74-83)",
             EAGLE3: "method eagle3, the head's repo as model (speculative.py:71-73, :1447-1448)",
             MTP: "method mtp, the target's own MTP layers (speculative.py:38-69, :1246-1266)",
             NGRAM: "method ngram, prompt_lookup_min/max (speculative.py:503-508, :1300-1325)"},
    method_refusals={EARLY_EXIT: "vLLM has no early-exit self-speculation (no such method in "
                                 "vllm/config/speculative.py:74-83)"},
    moe_baseline_caveat=("the predicted baseline is low confidence for an MoE target: published batch-1 decodes of "
                         "MoE models on serving engines reach a fraction of it (gpt-oss-120b on one A100 ~90 tok/s, "
                         "vLLM issue #22331: 0.33 of the prediction; DeepSeek-V3 FP8 at TP 8 26-30 tok/s, SGLang PR "
                         "#2643 on 8 x H200 and vLLM issue #11539: a tenth of the roofline or less): per-layer "
                         "routing, expert kernels and all-reduces are not priced"),
    bandwidth_efficiency={
        # GPTQ-Marlin GEMV at ~1160 GB/s achieved (vLLM PR #2497, A100 class: ~0.75 of peak)
        "gpu": sourced(NAME, "gpu", "bandwidth_share"),
        # in a tensor-parallel group each rank streams a small shard and synchronises twice a layer: SGLang's
        # measured TP 8 share (engines/sglang.py), the same CUDA-graph design
        "gpu-tp": sourced(NAME, "gpu-tp", "bandwidth_share"),
    },
)
