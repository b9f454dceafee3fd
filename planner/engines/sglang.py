"""SGLang (`sglang serve`): every fact the planner uses.

Sources (sglang 0.5.23, read from the released wheel): srt/speculative/standalone_worker_v2.py:185-215
(STANDALONE's vocabulary check), srt/speculative/spec_info.py:39-47 (the algorithms: no heterogeneous-
vocabulary path), srt/arg_groups/fields/parallel.py:45-51 (`--tp-size`), srt/arg_groups/fields/spec.py:31-69
(`--speculative-*` flags), cli/main.py:27-51 (`sglang serve`; `python -m sglang.launch_server` still runs
and warns, launch_server.py:70-76), server_args.py (chunked prefill 2048-8192 by GPU size,
mem_fraction_static ~0.8-0.9). Where SGLang's own figure is not sourced, vLLM's is assumed (same
design: CUDA-graph forward, Python scheduler, NCCL) and said so.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.calibration import ANY, get, sourced
from ..core.constants import MiB
from ..core.spec import LayerSpec
from ..sources import quantised
from . import vllm
from .base import (
    CATALOG,
    DRAFT_MODEL,
    EAGLE3,
    EARLY_EXIT,
    EXACT,
    LOWER,
    MTP,
    NGRAM,
    LaunchInput,
    Side,
    Verdict,
    first_text_mismatch,
    quote,
    with_notes,
)

NAME = "sglang"
# Chunked prefill 2048-8192 by GPU size; 4096 taken (server_args.py default for 24-80 GB GPUs).
CHUNKED_PREFILL = 4096
# mem_fraction_static is sized per GPU (~0.8-0.9), taken as vLLM's 0.9; the sampler as vLLM's (256 rows).
GPU_UTILIZATION = 0.9
MAX_RUNNING_ROWS = 256
NON_TORCH_BYTES = 1833 * MiB  # assumed equal to vLLM's non-torch memory (PR #10511)


def tokens_held(layer: LayerSpec, context: int, batch: int, chunk: int | None, is_windowed: bool) -> int:
    """A token pool: context per sequence; SWA layers window + one prefill chunk."""
    if is_windowed:
        return batch * min(context, (layer.window or context) + (chunk or CHUNKED_PREFILL))
    return batch * context


def prefill_chunk(context: int, batch: int) -> int:
    return CHUNKED_PREFILL


def pair_rule(t: Side, d: Side, same: bool | None) -> Verdict:
    """STANDALONE's startup check (standalone_worker_v2.py:185-215): config vocab_size equal, then
    `target_tokenizer.get_vocab() == draft_tokenizer.get_vocab()`; either failure is a ValueError."""
    tv, dv = t.spec.vocab, d.spec.vocab
    if tv != dv:
        pad_note = " Same tokenizer: the sizes differ only by embedding padding, SGLang refuses anyway." if same else ""
        return Verdict(NAME, False, "vocab_size", None,
                       f"config vocab_size {tv} (target) vs {dv} (draft): 'STANDALONE speculative decoding requires "
                       f"the draft model to share the same vocabulary as the target model' "
                       f"(srt/speculative/standalone_worker_v2.py); SGLang has no heterogeneous-vocabulary "
                       f"algorithm.{pad_note}")
    tf, df = t.fp, d.fp
    if tf is not None and df is not None and tf.tokens is not None and df.tokens is not None:
        n = max(t.n_vocab, d.n_vocab)
        i = None if t.n_vocab == d.n_vocab else min(t.n_vocab, d.n_vocab)
        i = i if i is not None else first_text_mismatch(tf, df, start=0, end=n)
        if i is not None:
            return Verdict(NAME, False, "token_map", None,
                           f"token {i} differs (the two tokenizers' token-to-id maps must be equal, "
                           f"standalone_worker_v2.py)", EXACT)
        return Verdict(NAME, True, None, None, f"config vocab_size {tv} on both and equal token-to-id maps "
                       f"(STANDALONE's check, standalone_worker_v2.py)", EXACT)
    if tf is not None and df is not None and tf.family and df.family:
        if tf.family != df.family:
            return Verdict(NAME, False, "token_map", None, f"tokenizer families differ (catalog facts): target "
                           f"'{tf.family}', draft '{df.family}', so the token-to-id maps differ", CATALOG)
        return Verdict(NAME, True, None, None, f"config vocab_size {tv} on both; same tokenizer family "
                       f"'{tf.family}' (catalog facts): token-to-id maps taken as equal", CATALOG)
    return Verdict(NAME, True, None, None, f"config vocab_size {tv} on both; token-to-id maps not compared (no "
                   f"token tables): lower confidence", LOWER)


# The planner's KV spellings -> SGLang's --kv-cache-dtype choices (srt/arg_groups/fields/model.py:197-221:
# auto, fp8_e5m2, fp8_e4m3, mxfp8, bf16, bfloat16, nvfp4, fp4_mx_block16; no plain "fp8").
KV_CACHE_DTYPES = {"fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "bf16": "bf16",
                   "bfloat16": "bfloat16", "mxfp8": "mxfp8", "nvfp4": "nvfp4"}


def launch(x: LaunchInput) -> dict[str, str]:
    """`sglang serve` with the method's algorithm: num_steps = K, one candidate per step, K + 1 tokens verified.

    Flags (sglang 0.5.23): --model-path, --context-length (srt/arg_groups/fields/model.py:51, :110),
    --tp-size (parallel.py:45-51), --pp-size (parallel.py:59), --quantization (model.py:177),
    --mem-fraction-static (schedule.py:27), --kv-cache-dtype
    (model.py:197), --speculative-* (spec.py:31-69); flag names are the field names with dashes
    (arg_utils.py:288-290).
    """
    # a catalogued AWQ/GPTQ checkpoint rather than torchao's load-time int4: 4x less to download
    served = (vllm.int4_served(x.target, MARLIN, "") if quantised.is_int4(x.weights_quant)
              and quantised.int4_repo(x.target) else None)
    cmd = f"sglang serve --model-path {quote(served.model if served else x.target)} --context-length {x.context}"
    notes = list(served.notes) if served else []
    if x.tp > 1:
        cmd += f" --tp-size {x.tp}"
    if x.pp > 1:
        cmd += f" --pp-size {x.pp}"
    online = None if served else online_quant(x.weights_quant)
    if served:
        cmd += " " + served.flag
    else:
        notes += vllm.weights_notes(x.weights_quant, {x.weights_quant.lower(): online}
                                    if x.weights_quant and online else {})
    if online:
        cmd += " " + online
        if "torchao" in online:
            notes.append("torchao quantises 16-bit weights as they load: a checkpoint stored in another format "
                         "(DeepSeek-V3's FP8) needs its BF16 form")
    if x.gpu_memory_utilization:
        cmd += f" --mem-fraction-static {x.gpu_memory_utilization}"
    kv = (x.kv_dtype or "auto").lower()
    if kv in KV_CACHE_DTYPES:
        cmd += f" --kv-cache-dtype {KV_CACHE_DTYPES[kv]}"
    elif kv != "auto":
        notes.append(f"KV type '{x.kv_dtype}' is not an SGLang --kv-cache-dtype choice: left at auto")
    cmd += speculative_flags(x)
    cmd, draft_notes = _int4_draft(x, cmd)
    notes += draft_notes
    if x.draft and x.heterogeneous:
        notes.append("SGLang has no heterogeneous-vocabulary algorithm: STANDALONE refuses a draft with "
                     "another vocabulary (standalone_worker_v2.py:185-215)")
    out = {"command": cmd}
    return with_notes(out, notes)


def _int4_draft(x: LaunchInput, cmd: str) -> tuple[str, list[str]]:
    """A separate draft the ledger sized at int4, as SGLang loads it: its own quantisation flag (the draft's
    model config takes --speculative-draft-model-quantization, never the target's --quantization:
    srt/configs/model_config.py from_server_args) with a catalogued int4 repo; else a note that it loads
    as stored. Returns the command and the notes."""
    quant = x.draft_weights_quant or x.weights_quant
    if x.method != DRAFT_MODEL or not x.draft or not quantised.is_int4(quant):
        return cmd, []
    repo = quantised.int4_repo(x.draft)
    flag = f"--speculative-draft-model-path {quote(x.draft)}"
    if repo is None or flag not in cmd:
        return cmd, [f"SGLang loads {x.draft} as stored (no catalogued int4 checkpoint of it): the ledger "
                     f"sizes it so (Engine.draft_int4_needs_checkpoint)"]
    cmd = cmd.replace(flag, f"--speculative-draft-model-path {quote(repo.repo)} "
                            f"--speculative-draft-model-quantization {MARLIN[repo.method].split()[-1]}", 1)
    return cmd, [f"drafts with {repo.repo}: the {repo.method.upper()} int4 checkpoint of {repo.base}"]


# AWQ/GPTQ int4 checkpoints through the Marlin kernels: QUANTIZATION_CHOICES "gptq_marlin", "awq_marlin"
# (python/sglang/srt/arg_groups/choices.py:36-37 @0099dee).
MARLIN = {"awq": "--quantization awq_marlin", "gptq": "--quantization gptq_marlin"}


def online_quant(quant: str | None, group_size: int = 128) -> str | None:
    """The flag that has SGLang quantise a 16-bit checkpoint at load to the format the ledger sized: fp8
    (--quantization fp8, srt/arg_groups/choices.py:34); int8 and int4 weight-only through torchao
    (--torchao-config int8wo | int4wo-{32,64,128,256}, docs/backend/quantization.md:77-86 @319fd8e: the
    planner's int4 is weight-only with groups of 128); None: a checkpoint stored that way is needed."""
    q = (quant or "").lower()
    if q == "fp8":
        return "--quantization fp8"
    if q == "int8":
        return "--torchao-config int8wo"
    if q in ("int4", "w4a16") and group_size in (32, 64, 128, 256):
        return f"--torchao-config int4wo-{group_size}"
    return None


# --speculative-algorithm per method (srt/speculative/spec_info.py:39-47; NEXTN is an alias of EAGLE,
# spec_registry.py:183, and runs the target's own MTP layers).
ALGORITHMS: dict[str, str] = {DRAFT_MODEL: "STANDALONE", EAGLE3: "EAGLE3", MTP: "NEXTN", NGRAM: "NGRAM"}


def speculative_flags(x: LaunchInput) -> str:
    """The --speculative-* flags of a chain of K drafts (top-k 1, K + 1 tokens verified).

    STANDALONE and EAGLE3 name their draft/head (`--speculative-draft-model-path`, spec.py:36); NEXTN
    names the target itself, which holds the MTP layers (DeepSeek/GLM architectures default to it and
    only warn when it is given, srt/arg_groups/speculative_hook.py:1121-1156); NGRAM drafts from a
    trie of the request's tokens, a chain when its BFS breadth is 1 (spec.py:256, speculative_hook.py:1311).
    """
    algo = ALGORITHMS.get(x.method)
    if algo is None or (x.method in (DRAFT_MODEL, EAGLE3) and not x.draft):
        return ""
    out = f" --speculative-algorithm {algo}"
    if x.method == NGRAM:
        return out + f" --speculative-ngram-max-bfs-breadth 1 --speculative-num-draft-tokens {x.k + 1}"
    path = x.target if x.method == MTP else x.draft
    return (out + f" --speculative-draft-model-path {quote(path or '')} --speculative-num-steps {x.k}"
            f" --speculative-eagle-topk 1 --speculative-num-draft-tokens {x.k + 1}")


# tensor parallel: batch-1 Llama-3.x-70B bf16 at TP 8 decodes at 88.61 tok/s on 8 x H100 (PR #4716) and 53.7
# tok/s (TPOT 18.63 ms) on 8 x A100 (SGLang cookbook, 0.5.6): less the modelled all-reduces (2 x 80 x 10.1 us)
# each rank streams its 17.5 GB shard at 0.540 and 0.504 of its peak; the mean, 0.522, taken (TP 1: 0.75)
TP_SHARE = sourced(NAME, "gpu-tp", "bandwidth_share")

# SGLang shares vLLM's design (CUDA-graph forward, Python scheduler, NCCL, the same KV types and
# weight formats): where its own figure is not sourced, vLLM's is taken, and said so. What differs:
ENGINE = replace(
    vllm.ENGINE,
    name=NAME,
    aliases=("sgl",),
    summary="SGLang: token-pool KV, CUDA graphs, STANDALONE / EAGLE speculation",
    overhead_bytes=NON_TORCH_BYTES,
    overhead_source="assumed equal to vLLM's non-torch memory (1.79 GiB)",
    # the overlap scheduler (SGLang v0.4) prepares the next batch while the GPU runs this one: batch-1
    # Llama-3.1-8B on an H100 decodes at 158.34 tok/s = 6.32 ms (EAGLE-3 paper Table 4, SGLang docs), the
    # weight stream alone at the 0.75 share is 6.39 ms -- nothing is left for a per-step cost
    forward_overhead_s=(get(NAME, ANY, "forward_fixed_s").value, 0.0),
    forward_overhead_source=get(NAME, ANY, "forward_fixed_s").source,
    # the draft loop is one CUDA graph (EAGLEDraftCudaGraphRunner): PR #4247 EAGLE-3 num_steps 5 -> 8 on
    # Llama-3.1-8B, H100: 361.70 -> 378.57 tok/s at acceptance length 4.68 -> 5.39 = 12.94 -> 14.24 ms a
    # round, 0.43 ms per added step, 0.11 ms above the head's 0.32 ms weight read (without CUDA graphs the
    # same run gave 276.30 tok/s)
    draft_forward_overhead_s=(get(NAME, ANY, "draft_forward_fixed_s").value, 0.0),
    draft_forward_overhead_source=get(NAME, ANY, "draft_forward_fixed_s").source,
    tokens_held=tokens_held,  # a token pool, not 16-token blocks
    prefill_chunk=prefill_chunk,
    pair_rule=pair_rule,  # STANDALONE's own check
    launch=launch,
    heterogeneous_fallback=False,  # no TLI/UAG algorithm (spec_info.py:39-47)
    # the draft's quantisation is --speculative-draft-model-quantization, a checkpoint's format
    # (srt/configs/model_config.py from_server_args): without an int4 checkpoint it loads as stored
    draft_int4_needs_checkpoint=True,
    state_copies_per_spec_token=False,  # vLLM's mamba-state-per-speculative-block layout: not assumed here
    min_logit_rows=MAX_RUNNING_ROWS,
    methods={DRAFT_MODEL: "--speculative-algorithm STANDALONE (srt/speculative/spec_info.py:39-47)",
             EAGLE3: "--speculative-algorithm EAGLE3 with the head as --speculative-draft-model-path (spec.py:31-36)",
             MTP: "--speculative-algorithm NEXTN, the target's MTP layers (spec_registry.py:183, "
                  "speculative_hook.py:1121-1156)",
             NGRAM: "--speculative-algorithm NGRAM (speculative_hook.py:1285-1330)"},
    method_refusals={EARLY_EXIT: "SGLang has no early-exit self-speculation (algorithms: spec_info.py:39-47)"},
    gpu_utilization=GPU_UTILIZATION,
    bandwidth_efficiency={
        "gpu": sourced(NAME, "gpu", "bandwidth_share"),
        "gpu-tp": TP_SHARE,
    },
    # compute_efficiency: vLLM's (the same cuBLAS/CUTLASS/FlashInfer GEMMs) is inherited by replace()
    spec_round_overhead_s=(get(NAME, ANY, "spec_round_fixed_s").value, get(NAME, ANY, "spec_round_per_sequence_s").value),
    spec_round_overhead_source=get(NAME, ANY, "spec_round_fixed_s").source,
)
