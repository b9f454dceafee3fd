"""llama.cpp's launch: the llama-server command for a plan, GGUF references, and the conversion steps a
safetensors checkpoint needs first (engines/llamacpp.py builds the Engine; this is its `launch`).

Why apart from the engine's memory and pairing facts: a launch is flag spelling (common/arg.cpp), which
changes with llama.cpp's releases on its own schedule; the KV layout and the draft check do not.
"""

from __future__ import annotations

import re

from .base import DRAFT_MODEL, EAGLE3, MTP, NGRAM, LaunchInput, quote, with_notes

# One command, current flag names (common/arg.cpp in llama.cpp 0017d6fb, docs/engines.md). The older
# spellings --draft-max/--draft-min (arg.cpp:4387, :4394: "the argument has been removed") and -cd
# (gone: "invalid argument: -cd") are not printed.

# -ctk/-ctv/-ctkd/-ctvd values: kv_cache_types (arg.cpp:304-314, ggml type names).
KV_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
# The planner's weights spellings (core/quant.py SCHEMES) -> GGUF file tags; a K-quant file is named
# after its usual "_M" mix (Q4_K_M is also what -hf picks by default, download.cpp:662).
GGUF_TAGS = {"bf16": "BF16", "fp16": "F16", "f16": "F16", "fp32": "F32", "f32": "F32", "q8_0": "Q8_0",
             "q6_k": "Q6_K", "q5_k": "Q5_K_M", "q5_0": "Q5_0", "q5_1": "Q5_1", "q4_k": "Q4_K_M", "q4_0": "Q4_0",
             "q4_1": "Q4_1", "q3_k": "Q3_K_M", "q2_k": "Q2_K"}
# weights_quant None: the ledger sized 16-bit weights; convert_hf_to_gguf.py --outtype auto writes F16
# or BF16 by the checkpoint's dtype (convert_hf_to_gguf.py:60, conversion/base.py:188-196).
UNSIZED_TAG = "F16"
_GGUF_TAG = re.compile(r"^(I?Q\d(_[A-Z0-9]+)*|TQ\d_0|BF16|F16|F32|MXFP4)$")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+(:[\w.-]+)?$")
SAFETENSORS_NOTE = "convert or download a GGUF: llama.cpp does not run safetensors repos"


def gguf_tag(quant: str | None) -> str | None:
    """The GGUF file tag (Q4_K_M, Q8_0, F16...) for the planner's or GGUF's spelling; None: not a GGUF type."""
    if quant is None:
        return None
    key = quant.strip().lower().replace("-", "_")
    if key in GGUF_TAGS:
        return GGUF_TAGS[key]
    return key.upper() if _GGUF_TAG.match(key.upper()) else None


def _model_ref(ref: str, tag: str, *, draft: bool) -> tuple[str, list[str]]:
    """(flags, convert steps) naming one model: a .gguf path -> -m/-md; a GGUF repo -> -hf/-hfd repo:QUANT
    (arg.cpp:3060, :3975: the repo must hold .gguf files); a safetensors repo or folder -> the .gguf file
    its convert steps write (convert_steps), so the command runs as printed after them."""
    if ref.endswith(".gguf"):
        return f"{'-md' if draft else '-m'} {quote(ref)}", []
    local = ref.startswith((".", "/", "~")) or not _HUB_ID.match(ref)
    repo, _, given = ref.partition(":") if not local else (ref, "", "")
    if not local and (given or repo.upper().endswith("-GGUF")):
        return f"{'-hfd' if draft else '-hf'} {quote(f'{repo}:{given or tag}')}", []
    name = ref.rstrip("/").rsplit("/", 1)[-1] or ("draft" if draft else "target")
    out, steps = convert_steps(ref, name, tag, remote=not local)
    return f"{'-md' if draft else '-m'} {quote(out)}", steps


# Tags convert_hf_to_gguf.py writes itself (--outtype f32|f16|bf16|q8_0, convert_hf_to_gguf.py:60 parse_args);
# any other (K-quants, Q4_0...) is llama-quantize's job from the F16 file
CONVERT_OUTTYPES = ("F32", "F16", "BF16", "Q8_0")


