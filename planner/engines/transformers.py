"""Hugging Face transformers (`generate(assistant_model=...)`): every fact the planner uses.

Sources (docs/engines.md "transformers"): generation/utils.py `_validate_assistant` (config vocab_size decides "same
tokenizer"), generation/candidate_generator.py (`num_assistant_tokens` read from the assistant's
generation_config; UAG: SLEM / AssistantToTargetTranslator), the PyTorch blog "GPT, Fast" (eager
launch overhead), torch CUDA context 300-700 MiB.
"""

from __future__ import annotations

from ..core.calibration import ANY, get, sourced
from ..core.constants import MiB
from ..core.spec import LayerSpec
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
)

NAME = "transformers"


def tokens_held(layer: LayerSpec, context: int, batch: int, chunk: int | None, is_windowed: bool) -> int:
    """DynamicCache: context per sequence; sliding layers min(context, window)."""
    return batch * (min(context, layer.window or context) if is_windowed else context)


def prefill_chunk(context: int, batch: int) -> int:
    """No chunked prefill: the whole prompt batch in one forward."""
    return context * batch


def pair_rule(t: Side, d: Side, same: bool | None) -> Verdict:
    tv, dv = t.spec.vocab, d.spec.vocab
    if tv == dv:
        extra = (" Caution: the tokenizers differ, so draft ids mean other strings to the target and "
                 "nearly all are rejected." if same is False else "")
        return Verdict(NAME, True, None, None, f"config vocab_size {tv} on both: plain assisted "
                       f"generation, generate(assistant_model=...) (generation/utils.py _validate_assistant).{extra}")
    routed = (" This routes a same-tokenizer pair to UAG: transformers decides 'same tokenizer' by "
              "config.vocab_size alone, and the sizes differ only by embedding padding (issue #45307 crashed "
              "on this path)." if same else "")
    return Verdict(NAME, False, "vocab_size",
                   "Universal Assisted Generation: generate(assistant_model=..., tokenizer=..., "
                   "assistant_tokenizer=...); text re-encoding (SLEM) when greedy, TLI "
                   "(AssistantToTargetTranslator) when do_sample=True",
                   f"config vocab_size {tv} (target) vs {dv} (draft): generate() requires tokenizer and "
                   f"assistant_tokenizer.{routed}")


# The planner's weight formats transformers quantises at load: BitsAndBytesConfig (transformers 5.24.0
# utils/quantization_config.py:390-452: load_in_8bit, load_in_4bit, bnb_4bit_quant_type 'fp4' | 'nf4').
BNB_CONFIGS = {"int8": "load_in_8bit=True", "nf4": "load_in_4bit=True, bnb_4bit_quant_type='nf4'"}


