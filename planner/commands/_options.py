"""The typer option aliases more than one command uses, each defined once (`Annotated`, like the `hf` CLI).

An option only one command has stays beside that command.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .. import engines
from ..core.constants import MAX_BATCH

# the engine choices come from the registry (engines/__init__.py): a registered engine is listed with no edit here
_ENGINES = " | ".join(engines.names())

# --- models --------------------------------------------------------------------------------------
ModelArg = Annotated[str, typer.Argument(help="Model: local dir, config.json, .gguf, HF id or catalog name.")]
DraftOpt = Annotated[str | None, typer.Option("--draft", "-d", help="Draft model (same forms as the target).")]
MethodOpt = Annotated[str | None, typer.Option(
    "--method", help="How drafts are made: draft_model (--draft), eagle3 (--draft HEAD: a catalogued head or a "
                     "directory; default the target's catalogued head), mtp, ngram, early_exit.")]
RevisionOpt = Annotated[str | None, typer.Option("--revision", help="Hub revision: branch, tag or commit.")]

# --- memory settings -----------------------------------------------------------------------------
ContextOpt = Annotated[str, typer.Option("--context", "-c", help="Tokens per sequence (e.g. 8192 or 8k).")]
# Upper bounds on every number: an absurd value (10^12 sequences, a 5000-digit seed) is refused (exit 2)
# rather than answered; the bounds are far past any real deployment.
BatchOpt = Annotated[int, typer.Option("--batch", "-b", help="Concurrent sequences.", min=1, max=MAX_BATCH)]
# llama.cpp spellings beside the planner's: --parallel N is --batch N (N sequences, one slot each), -cd is
# the draft's own context (llama-server --ctx-size-draft; default: the target's context per sequence).
ParallelBatchOpt = Annotated[int, typer.Option("--batch", "-b", "--parallel", "-np",
                                               help="Concurrent sequences (llama.cpp --parallel slots).", min=1,
                                               max=MAX_BATCH)]
DraftContextOpt = Annotated[str | None, typer.Option(
    "--draft-context", "-cd", help="The draft's own context per sequence (llama.cpp -cd; default: --context).")]
EngineAutoOpt = Annotated[str, typer.Option(
    "--engine", "-e", help="auto (llama.cpp for a .gguf; else by machine: GPU vllm, Apple and CPU llama.cpp; "
                           f"no machine: transformers) | {_ENGINES}.")]
KvDtypeOpt = Annotated[str | None, typer.Option("--kv-dtype",
                                                help="KV cache type: auto, f16, bf16, fp8, q8_0, q4_0, ...")]
WeightsDtypeOpt = Annotated[str | None, typer.Option(
    "--weights-dtype", help="Re-size weights as bf16, fp16, fp8, int8, int4 (GPTQ/AWQ), nf4, mxfp4, q8_0, q4_k...")]
GroupSizeOpt = Annotated[int, typer.Option("--group-size", help="Quantisation group size (int4, fp8 blocks).",
                                           min=1, max=1 << 20)]
InventoryOpt = Annotated[str, typer.Option(
    "--inventory", help="Tensors of a config without weights: analytic (formulas only), auto (transformers on "
                        "the meta device when the formulas are low confidence), meta (always try it).")]
OverheadOpt = Annotated[str | None, typer.Option("--overhead", help="Runtime overhead per device, e.g. 1GiB.")]
MarginOpt = Annotated[str | None, typer.Option("--margin", help="Safety margin left free on each device, e.g. "
                                                                "512MiB or 0 (default: 1 GiB, what llama.cpp's "
                                                                "own fit leaves, less the engine's own margin).")]

# --- machine and layout --------------------------------------------------------------------------
MachineOpt = Annotated[str | None, typer.Option(
    "--machine", "-m", help="auto (detect this host), a catalog name (planner machines list) or a JSON file.")]
RemeasureOpt = Annotated[bool, typer.Option(
    "--remeasure", help="--machine auto: measure this host now instead of reading its saved machine profile.")]
GpuMemoryOpt = Annotated[str | None, typer.Option("--gpu-memory", help="Memory per device, e.g. 24GiB or 80GB.")]
GpusOpt = Annotated[int | None, typer.Option("--gpus", help="Number of devices (GPUs).", min=1, max=1024)]
UtilizationOpt = Annotated[float | None, typer.Option(
    "--utilization", help="Share of each device the engine may use (default: vLLM 0.92, SGLang 0.9, else 1.0; Apple: the Metal "
                          "working set; CPU: RAM after OS headroom).")]
TpOpt = Annotated[int | None, typer.Option("--tp", help="Tensor-parallel size.", min=1, max=1024)]
PpOpt = Annotated[int | None, typer.Option("--pp", help="Pipeline-parallel size (layer split).", min=1, max=1024)]

# --- speculation (recommend, report, probe) ------------------------------------------------------
RecEngineOpt = Annotated[str, typer.Option(
    "--engine", "-e", help=f"{_ENGINES} | auto (a .gguf target: llama.cpp; "
                           "else GPU: vllm; Apple, CPU: llama.cpp).")]
EngineVersionOpt = Annotated[str | None, typer.Option(
    "--engine-version", help="The engine build the costs are for: a llama.cpp build (b8000, llama-server --version); "
                             "default: the range the fixed costs were measured on, named in the plan.")]
ProfileOpt = Annotated[str | None, typer.Option("--profile", help="Measured costs from 'planner probe --out'.")]
AcceptanceOpt = Annotated[str | None, typer.Option(
    "--acceptance", help="Acceptance: 0.7 (alpha), 0.6-0.8, or greedy_match=0.8, accepted_per_drafted=0.72@5, "
                         "tau=2.8@4.")]
MaxKOpt = Annotated[int, typer.Option("--max-k", help="Largest K (tokens drafted per round) considered.",
                                      min=1, max=32)]
# recommend: unset means its default (8; 16 under llama.cpp's confidence stop), an explicit value is honoured
RecMaxKOpt = Annotated[int | None, typer.Option(
    "--max-k", help="Largest K (tokens drafted per round) considered (default 8; 16 under llama.cpp's confidence "
                    "stop, llama-server's own n_max).", min=1, max=32)]
TemperatureOpt = Annotated[float, typer.Option("--temperature", help="Sampling temperature (0 = greedy).", min=0,
                                               max=100)]
WorkloadOpt = Annotated[str, typer.Option(
    "--workload", help="chat | code | reasoning: what the deployment generates (n-gram lookup accepts far more when "
                       "the output copies the prompt, as code edits do).")]
MethodsOpt = Annotated[str | None, typer.Option(
    "--method", help="Only these drafting methods, comma-separated: draft_model, eagle3, mtp, ngram, early_exit "
                     "(default: all that apply).")]

# --- policies (check, report) --------------------------------------------------------------------
ConfigOpt = Annotated[str | None, typer.Option(
    "--config", help="Policy file: planner.toml, or a pyproject.toml with a tool.planner table (default: ./planner.toml, "
                     "then ./pyproject.toml).")]
DeploymentOpt = Annotated[list[str] | None, typer.Option("--deployment", help="Only this deployment (repeatable).")]

# --- output --------------------------------------------------------------------------------------
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (stable schema, bytes as integers).")]
WideOpt = Annotated[bool, typer.Option("--wide", help="Print every line whole: no wrapped or trimmed columns.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "--explain", "-v", help="Also print where each figure came from "
                                                                  "(citations, full URLs).")]

# --- scale ---------------------------------------------------------------------------------------
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=0, max=256,
                                      help="Worker processes for independent pieces (machines of a fleet report, "
                                           "deployments of a check); 0: one per CPU. The rows are the serial run's; "
                                           "progress goes to stderr.")]
