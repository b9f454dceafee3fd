"""Ready-to-paste launch commands for the chosen plan, per engine (rendering only).

Flags and their sources (ENGINES.md): llama.cpp common/arg.cpp (`-md`, `-ngld`, `-cd`,
`-ctkd/-ctvd`, `--draft-max/--draft-min/--draft-p-min`, renamed in 2026 builds to
`--spec-draft-n-max/--spec-draft-n-min/--spec-draft-p-min`); vLLM
vllm/config/speculative.py (`--speculative-config` JSON, method "draft_model");
SGLang server_args.py (STANDALONE); transformers generation/candidate_generator.py
(`num_assistant_tokens` is read from the ASSISTANT's generation_config); mlx-lm
(`--draft-model`, `--num-draft-tokens`).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass


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
    draft_context: int | None = None  # the draft's own context per sequence (llama.cpp -cd); None: `context`


def _q(s: str) -> str:
    return shlex.quote(s)


def _llamacpp_model_flag(ref: str, draft: bool = False) -> str:
    if ref.endswith(".gguf") or "/" not in ref or ref.startswith((".", "/", "~")):
        return f"{'-md' if draft else '-m'} {_q(ref)}"
    return f"{'-hfd' if draft else '-hf'} {_q(ref)}"  # Hub repo holding GGUF files


def llamacpp(x: LaunchInput) -> dict[str, str]:
    """llama-server commands under the pre-2026 and the 2026 flag spellings.

    `-c` is the whole KV pool, split over `--parallel` slots: batch b of `context` tokens each
    needs `-c context*b -np b`. `--kv-unified` (-kvu) keeps one pool that every slot draws from,
    the layout planner.fits.memory sizes (SWA `pad(window*b + n_ubatch, 256)`); llama-server picks it
    itself only when -np is left on auto, which it is not with a draft (PR #17017). `-cd` is the
    draft's context per slot (0 = the target's slot context, tools/server/server-context.cpp);
    2026 builds size the draft from the target's context instead (common/speculative.cpp).
    """
    b = max(x.batch, 1)
    base = f"llama-server {_llamacpp_model_flag(x.target)} -c {x.context * b} -ngl 99"
    if b > 1:
        base += f" -np {b} --kv-unified"
    if x.kv_dtype and x.kv_dtype not in ("auto", "f16"):
        base += f" -ctk {x.kv_dtype} -ctv {x.kv_dtype}"
    if not x.draft:
        return {"command": base}
    draft = f" {_llamacpp_model_flag(x.draft, True)} -ngld 99 -cd {x.draft_context or x.context}"
    if x.kv_dtype and x.kv_dtype not in ("auto", "f16"):
        draft += f" -ctkd {x.kv_dtype} -ctvd {x.kv_dtype}"
    return {"command": base + draft + f" --draft-max {x.k} --draft-min 0 --draft-p-min 0.0",
            "command_2026": base + draft + f" --spec-draft-n-max {x.k} --spec-draft-n-min 0 "
                                           f"--spec-draft-p-min 0.0"}


def vllm(x: LaunchInput) -> dict[str, str]:
    """`vllm serve` with a draft_model speculative config (draft TP must be 1 or the target's)."""
    cmd = f"vllm serve {_q(x.target)} --max-model-len {x.context}"
    if x.tp > 1:
        cmd += f" --tensor-parallel-size {x.tp}"
    if x.gpu_memory_utilization:
        cmd += f" --gpu-memory-utilization {x.gpu_memory_utilization}"
    if x.kv_dtype and x.kv_dtype in ("fp8", "fp8_e4m3", "fp8_e5m2"):
        cmd += f" --kv-cache-dtype {x.kv_dtype}"
    out = {}
    if x.draft:
        spec = {"method": "draft_model", "model": x.draft, "num_speculative_tokens": x.k,
                "draft_tensor_parallel_size": 1 if x.tp == 1 else x.tp}
        if x.heterogeneous:
            spec["use_heterogeneous_vocab"] = True
        out["speculative_config"] = json.dumps(spec)
        cmd += f" --speculative-config {_q(out['speculative_config'])}"
    out["command"] = cmd
    return out


def sglang(x: LaunchInput) -> dict[str, str]:
    cmd = f"python -m sglang.launch_server --model-path {_q(x.target)} --context-length {x.context}"
    if x.tp > 1:
        cmd += f" --tp {x.tp}"
    if x.draft:
        cmd += (f" --speculative-algorithm STANDALONE --speculative-draft-model-path {_q(x.draft)}"
                f" --speculative-num-steps {x.k} --speculative-eagle-topk 1"
                f" --speculative-num-draft-tokens {x.k + 1}")
    return {"command": cmd}


def transformers(x: LaunchInput) -> dict[str, str]:
    """A generate() snippet; K goes on the assistant's generation_config, which is what is read."""
    lines = ["from transformers import AutoModelForCausalLM, AutoTokenizer",
             f"tok = AutoTokenizer.from_pretrained({x.target!r})",
             f"model = AutoModelForCausalLM.from_pretrained({x.target!r}, dtype='auto', device_map='auto')"]
    kwargs = "**inputs, max_new_tokens=256"
    if x.temperature > 0:
        kwargs += f", do_sample=True, temperature={x.temperature}"
    if x.draft:
        lines += [f"assistant = AutoModelForCausalLM.from_pretrained({x.draft!r}, dtype='auto', device_map='auto')",
                  f"assistant.generation_config.num_assistant_tokens = {x.k}",
                  "assistant.generation_config.num_assistant_tokens_schedule = 'constant'"]
        kwargs += ", assistant_model=assistant"
        if x.heterogeneous:
            lines.append(f"assistant_tok = AutoTokenizer.from_pretrained({x.draft!r})")
            kwargs += ", tokenizer=tok, assistant_tokenizer=assistant_tok"
    lines += ["inputs = tok('Hello', return_tensors='pt').to(model.device)",
              f"out = model.generate({kwargs})"]
    return {"python": "\n".join(lines),
            "note": "num_assistant_tokens is read from the assistant's generation_config; passing it to "
                    "generate() may be ignored. Batch size 1 only."}


def mlx(x: LaunchInput) -> dict[str, str]:
    cmd = f"mlx_lm.server --model {_q(x.target)}"
    if x.draft:
        cmd += f" --draft-model {_q(x.draft)} --num-draft-tokens {x.k}"
    return {"command": cmd, "note": "a draft model disables batching in mlx_lm.server"}


RENDERERS = {"llama.cpp": llamacpp, "vllm": vllm, "sglang": sglang, "transformers": transformers, "mlx": mlx}


def launch(engine: str, x: LaunchInput) -> dict[str, str]:
    """Launch command(s) for `engine` (canonical name from planner.fits.memory.canonical_engine)."""
    return RENDERERS[engine](x)