def launch(x: LaunchInput) -> dict[str, str]:
    """A generate() snippet; K goes on the assistant's generation_config, which is what is read.

    AssistedCandidateGenerator copies the assistant's generation_config and fills only unset (None)
    fields with defaults: num_assistant_tokens 20, schedule 'constant', assistant_confidence_threshold
    0.4 (transformers 5.24.0 generation/candidate_generator.py:115-119, configuration_utils.py:638-640).
    A threshold > 0 stops a round early when the draft is unsure (generation/utils.py:1692-1699), so
    it is set to 0: every round drafts exactly K tokens, the K the plan chose.
    """
    quant = BNB_CONFIGS.get((x.weights_quant or "").lower())
    lines = ["from transformers import AutoModelForCausalLM, AutoTokenizer"
             + (", BitsAndBytesConfig" if quant else ""),
             f"tok = AutoTokenizer.from_pretrained({x.target!r})",
             f"model = AutoModelForCausalLM.from_pretrained({x.target!r}, dtype='auto', device_map='auto'"
             + (f", quantization_config=BitsAndBytesConfig({quant})" if quant else "") + ")"]
    kwargs = "**inputs, max_new_tokens=256"
    if x.temperature > 0:
        kwargs += f", do_sample=True, temperature={x.temperature}"
    if x.method == NGRAM:  # prompt lookup: PromptLookupCandidateGenerator (candidate_generator.py:1017)
        kwargs += f", prompt_lookup_num_tokens={x.k}, max_matching_ngram_size={x.ngram_max or NGRAM_MAX}"
    elif x.method == MTP:  # the model's own MTP layers: MTPCandidateGenerator (candidate_generator.py:1362)
        kwargs += ", use_mtp=True"
    elif x.method == EARLY_EXIT:  # the model drafts with its first layers (candidate_generator.py:1157)
        lines += [f"model.generation_config.num_assistant_tokens = {x.k}",
                  "model.generation_config.num_assistant_tokens_schedule = 'constant'",
                  "model.generation_config.assistant_confidence_threshold = 0"]
        kwargs += f", assistant_early_exit={x.exit_layer}"
    elif x.draft:
        lines += [f"assistant = AutoModelForCausalLM.from_pretrained({x.draft!r}, dtype='auto', device_map='auto')",
                  f"assistant.generation_config.num_assistant_tokens = {x.k}",
                  "assistant.generation_config.num_assistant_tokens_schedule = 'constant'",
                  "assistant.generation_config.assistant_confidence_threshold = 0"]
        kwargs += ", assistant_model=assistant"
        if x.heterogeneous:
            lines.append(f"assistant_tok = AutoTokenizer.from_pretrained({x.draft!r})")
            kwargs += ", tokenizer=tok, assistant_tokenizer=assistant_tok"
    lines += ["inputs = tok('Hello', return_tensors='pt').to(model.device)",
              f"out = model.generate({kwargs})"]
    notes = (["num_assistant_tokens is read from the assistant's generation_config; passing it to "
              "generate() may be ignored. Batch size 1 only."] if x.method != NGRAM else
             ["prompt lookup drafts from the prompt's own n-grams (no assistant model). Batch size 1 only."])
    if x.draft or x.method == EARLY_EXIT:
        notes.append("assistant_confidence_threshold = 0 keeps K constant (the default 0.4 stops drafting early).")
    if x.method == MTP:
        notes.append(f"use_mtp drafts with the MTP layers the config declares (num_mtp_layers, "
                     f"candidate_generator.py:1378-1391); K={x.k} is not a setting of this path.")
    if x.method == EARLY_EXIT:
        notes.append("assistant_early_exit needs a checkpoint trained to exit early (LayerSkip, e.g. "
                     "facebook/layerskip-llama3.2-1B): other models draft poorly from an early layer.")
    if x.tp > 1:
        notes.append(f"device_map='auto' spreads the layers over the {x.tp} GPUs (one at a time), not tensor "
                     f"parallel.")
    if quant:
        notes.append(f"weights sized as {x.weights_quant}: bitsandbytes quantises the target at load (pip install "
                     f"bitsandbytes).")
    elif x.weights_quant and x.weights_quant.lower() not in ("bf16", "f16", "fp16"):
        notes.append(f"weights sized as {x.weights_quant}: load a checkpoint stored in that format.")
    if x.kv_dtype and x.kv_dtype.lower() not in ("auto", "f16", "bf16"):
        notes.append(f"KV type '{x.kv_dtype}' is not set by this snippet: the cache runs in the model's dtype.")
    return {"python": "\n".join(lines), "note": " ".join(notes)}


# max_matching_ngram_size printed for prompt lookup (generate()'s default is 2: candidate_generator.py:1046)
NGRAM_MAX = 3

ENGINE = Engine(
    name=NAME,
    aliases=("hf", "huggingface"),
    summary="transformers: eager PyTorch generate(), assisted generation and UAG",
    overhead_bytes=500 * MiB,
    overhead_source="torch CUDA context 300-700 MiB, 500 MiB assumed",
    # eager PyTorch, no CUDA graphs: Llama-2-7B bf16 on A100 ran 25.5 tok/s eager vs 107 tok/s with
    # torch.compile + CUDA graphs, "heavily CPU overhead bound": (1/25.5 - 1/107) s / 32 layers = 0.933 ms/layer.
    forward_overhead_s=(0.0, get(NAME, ANY, "forward_per_layer_s").value),
    forward_overhead_source=get(NAME, ANY, "forward_per_layer_s").source,
    tokens_held=tokens_held,
    prefill_chunk=prefill_chunk,
    pair_rule=pair_rule,
    launch=launch,
    heterogeneous_fallback=True,
    conv_state_full_kernel=True,
    # torch.distributed uses the same NCCL stack as vLLM (PR #10511: 1.79 GiB per worker): assumed equal
    tp_comm_bytes=1833 * MiB,
    # tp_plan splits the layers and lm_head ("colwise_rep") but not embed_tokens
    tp_unsplit_groups=frozenset({"embedding", "norm", "other", "vision"}),
    weights_ladder=("int8", "nf4"),
    verify_backend={"gpu": "torch-cuda"},
    compute_efficiency=CUDA_GEMM_EFFICIENCY,
    methods={DRAFT_MODEL: "generate(assistant_model=...) (generation/utils.py _get_candidate_generator)",
             NGRAM: "generate(prompt_lookup_num_tokens=K) (generation/configuration_utils.py:462, "
                    "candidate_generator.py:1017)",
             EARLY_EXIT: "generate(assistant_early_exit=L) (configuration_utils.py:464, candidate_generator.py:1157)",
             MTP: "generate(use_mtp=True) with a config declaring num_mtp_layers (configuration_utils.py:403, "
                  "generation/utils.py:1332, candidate_generator.py:1362)"},
    method_refusals={EAGLE3: "transformers has no EAGLE-3 drafting (candidate generators: "
                             "generation/candidate_generator.py)"},
    bandwidth_efficiency={
        "gpu": sourced(NAME, "gpu", "bandwidth_share"),
    },
)