def convert_steps(ref: str, name: str, tag: str, *, remote: bool) -> tuple[str, list[str]]:
    """The .gguf file a safetensors checkpoint becomes, and the commands that write it.

    llama.cpp runs GGUF only. convert_hf_to_gguf.py (in a llama.cpp checkout) writes --outfile at --outtype
    from a folder, or from a Hub repo id with --remote (its parse_args: `model`, "directory containing model
    file or huggingface repository ID (if --remote)"); a type it cannot write is made by llama-quantize
    from the F16 file (`llama-quantize model-f32.gguf [model-quant.gguf] type`, tools/quantize/quantize.cpp:123
    @42ea59b; Q4_K_M, Q5_K_M, Q6_K... its QUANT_OPTIONS :23-62). File names: NAME-TAG.gguf, as GGUF repos
    name theirs (bartowski/Qwen2.5-7B-Instruct-GGUF holds Qwen2.5-7B-Instruct-Q4_K_M.gguf)."""
    src = f"--remote {quote(ref)}" if remote else quote(ref)
    out = f"{name}-{tag}.gguf"
    if tag in CONVERT_OUTTYPES:
        return out, [f"python convert_hf_to_gguf.py {src} --outtype {tag.lower()} --outfile {quote(out)}"]
    f16 = f"{name}-F16.gguf"
    return out, [f"python convert_hf_to_gguf.py {src} --outtype f16 --outfile {quote(f16)}",
                 f"llama-quantize {quote(f16)} {quote(out)} {tag}"]


def _kv_flags(kv_dtype: str | None, k: str, v: str) -> tuple[str, str | None]:
    """(-ctk T -ctv T, note) for a KV type other than llama.cpp's f16 default; unknown types are left out."""
    kv = (kv_dtype or "auto").lower()
    if kv in ("auto", "f16"):
        return "", None
    if kv not in KV_TYPES:
        return "", f"KV type '{kv_dtype}' is not a llama.cpp cache type ({', '.join(KV_TYPES)}): left at f16"
    return f" {k} {kv} {v} {kv}", None


def _draft_flags(x: LaunchInput, b: int) -> tuple[str, list[str]]:
    """The draft half of the command and its notes: -md/-hfd, its offload and KV type, drafting on."""
    tag = gguf_tag(x.draft_weights_quant or x.weights_quant) or UNSIZED_TAG
    draft, _ = _model_ref(x.draft or "", tag, draft=True)  # its convert steps: launch() puts them first
    notes: list[str] = []
    flags = (f" {draft} -ngld 99{_kv_flags(x.kv_dtype, '-ctkd', '-ctvd')[0]}"
             f" --spec-type {SPEC_TYPES[x.method]}{_draft_n(x.k, x.draft_p_min, x.draft_n_min)}")
    if x.method == EAGLE3:
        notes.append("llama.cpp loads an EAGLE-3 head as a GGUF converted from the head's checkpoint with "
                     "convert_hf_to_gguf.py (ggml-org/llama.cpp PR #18039)")
    if x.draft_context and x.draft_context != x.context:
        notes.append(f"the draft runs with the target's context (-c {x.context * b}): current builds size the "
                     f"draft from the target's context, so the draft context {x.draft_context} cannot be set "
                     f"(-cd was removed)")
    if x.heterogeneous:
        notes.append("llama.cpp has no path for a draft with another tokenizer: current builds refuse the pair "
                     "(common/speculative.cpp common_speculative_are_compatible)")
    return flags, notes


