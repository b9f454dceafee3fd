"""Environment variables and tunable defaults, read in one place.

Why: tests patch one module, and every default that changes a number in a ledger
is named here with its source so reports can cite it. No other module reads
`os.environ`.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

ENV_VARS_TRUE_VALUES = {"1", "ON", "YES", "TRUE"}

MiB = 1024**2
GiB = 1024**3


def _is_true(value: str | None) -> bool:
    return (value or "").strip().upper() in ENV_VARS_TRUE_VALUES


def is_offline() -> bool:
    """True when SPEC_PLANNER_OFFLINE or HF_HUB_OFFLINE asks us not to touch the network."""
    return _is_true(os.environ.get("SPEC_PLANNER_OFFLINE")) or _is_true(os.environ.get("HF_HUB_OFFLINE"))


def is_debug() -> bool:
    """SPEC_PLANNER_DEBUG=1 makes the CLI show tracebacks for planner errors."""
    return _is_true(os.environ.get("SPEC_PLANNER_DEBUG"))


def hub_deadline_s() -> float:
    """SPEC_PLANNER_HUB_DEADLINE_S: the total time one Hub fetch may take, all requests and retries together.

    Default HUB_DEADLINE_S; a positive number of seconds (tests shorten it), anything else is the default.
    """
    raw = (os.environ.get("SPEC_PLANNER_HUB_DEADLINE_S") or "").strip()
    try:
        value = float(raw[:32]) if raw else HUB_DEADLINE_S
    except ValueError:
        return HUB_DEADLINE_S
    return value if 0 < value <= HUB_DEADLINE_S else HUB_DEADLINE_S


def hf_token() -> str | None:
    """HF_TOKEN, passed to huggingface_hub for gated repos (None lets the hub find its own)."""
    return os.environ.get("HF_TOKEN") or None


HOST_KINDS = ("gpu", "apple", "cpu", "none")


def child_env_offline(import_root: str) -> dict[str, str]:
    """The environment of a worker process that must not reach the network (the meta-device inventory):
    this one, with the Hub and transformers offline, one CPU thread, and `import_root` first on the path
    (so the worker imports this very package, installed or not)."""
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(p for p in (import_root, env.get("PYTHONPATH", "")) if p))
    return env


def profile_dir_override() -> str | None:
    """SPEC_PLANNER_PROFILE_DIR: the directory saved machine profiles live in, in place of the user's cache
    directory (fits/machine_profile.py); tests point it at a tmp dir."""
    v = (os.environ.get("SPEC_PLANNER_PROFILE_DIR") or "").strip()
    return v or None


def host_kind_override() -> str | None:
    """SPEC_PLANNER_HOST_KIND (gpu | apple | cpu | none) in place of the quick look at this host that
    `planner memory` takes; 'none' sizes for no particular host (the transformers ledger, GPU overhead).
    Tests and recorded outputs pin it so they read the same on every machine."""
    v = (os.environ.get("SPEC_PLANNER_HOST_KIND") or "").strip().lower()
    return v if v in HOST_KINDS else None


def github_actions() -> tuple[bool, str | None]:
    """(running in GitHub Actions: GITHUB_ACTIONS=true, the $GITHUB_STEP_SUMMARY file or None)."""
    on = (os.environ.get("GITHUB_ACTIONS") or "").strip().lower() == "true"
    return on, (os.environ.get("GITHUB_STEP_SUMMARY") or None) if on else None


def catalog_dir() -> Path:
    """Where the catalogs live: SPEC_PLANNER_CATALOG, else the package data `planner/catalogs/`.

    Found beside the package's own files, so an installed wheel reads its own copy from any working
    directory. In a source checkout `planner/catalogs` is a relative symlink to the top-level
    `catalogs/`; the path is resolved, so it reads `catalogs/...` there. A checkout made without
    symlinks (git core.symlinks=false) leaves a small file in its place: `catalogs/` beside the
    package is used then. Whether the directory holds anything is checked by its readers
    (sources/catalog.py, fits/machine_catalog.py), which fail with a one-line error.
    """
    override = os.environ.get("SPEC_PLANNER_CATALOG")
    if override:
        return Path(override)
    return _bundled_catalog_dir()


@lru_cache(maxsize=1)
def _bundled_catalog_dir() -> Path:
    # The package does not move while it runs: resolve it once (the catalog readers ask per look-up,
    # tens of thousands of times in a fleet report, and each resolve() walks the symlink).
    # The package's own folder (what importlib.resources.files("planner") is for a package on disk, the
    # only kind that can hold a catalog directory), without importing importlib.resources (start-up).
    bundled = Path(__file__).resolve().parents[1] / "catalogs"
    if not bundled.is_dir() and (bundled.parents[1] / "catalogs").is_dir():
        return (bundled.parents[1] / "catalogs").resolve()
    return bundled.resolve()


# --- defaults every command shares (one definition; the CLI shows them) -------------
# Tokens per sequence when --context is not given: the common 4k serving default.
DEFAULT_CONTEXT = 4096
# Largest K (tokens drafted per round) searched when --max-k is not given: published optima sit at
# K = 3-6 and the verify curve past 8 rarely pays (docs/speed.md).
DEFAULT_MAX_K = 8
# The most concurrent sequences --batch accepts (as parse_batches: at most 7 digits): an absurd value is refused
# (exit 2) rather than answered. Here, not in commands/_options.py, so the typer-free memory path shares it.
MAX_BATCH = 9_999_999
# The CPU torch the README's Quick start and .ci/run install first: every "install torch" hint names it, since an
# unpinned `pip install torch` pulls a multi-GB CUDA build (tests/test_newcomer_wording.py reads the README's pin)
TORCH_PIN = "torch==2.13.0"
# torch, transformers and accelerate in one hint (the `real` extra), torch pinned first: missing dependencies
# were once named one at a time, each after the last was installed
REAL_EXTRA_HINT = f"pip install {TORCH_PIN} && pip install 'spec-planner[real]'"
# `planner fit`'s safety margin per device when --margin is not given: what llama.cpp's own fit leaves free on
# each device (1024 MiB, common/fit.cpp), as the room the ledger's estimates may be off by. An engine whose
# budget already leaves a margin (llama.cpp) gets only the part of it that its own does not cover.
DEFAULT_FIT_MARGIN_BYTES = 1024 * MiB
# With a confidence stop (llama.cpp --spec-draft-p-min) K is the most a round drafts: llama-server's own
# n_max default (common/common.h common_params_speculative n_max = 16)
ADAPTIVE_MAX_K = 16
# The `schema_version` every `--json` object starts with (docs/json.md): additive changes keep it,
# a removed or renamed key (or a changed meaning or unit) raises it.
JSON_SCHEMA_VERSION = 1

# --- bounds on untrusted inputs -------------------------------------------------
# safetensors: same cap as huggingface_hub (SAFETENSORS_MAX_HEADER_LENGTH, 25 MB).
SAFETENSORS_MAX_HEADER_BYTES = 25_000_000
# JSON side files (config, generation_config, index, tokenizer_config).
JSON_MAX_BYTES = 16 * MiB
# tokenizer.json of a 262k vocabulary is ~33 MB; 64 MiB leaves room, no more.
TOKENIZER_JSON_MAX_BYTES = 64 * MiB
# The most shards an index may name before we call it implausible.
MAX_SHARDS = 10_000
# Config sanity: no real decoder has more (largest public: ~1.6T params, 128 layers).
MAX_LAYERS = 2_048
MAX_HIDDEN = 1 << 20
MAX_VOCAB = 1 << 24
MAX_CONTEXT = 1 << 28
HUB_TIMEOUT_S = 10.0
# Hub requests: one retry after a connection error, timeout or 5xx, then the HF cache or the bundled
# catalog answers (with a warning), else a clear offline error.
HUB_RETRIES = 1
# First ranged read of a remote safetensors file: most headers fit in 100 kB (huggingface_hub uses the same).
HUB_FIRST_READ_BYTES = 100_000
# The whole Hub fetch of one model (HEADs, side files, headers, the retry) ends by this deadline, however
# slowly a server drips its bytes: a per-read timeout alone lets 1 byte every 2 s run for hours.
HUB_DEADLINE_S = 45.0
# refs/<revision> in the HF cache holds a 40-hex commit; anything longer is not a ref (read no more).
HF_REF_MAX_BYTES = 256

# --- engine facts live in planner/engines/<engine>.py, each with its source ----------

# --- fit: per-device budgets (planner/fits/budget.py, planner/fits/machine*.py) ----------
# Apple silicon GPU share of unified memory (Metal recommendedMaxWorkingSetSize) when the
# machine does not say: 2/3 below 64 GiB, 3/4 from 64 GiB (measured: 16 and 32 GiB -> 2/3,
# llama-cpp-python #687 and llama.cpp PR #2011; 64 GiB -> ~48 GiB, llama.cpp #1870).
APPLE_WORKING_SET_FRACTION_SMALL = 2 / 3
APPLE_WORKING_SET_FRACTION_LARGE = 0.75
APPLE_WORKING_SET_LARGE_FROM_BYTES = 64 * GiB
# CPU-only runs: share of RAM usable after OS headroom when the machine does not say (assumed).
CPU_USABLE_FRACTION = 0.9
# Runtime overhead of Metal and CPU-only runs: no CUDA context; the engine's host buffers are in
# the activations term and the OS share is outside the budget already (usable fraction). Assumed 0.
HOST_OVERHEAD_BYTES = 0
# The meta-device inventory (sources/meta_inventory.py, probe/meta_worker.py; docs/ledger.md "Inventory
# sources"): the worker process's deadline, its address-space cap, and the bytes read each way. Measured on
# a busy 2-core host: importing torch + transformers 2-4 s, DeepSeek-V3 (671B, 256 experts) built on the
# meta device in 1.6-3.2 s, the whole worker 4.9-8.8 s, under a 2 GiB address-space cap too.
META_TIMEOUT_S = 20.0
META_MEMORY_MAX_BYTES = 4 * GiB
META_CONFIG_MAX_BYTES = 1 * MiB
META_OUTPUT_MAX_BYTES = 32 * MiB
# Machine detection: how long nvidia-smi/sysctl may take, and how much of their output is read.
DETECT_TIMEOUT_S = 10.0
DETECT_OUTPUT_MAX_BYTES = 1 * MiB
# Host bandwidth measurement (fits/machine_detect.py measure_bandwidth): 128 MiB buffers (far past any
# CPU's last-level cache, so DRAM is timed), trials until 0.8 s of the measuring thread's CPU time is spent
# (the clock the trials are timed on, so a busy host gets as many trials as an idle one), 7..31 of them:
# 7 gives quartiles from distinct order statistics; at 8-10 GB/s one trial is 27-33 ms of CPU time, so the
# budget yields ~25-30 (a 30-trial median moved ~9% between runs on a busy 2-core host, a 7-trial one ~16%:
# docs/probe.md). The wall cap bounds the measurement on a very busy host (past the 7-trial minimum).
BANDWIDTH_BUFFER_BYTES = 128 * MiB
BANDWIDTH_BUDGET_S = 0.8
BANDWIDTH_WALL_CAP_S = 4.0
BANDWIDTH_MIN_TRIALS = 7
BANDWIDTH_MAX_TRIALS = 31
# A saved machine profile (fits/machine_profile.py): ignored past this age (hardware rarely changes, but
# drivers, BIOS settings and thermal paste do; a week bounds how stale a measured figure may be) and
# bounded in size when read. SPEC_PLANNER_PROFILE_DIR puts it elsewhere (tests use a tmp dir).
MACHINE_PROFILE_MAX_AGE_S = 7 * 24 * 3600
# Free memory read live moves by hundreds of MB between runs on a shared host (other processes, the page
# cache), and a byte-exact ledger then prints another headroom each run. With a saved profile, a device's
# free memory within this share of its memory of the figure saved is taken as saved (stated in the output);
# a larger change is real and read live. Assumed, not fitted: 5% of a 24 GB host is 1.2 GB, past the
# run-to-run churn seen here and inside planner fit's default 1 GiB safety margin on GPUs.
FREE_MEMORY_STABLE_FRACTION = 0.05
MACHINE_PROFILE_MAX_BYTES = 64 * 1024
MACHINE_PROFILE_NAME = "machine-profile.json"
PROBE_PROFILE_NAME = "probe-profile.json"  # `planner probe --save`: the measured costs, beside the machine profile
# A machine description file (catalogs/machines/*.json or --machine FILE) is small.
MACHINE_JSON_MAX_BYTES = 1 * MiB
# A list file of model or machine references (`planner report --targets FILE`, `--fleet FILE`): one per line.
LIST_FILE_MAX_BYTES = 1 * MiB
# Search bounds: largest batch tried, most GPUs a "more GPUs" suggestion considers.
FIT_MAX_BATCH = 1 << 16
FIT_MAX_GPUS = 16

# --- GGUF headers (planner/sources/gguf_header.py) ----------------------------
# Every count or length read from a GGUF file is checked against the bytes left in the file
# first, then against these caps, before anything is allocated. Real files: ~40 keys, a few
# thousand tensors, vocabularies up to ~262k tokens (merges ~500k), chat templates < 1 MiB.
GGUF_MAX_KV = 1 << 20
GGUF_MAX_TENSORS = 1 << 20
GGUF_MAX_STRING_BYTES = 64 * MiB
GGUF_MAX_ARRAY_LEN = 1 << 24  # = MAX_VOCAB: the largest array a real file holds is its vocabulary
GGUF_MAX_NESTED_ARRAYS = 1 << 16  # an array of arrays: none in a real file is long; each costs a Python call
GGUF_MAX_HEADER_BYTES = 256 * MiB  # bytes of a local GGUF read for its header (real ones: a few MB)
GGUF_MAX_ARRAY_DEPTH = 3  # arrays of arrays (gguf-py writes them; llama.cpp itself rejects them)
GGUF_MAX_TENSOR_DIMS = 4  # GGML_MAX_DIMS (ggml/include/ggml.h)
GGUF_MAX_SPLITS = 1024  # split.count is a u16 in gguf-split; no published model needs more


# --- probe (planner/probe, planner/speed/profile_file.py) -------------------------------
# Whole-probe time budget, seconds: a CPU probe must finish in about a minute; accelerators
# get longer because the models probed there are larger (random init of their weights takes time).
PROBE_BUDGET_S = {"cpu": 60.0, "cuda": 120.0, "mps": 120.0}
# Memory left free when sizing what the probe may allocate: a fraction of what is available
# plus a fixed reserve (allocator slack, the torch CUDA context, the OS).
PROBE_MEMORY_FRACTION = 0.85
PROBE_MEMORY_RESERVE_BYTES = 512 * MiB
# Plausible time of one forward (imported or read from a profile): below a nanosecond no device runs a
# layer, above ~3 hours it is no decode step; outside, ratios of times underflow or overflow to inf.
PROBE_MIN_STEP_S = 1e-9
PROBE_MAX_STEP_S = 1e4
# Repeats per timed point (median taken) and untimed warm-up calls before them.
PROBE_REPEATS = 7
PROBE_WARMUP = 2
# Caps on files the probe reads: profiles, imported benchmark output, calibration prompts.
PROFILE_MAX_BYTES = 4 * MiB
PROBE_IMPORT_MAX_BYTES = 16 * MiB
PROBE_PROMPTS_MAX_BYTES = 4 * MiB
# `planner bench --endpoint`: every read from a serving engine is bounded in bytes and time. One
# completion's JSON (timings, text of at most --tokens tokens) is kilobytes; a Prometheus /metrics page
# of a busy vLLM is ~100 KiB; the caps leave an order of magnitude and refuse a server streaming forever.
ENDPOINT_MAX_BYTES = 4 * MiB
ENDPOINT_METRICS_MAX_BYTES = 8 * MiB
ENDPOINT_CONNECT_TIMEOUT_S = 5.0
ENDPOINT_MAX_REQUESTS = 10_000
# Diagnosis thresholds (planner/speed/diagnosis.py). Verification slope s = (t_v(n)/t_v(1) - 1)/(n - 1):
# 0 = batch-parallel (flat), 1 = n sequential single-token forwards (the quantised-Metal failure).
VERIFY_SLOPE_WARN = 0.25
VERIFY_SLOPE_BAD = 0.5
# Draft step relative to a target step, c = t_d / t_v(1). With flat verification and perfect
# acceptance the speed-up is at most (K+1)/(1+Kc) < 1/c, so c >= 0.5 caps it below 2x at any K and
# alpha 0.7 gives at most ~1.13x (K=1); at c = 0.25, alpha 0.7 gives at most ~1.46x (K=2).
DRAFT_RATIO_WARN = 0.25
DRAFT_RATIO_BAD = 0.5

# --- speed model: roofline overhead and acceptance priors (planner/speed/roofline.py, acceptance.py) ---
# Per-forward engine overheads: Engine.forward_overhead_s in planner/engines/<engine>.py.
# Acceptance priors (alpha, low, high) when the pairs catalog has nothing usable for a family pair.
PRIOR_SAME_FAMILY = (0.75, 0.5, 0.95)
PRIOR_SAME_FAMILY_SOURCE = ("assumed: same-family default; the bundled catalogs/pairs same-family "
                            "measurements convert to alpha between about 0.58 and 0.91")
PRIOR_CROSS_FAMILY = (0.3, 0.05, 0.65)
PRIOR_CROSS_FAMILY_SOURCE = ("assumed: cross-family pairs need a vocabulary translation; published TLI "
                             "acceptance fell from ~0.80 at 100% vocabulary overlap to 0.25 at 79.8% and 0.15 "
                             "at 69.6% (vLLM PR #38174)")
# A published number is one workload on one machine: a prior's interval is at least this wide on each side,
# x3 for a single measurement and x2 for two or three (assumed: the same pair's published acceptance moves
# by 0.1-0.15 between chat and code prompts, e.g. 69.7% at K=1 vs 37.8% at K=6 accepted/drafted for one
# Qwen2.5 pair, arXiv 2607.17283; 0.70-0.85 across draft sizes in draftbench).
PRIOR_MIN_HALF_WIDTH = 0.05


# --- pairing advice (planner/pairing/advice.py) --------------------------------------
# Draft size heuristics (docs/pairing.md "Advice"): usual drafts are the 0.5B-3B classes (bounds
# widened so Qwen2.5-0.5B's 0.49B and Llama-3.2-3B's 3.21B count) and well under a tenth of the
# target's (active) parameters. Up to a fifth is still common (Llama-3.1-8B + 3.2-1B is 15% and gave
# 1.71x in llama.cpp #5877). A draft of half the target's size costs about half a target step
# (memory-bound decode), so even perfect acceptance caps the speed-up at (K+1)/(1+K/2) < 2.
PAIR_DRAFT_TYPICAL_PARAMS = (400_000_000, 3_500_000_000)
PAIR_DRAFT_RATIO_TYPICAL = 0.1
PAIR_DRAFT_RATIO_WARN = 0.2
PAIR_DRAFT_RATIO_MAX = 0.5

# --- roofline on CPUs -----------------------------------------------------------------------
# Share of a CPU's vector-FMA peak (catalog or detected estimate) that LLM matmuls reach when
# verifying a few tokens. Measured on this project's 2-core Xeon with llama.cpp (llama-cpp-python
# 0.3.36, one thread, docs/llamacpp.md): SmolLM2-135M Q4_1 verified 7 extra tokens in 91.3 ms =
# 20.7 GFLOP/s, Gemma-3-270M Q4_K_M 36.9 GFLOP/s, against 89.6 GFLOP/s of AVX2 FMA at 2.8 GHz
# (0.23 and 0.41). The lower figure is used: optimism about verification is the costly error.
CPU_MATMUL_EFFICIENCY = 0.25

# --- a multi-GPU box described by --gpus on a one-GPU entry ---------------------------------
# The ranks' link when the entry catalogues none: PCIe 4.0 x16, 32 GB/s each way (PCI-SIG 16 GT/s x16),
# a small all-reduce at least the NVLink 10.1 us (sgl-project/sglang PR #2904): the figures the
# catalogued PCIe pairs carry (catalogs/machines/2x-rtx-4090.json). Assumed, not measured: a box with
# NVLink or NVSwitch all-reduces faster (catalog an Nx entry with its interconnect to say so).
ASSUMED_LINK_BYTES_PER_S = 32_000_000_000
ASSUMED_LINK_LATENCY_S = 1.01e-05
ASSUMED_LINK_SOURCE = ("assumed PCIe 4.0 x16: 32 GB/s each way (PCI-SIG 16 GT/s x16), small all-reduce latency at "
                       "least 10.1 us (sgl-project/sglang PR #2904); the entry catalogues no link between its GPUs")
