"""What an engine is, as the planner sees it: one `Engine` value per engine, all its facts in one place.

Why: each engine lays out its KV cache, budgets its devices, checks a draft and is launched in its
own way. Each engine file (engines/llamacpp.py, vllm.py, ...) builds one `Engine` from its own
sourced facts and functions; the ledger, fit, pairing, speed and launch code ask the engine and
never test its name. Adding an engine is one file plus one line in engines/__init__.py.

Types the engine functions take are defined here (or in core/), so engines sit low in the layer
order: core -> sources -> engines -> fits, pairing, speed, drafting, plan.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, get_args

from ..core.calibration import sourced
from ..core.errors import one_line
from ..core.spec import CHUNKED, SLIDING, LayerSpec, ModelSpec, TokenizerFingerprint

# Confidence of a pairing verdict: what the engine itself compares was read ("exact"), catalog
# facts (family tags, sizes) stood in for token tables ("catalog"), or only config vocab_size and
# ids ("lower").
EXACT, CATALOG, LOWER = "exact", "catalog", "lower"
_BASIS_RANK = {"tokens": 3, "catalog": 2, "config": 1, "count": 1, "none": 0}  # count: length only
# add_bos when a file does not say, per tokenizer model (llama.cpp src/llama-vocab.cpp defaults).
ADD_BOS_DEFAULT = {"SPM": True, "WPM": True, "BPE": False, "UGM": False}


# Drafting methods by kind (planner/drafting/<kind>.py): how an engine is told to draft. Engines say which
# they run (Engine.methods) and render each in their launch command.
# The closed sets are types (as vLLM's config/speculative.py SpeculativeMethod): mypy checks them in planner/,
# and Engine.__post_init__ refuses a value outside them at run time. Drafting methods are an open registry
# (drafting.METHODS: a test adds a toy one), so MethodKind names the built-in kinds only.
MethodKind = Literal["draft_model", "eagle3", "mtp", "ngram", "early_exit"]
DRAFT_MODEL: MethodKind = "draft_model"
EAGLE3: MethodKind = "eagle3"
MTP: MethodKind = "mtp"
NGRAM: MethodKind = "ngram"
EARLY_EXIT: MethodKind = "early_exit"
METHOD_KINDS: tuple[MethodKind, ...] = get_args(MethodKind)
# how an engine keeps a sampled draft token (speed/acceptance_prior.py)
SampledRule = Literal["rejection", "target", "match"]
SAMPLED_RULES: tuple[SampledRule, ...] = get_args(SampledRule)
# the machine classes an achieved share, format factor or per-forward cost is catalogued under
# (plan/roof.share_kinds, catalogs/calibration/)
ShareKey = Literal["gpu", "gpu-tp", "gpu-hbm", "gpu-amd", "apple", "apple-ultra", "cpu"]
SHARE_KEYS: tuple[ShareKey, ...] = get_args(ShareKey)


def share_key(value: object) -> ShareKey | None:
    """`value` as a ShareKey when it is one (a machine's kind or share_kind read as text), else None: the one
    place text from a machine becomes the closed set."""
    return next((k for k in SHARE_KEYS if k == value), None)


# the built-in engines' canonical names (engines/__init__.py _BUILTIN); the registry stays open to others
EngineName = Literal["llama.cpp", "vllm", "sglang", "transformers", "mlx"]


def pad(n: int, to: int) -> int:
    """n rounded up to a multiple of `to` (cache cells, blocks)."""
    return -(-n // to) * to


def quote(s: str) -> str:
    """One shell word on one line (launch commands are pasted into a shell).

    A word with a newline, an escape or a byte that is not UTF-8 (a surrogate from a Latin-1 folder
    name) is written in bash's $'...' quoting, so a hostile folder name cannot start a line of its own.
    """
    if s.isprintable():
        return shlex.quote(s)
    return "$'" + "".join(_ansi_c(c) for c in s) + "'"


def _ansi_c(c: str) -> str:
    if c in "\\'":
        return "\\" + c
    if c.isprintable():
        return c
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:  # surrogateescape: the original byte
        return f"\\x{o - 0xDC00:02x}"
    return f"\\x{o:02x}" if o < 0x80 else f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}"


def with_notes(out: dict[str, str], notes: list[str]) -> dict[str, str]:
    """A launch answer with its notes joined under "note" (absent when there are none), on one line:
    notes quote model paths, and a newline in one must not forge a line of output."""
    if notes:
        out["note"] = one_line("; ".join(notes))
    return out


# --- pairing: what an engine's draft check reads and returns ------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One engine: does the plain same-vocabulary algorithm run without extra options."""

    engine: str
    compatible: bool
    failed_rule: str | None
    fallback: str | None
    detail: str
    confidence: str = EXACT


@dataclass(frozen=True)
class Side:
    """One model of a pair as the engines' draft checks see it: config facts + tokenizer fingerprint."""

    spec: ModelSpec
    fp: TokenizerFingerprint | None

    @property
    def basis(self) -> str:
        return self.fp.basis if self.fp else "none"

    @property
    def vocab_type(self) -> str | None:
        vt = self.fp.vocab_type if self.fp else None
        return None if vt in (None, "UNKNOWN") else vt

    @property
    def n_vocab(self) -> int:
        return self.fp.n_vocab if self.fp else self.spec.vocab

    @property
    def bos(self) -> int | None:
        return self.fp.bos_id if self.fp and self.fp.bos_id is not None else self.spec.bos_token_id

    @property
    def eos(self) -> int | None:
        if self.fp and self.fp.eos_id is not None:
            return self.fp.eos_id
        return self.spec.eos_token_ids[0] if self.spec.eos_token_ids else None

    def add_bos(self) -> tuple[bool | None, str]:
        """add_bos as the tokenizer files say, else the tokenizer model's default, and where it came from."""
        if self.fp is None:
            return None, "unknown"
        if self.fp.add_bos is not None:
            return self.fp.add_bos, "tokenizer files" if self.fp.basis != "catalog" else "catalog"
        default = ADD_BOS_DEFAULT.get(self.vocab_type or "")
        return default, f"llama.cpp default for {self.vocab_type}" if default is not None else "unknown"

    def add_eos(self) -> bool | None:
        if self.fp is None:
            return None
        return self.fp.add_eos if self.fp.add_eos is not None else (False if self.vocab_type else None)


def first_text_mismatch(a: TokenizerFingerprint, b: TokenizerFingerprint, *, start: int, end: int) -> int | None:
    """The first id in [start, end) whose token text differs (padding ids read as `[PAD{i}]`), or None."""
    ta, tb = a.tokens or (), b.tokens or ()
    m = max(start, min(len(ta), len(tb), end))
    if ta[start:m] != tb[start:m]:  # tuple comparison runs in C; locate only on failure
        return next(i for i in range(start, m) if ta[i] != tb[i])
    for i in range(m, end):
        if a.token_text(i) != b.token_text(i):
            return i
    return None


def weakest_basis(t: Side, d: Side) -> str:
    """The weaker of the two fingerprints' bases: tokens > catalog > config > none."""
    return min((t.basis, d.basis), key=lambda b: _BASIS_RANK.get(b, 0))


# A draft check: (target, draft, same tokenizer table? True/False/None unknown) -> Verdict.
PairRule = Callable[[Side, Side, "bool | None"], Verdict]


# --- launch commands ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LaunchInput:
    """What a launch command needs; refs are what the user passed (path, HF id)."""

    target: str
    draft: str | None
    k: int
    context: int
    kv_dtype: str | None = None  # user-facing spelling: f16, q8_0, fp8 ...
    tp: int = 1
    gpu_memory_utilization: float | None = None
    heterogeneous: bool = False  # tokenizers differ: UAG / TLI paths
    temperature: float = 0.0
    batch: int = 1  # concurrent sequences: llama.cpp --parallel slots
    draft_context: int | None = None  # the draft's context the ledger sized; None: `context` (llama.cpp has no flag)
    weights_quant: str | None = None  # GGUF quant the ledger sized (Q4_K_M, q4_k, ...); None: 16-bit (F16/BF16)
    pp: int = 1  # pipeline-parallel stages (vLLM/SGLang; llama.cpp splits layers over its GPUs itself)
    gpu_layers: int | None = None  # llama.cpp -ngl N; None: all
    cpu_moe_layers: int = 0  # llama.cpp --n-cpu-moe N
    draft_weights_quant: str | None = None  # the draft's own quant when it differs; None: `weights_quant`
    method: str = DRAFT_MODEL  # how `draft` drafts: a draft model, an EAGLE-3 head (draft = its repo), the
    # target's own MTP layers, n-gram lookup or early exit (those three name no draft)
    exit_layer: int | None = None  # early exit: the layer whose output drafts (transformers assistant_early_exit)
    ngram_max: int | None = None  # n-gram lookup: the longest n-gram matched against the prompt
    ngram_variant: str | None = None  # n-gram lookup: one of the engine's own variants (Engine.ngram_variants)
    draft_p_min: float | None = None  # llama.cpp confidence stop (--spec-draft-p-min); None: every round drafts k
    draft_n_min: int = 0  # llama.cpp --spec-draft-n-min: drafts shorter than this are dropped


# --- the KV cache layout -----------------------------------------------------------------------


def windowed(layer: LayerSpec, swa: bool) -> bool:
    """Whether a layer holds only its window: sliding layers when the engine runs SWA, chunked always."""
    return bool(layer.attention in (SLIDING, CHUNKED) and layer.window and (swa or layer.attention == CHUNKED))


# tokens_held(layer, context, batch, prefill chunk or None, windowed) -> cache cells for the whole batch
TokensHeld = Callable[[LayerSpec, int, int, "int | None", bool], int]
# prefill_chunk(context, batch) -> tokens in the largest forward
PrefillChunk = Callable[[int, int], int]
# activation_bytes(spec, context, batch, chunk, swa) -> the engine's own peak working memory, when it
# has a model of its own (llama.cpp's reserved compute buffer); None: the generic per-token estimate.
ActivationBytes = Callable[[ModelSpec, int, int, int, bool], int]


# Large bf16 GEMMs through cuBLAS/CUTLASS reach 0.75-0.83 of dense tensor peak: FlashAttention-3 740 of
# 989 TFLOPS fp16 on H100 (arXiv 2407.08608), cuBLAS bf16 8192^3 258 of 312 TFLOPS on A100 (Horace He,
# "Making Deep Learning Go Brrrr"); fp8 GEMMs ~0.69 (DeepGEMM 1358 of 1979 TFLOPS at M=4096). 0.75 taken,
# for every engine whose matmuls are those libraries' (vLLM, SGLang, transformers).
CUDA_GEMM_EFFICIENCY: Mapping[ShareKey, tuple[float, str]] = {
    "gpu": sourced("cuda-gemm", "gpu", "compute_share"),
}


@dataclass(frozen=True)
class Engine:
    """Everything the planner knows about one engine, each fact with its source in the engine's file.

    Memory: `tokens_held` and `prefill_chunk` give the KV layout and largest forward; `latent_mla`
    keeps MLA as its compressed latent; `sixteen_bit` loads float32 checkpoints in 16-bit;
    `default_kv_format` is the KV type when none is asked ('F16' in llama.cpp, else the model's);
    `swa_needs_arch` runs sliding windows only where the engine implements them for the
    architecture (llama.cpp); `conv_state_full_kernel` keeps kernel (not kernel - 1) conv columns;
    `recurrent_state_f32` keeps recurrent state in f32; `state_copies_per_spec_token` keeps one
    recurrent state per speculative position (vLLM); `min_logit_rows` is the sampler's row floor.
    Fit: `overhead_bytes` per device (GPU context), `gpu_utilization`, `device_margin_bytes`,
    `tp_comm_bytes`, `tp_unsplit_groups`, `tp_main_device_only`, `tp_splits_heads`, `host_input_embedding`,
    `tied_copy_on_last_stage`, `pp_vllm_stages` (vLLM's stage split), `default_split` ('tp',
    'pp' or 'single' over several devices), the suggestion ladders.
    Speed: `forward_overhead_s` = (per forward, per layer) seconds; `draft_forward_overhead_s` the same
    for one draft step where the engine's proposer loop runs drafts without a whole engine step (vLLM,
    SGLang: no scheduler pass, sampler or input preparation per drafted token); None = as a forward.
    Pairing: `pair_rule`, and whether the engine has a heterogeneous-vocabulary fallback.
    Plan: `kv_options` tried by recommend. Launch: `launch` renders the command(s).
    Drafting: `methods` maps each drafting method the engine runs (METHOD_KINDS) to where its source
    says so; a method missing from it is refused, with `method_refusals[kind]` (or a generic) reason.
    """

    name: str
    aliases: tuple[str, ...]
    summary: str
    overhead_bytes: int
    overhead_source: str
    forward_overhead_s: tuple[float, float]
    forward_overhead_source: str
    tokens_held: TokensHeld
    prefill_chunk: PrefillChunk
    pair_rule: PairRule
    launch: Callable[[LaunchInput], dict[str, str]]
    kv_options: tuple[str, ...] = ("auto",)
    heterogeneous_fallback: bool = False
    activation_bytes: ActivationBytes | None = None
    activation_source: str | None = None
    latent_mla: bool = False
    dsa_indexer_fp8: bool = False  # a DSA indexer's key cache as fp8 + an fp32 scale per 128 (fits/memory.py)
    sixteen_bit: bool = False
    default_kv_format: str | None = None
    swa_needs_arch: bool = False
    conv_state_full_kernel: bool = False
    recurrent_state_f32: bool = False
    state_copies_per_spec_token: bool = False
    min_logit_rows: int = 0
    gpu_utilization: float = 1.0
    device_margin_bytes: int = 0
    tp_comm_bytes: int = 0
    tp_unsplit_groups: frozenset[str] = field(default_factory=frozenset)
    tp_main_device_only: bool = False
    # tensor parallelism divides attention heads among ranks, so tp must divide the query heads, and the KV
    # heads (or be a multiple of them: replicas); vLLM: vllm/config/model.py
    # ModelConfig.verify_with_parallel_config "Total number of attention heads ... must be divisible by tensor
    # parallel size", vllm/model_executor/layers/linear.py QKVParallelLinear divide(kv_heads, tp) or
    # divide(tp, kv_heads) (vllm-project/vllm@0052a5b8); SGLang's layers/linear.py is a copy. False where
    # "tp" splits matrix rows by shares instead (llama.cpp --split-mode row, --tensor-split)
    tp_splits_heads: bool = True
    # a separate draft sized at int4 needs an int4 CHECKPOINT of it (True), or the engine (or its printed
    # convert step) makes one (False: vLLM's llm-compressor folder, llama.cpp's llama-quantize, mlx convert)
    draft_int4_needs_checkpoint: bool = False
    host_input_embedding: bool = False
    tied_copy_on_last_stage: bool = False
    pp_vllm_stages: bool = False
    default_split: str = "tp"
    kv_suggestion: str | None = None
    weights_ladder: tuple[str, ...] = ()
    quant_group_size: int | None = None  # group size of the engine's own quantiser (MLX: 64)
    partial_offload: bool = False  # layers (or MoE experts) can stay in host RAM (llama.cpp -ngl, --n-cpu-moe)
    # Speed: which kernels run on each machine kind (a key of catalogs/kernels/verify_curves.json), and
    # the share of peak memory bandwidth a batch-1 decode reaches there, with its source.
    verify_backend: Mapping[str, str] = field(default_factory=dict)
    bandwidth_efficiency: Mapping[ShareKey, tuple[float, str]] = field(default_factory=dict)
    # a weight format whose decode kernel streams below the class's share: share key -> kernel family ->
    # (factor on the share, source); e.g. llama.cpp's k-quant mat-vec kernels on GDDR GPUs
    format_share: Mapping[ShareKey, Mapping[str, tuple[float, str]]] = field(default_factory=dict)
    # Speed under load: the share of peak tensor FLOP/s the engine's GEMMs reach on each machine kind
    # (what binds a large batch), and what the speculation machinery costs per round: (fixed, per
    # sequence) seconds of proposer input preparation, rejection sampling and bookkeeping that plain
    # decoding does not pay, each with its source.
    compute_efficiency: Mapping[ShareKey, tuple[float, str]] = field(default_factory=dict)
    spec_round_overhead_s: tuple[float, float] = (0.0, 0.0)
    spec_round_overhead_source: str = "not modelled"
    # one draft step's fixed cost (per step, per draft layer) inside the proposer loop; None: a forward's
    draft_forward_overhead_s: tuple[float, float] | None = None
    draft_forward_overhead_source: str = ""
    # a machine class's own per-forward cost (plan/roof.share_key -> ((fixed, per layer) s, source))
    forward_overhead_by_kind: Mapping[ShareKey, tuple[tuple[float, float], str]] = field(default_factory=dict)
    # what published batch-1 decodes of MoE targets reach against this engine's roofline (a stated gap: the
    # roofline prices the touched experts' bytes, not the many small expert reads); "" = none published
    moe_baseline_caveat: str = ""
    # confidence-stopped drafting (speed/adaptive.py): the engine's flags and defaults, with their source;
    # "" = every round drafts K (the engine has no such stop)
    confidence_stop: str = ""
    default_stop: tuple[float, int] | None = None  # (p_min, n_min) priced beside every-round-K (drafting_stop.py)
    # how a drafted token is kept when sampling (speed/acceptance_prior.py): "rejection" (min(1, p/q), lossless
    # speculative sampling), "target" (the draft proposes its top token; kept when the target's sample equals
    # it) or "match" (draft and target each sample; kept when the two tokens are equal)
    sampled_acceptance: SampledRule = "rejection"
    sampled_acceptance_source: str = ""
    methods: Mapping[str, str] = field(default_factory=lambda: {DRAFT_MODEL: "a separate draft model"})
    method_refusals: Mapping[str, str] = field(default_factory=dict)
    # n-gram drafters of the engine's own beyond plain prompt lookup (llama.cpp --spec-type ngram-*): the
    # variant's name -> what it drafts and its launch flags' source; empty: the engine has one n-gram drafter
    ngram_variants: Mapping[str, str] = field(default_factory=dict)

    def __hash__(self) -> int:
        # hashed by name (equal engines share one): a resolved Engine is a cache key where its name was one
        # (fits/memory.layer_token_bytes); equality still compares every fact
        return hash(self.name)

    def __post_init__(self) -> None:
        """Refuse a value outside the closed sets (a typo in an engine file fails at import, not in a plan)."""
        keys = {*self.bandwidth_efficiency, *self.format_share, *self.compute_efficiency, *self.forward_overhead_by_kind}
        if self.sampled_acceptance not in SAMPLED_RULES or not keys <= set(SHARE_KEYS):
            raise ValueError(f"engine {self.name}: sampled_acceptance must be one of {', '.join(SAMPLED_RULES)} and "
                             f"share keys among {', '.join(SHARE_KEYS)} (got {self.sampled_acceptance!r}, "
                             f"{sorted(keys - set(SHARE_KEYS))})")


def method_verdict(engine: Engine, kind: str) -> Verdict:
    """Whether `engine` runs drafting method `kind` at all (its `methods`), with the source or the reason."""
    if kind in engine.methods:
        return Verdict(engine.name, True, None, None, f"{engine.name} runs {kind}: {engine.methods[kind]}")
    why = engine.method_refusals.get(kind, f"{engine.name} has no {kind} drafting (runs: {', '.join(engine.methods)})")
    return Verdict(engine.name, False, "method", None, why)