def launch(x: LaunchInput) -> dict[str, str]:
    """One llama-server command (current flag names, common/arg.cpp; docs/engines.md).

    `-c` is the whole KV pool, split over `--parallel` slots: batch b of `context` tokens each
    needs `-c context*b -np b`; `--kv-unified` (-kvu) keeps one pool every slot draws from, the
    layout `tokens_held` sizes. A draft needs `--spec-type draft-simple`: the type defaults to
    none (common/common.h:373) and -md alone does not enable drafting. K is `--spec-draft-n-max`,
    with n-min 0 and p-min 0.0 so every round drafts K tokens. The draft's context is the
    target's n_ctx (common/speculative.cpp:2529-2530); there is no flag for it any more.
    Partial offload: `-ngl N` (arg.cpp:2789) keeps the output layer and the last N - 1 decoder
    layers on the GPUs (src/llama-model.cpp:1589-1595); `--n-cpu-moe N` the experts of the first
    N layers in RAM (arg.cpp:2767-2773).
    """
    b = max(x.batch, 1)
    target, steps = _model_ref(x.target, gguf_tag(x.weights_quant) or UNSIZED_TAG, draft=False)
    if x.draft and x.method in (DRAFT_MODEL, EAGLE3):
        tag = gguf_tag(x.draft_weights_quant or x.weights_quant) or UNSIZED_TAG
        steps += [c for c in _model_ref(x.draft, tag, draft=True)[1] if c not in steps]
    notes = [f"{SAFETENSORS_NOTE}: the convert step writes the .gguf files the command loads (run it in a "
             f"llama.cpp checkout; llama-quantize is built with it)"] if steps else []
    for quant in dict.fromkeys(q for q in (x.weights_quant, x.draft_weights_quant) if q):
        if gguf_tag(quant) is None:
            notes.append(f"weights '{quant}' are not a GGUF type: the command names {UNSIZED_TAG} files")
    cmd = f"llama-server {target} -c {x.context * b} -ngl {99 if x.gpu_layers is None else x.gpu_layers}"
    if x.cpu_moe_layers:
        cmd += f" --n-cpu-moe {x.cpu_moe_layers}"  # experts of the first N layers in RAM (common/arg.cpp:2767)
    if b > 1:
        cmd += f" -np {b} --kv-unified"
    kv, kv_note = _kv_flags(x.kv_dtype, "-ctk", "-ctv")
    cmd += kv
    notes += [kv_note] if kv_note else []
    if x.draft and x.method in (DRAFT_MODEL, EAGLE3):
        draft, draft_notes = _draft_flags(x, b)
        cmd += draft
        notes += draft_notes
    elif x.method == MTP:
        # no -md: an MTP draft context is made against the target model (common/speculative.cpp:2556-2566)
        cmd += f" --spec-type {SPEC_TYPES[MTP]}{_draft_n(x.k, x.draft_p_min, x.draft_n_min)}"
        notes.append("draft-mtp drafts with the nextn layers stored in the target GGUF (blk.N.nextn.*, "
                     "common/speculative.cpp:2286-2292): the GGUF must be converted with them")
    elif x.method == NGRAM:
        cmd += _ngram_flags(x.ngram_variant or SPEC_TYPES[NGRAM], x.ngram_max or NGRAM_SIZE_N, x.k)
    return with_notes({**({"convert": " && ".join(steps)} if steps else {}), "command": cmd}, notes)


# llama.cpp's n-gram drafters (--spec-type, common/speculative.cpp:42-46 @ 001d906; what each drafts:
# docs/speculative.md @ a71f4a0): (key-size flag, draft-length flag). Per-type flags since PR #22397.
# ngram-simple / -map-k / -map-k4v draft the m tokens after a matched n-gram (size-m = K); ngram-mod's
# rolling-hash pool drafts a variable length up to n-max; ngram-cache drafts from n-gram statistics up to
# the draft maximum and has no key-size flag of its own.
NGRAM_VARIANT_FLAGS = {
    "ngram-simple": ("--spec-ngram-simple-size-n", "--spec-ngram-simple-size-m"),
    "ngram-map-k": ("--spec-ngram-map-k-size-n", "--spec-ngram-map-k-size-m"),
    "ngram-map-k4v": ("--spec-ngram-map-k4v-size-n", "--spec-ngram-map-k4v-size-m"),
    "ngram-mod": ("--spec-ngram-mod-n-match", "--spec-ngram-mod-n-max"),
    "ngram-cache": (None, "--spec-draft-n-max"),
}


def _ngram_flags(variant: str, n: int, k: int) -> str:
    """--spec-type VARIANT with its own key size (n) and draft length (K) flags."""
    key, length = NGRAM_VARIANT_FLAGS[variant]
    return f" --spec-type {variant}" + (f" {key} {n}" if key else "") + f" {length} {k}"


# --spec-type per method (common/speculative.cpp:34-44); ngram-simple is prompt lookup: the last N tokens
# are looked up in the history and the M that followed are drafted (common/arg.cpp:4290-4308).
SPEC_TYPES: dict[str, str] = {DRAFT_MODEL: "draft-simple", EAGLE3: "draft-eagle3", MTP: "draft-mtp", NGRAM: "ngram-simple"}
NGRAM_SIZE_N = 3


def _draft_n(k: int, p_min: float | None = None, n_min: int = 0) -> str:
    """K drafted per round, never fewer (n-min 0, p-min 0.0: drafting does not stop early); with p_min,
    drafting stops after the first draft token under it (common/speculative.cpp) and drafts under n_min drop."""
    if not p_min and not n_min:
        return f" --spec-draft-n-max {k} --spec-draft-n-min 0 --spec-draft-p-min 0.0"
    return f" --spec-draft-n-max {k} --spec-draft-n-min {n_min} --spec-draft-p-min {p_min:g}"
