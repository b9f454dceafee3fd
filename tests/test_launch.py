"""Every engine's launch command, checked flag by flag against the flags that engine really has.

Why: a launch command is pasted into a shell; a flag the engine renamed or removed makes it fail
there, not here. Each flag list below was recorded from the engine's own source (file:line beside
each flag; docs/engines.md says which versions). Where vllm or sglang is importable, their own
argument parsers judge the command instead of the recorded list.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import shlex

import pytest

from planner import engines
from planner.engines import LaunchInput
from planner.engines.llamacpp import NAME as LLAMACPP
from planner.engines.mlx import NAME as MLX
from planner.engines.sglang import NAME as SGLANG
from planner.engines.transformers import NAME as TRANSFORMERS
from planner.engines.vllm import NAME as VLLM

# --- the flags, as each engine's source spells them ----------------------------------------------

# llama.cpp common/arg.cpp (llama-cpp-python 0.3.36 sdist vendor/llama.cpp = upstream 0017d6fb).
# flag -> (takes a value, where it is defined)
LLAMACPP_FLAGS = {
    "-m": (True, "common/arg.cpp:3035"),
    "-hf": (True, "common/arg.cpp:3060"),  # <user>/<model>[:quant], a repo holding .gguf files
    "-c": (True, "common/arg.cpp:1639"),
    "-ngl": (True, "common/arg.cpp:2789"),
    "--n-cpu-moe": (True, "common/arg.cpp:2767"),
    "-np": (True, "common/arg.cpp:2544"),
    "--kv-unified": (False, "common/arg.cpp:1724"),
    "-ctk": (True, "common/arg.cpp:2437"),
    "-ctv": (True, "common/arg.cpp:2450"),
    "-md": (True, "common/arg.cpp:4241"),
    "-hfd": (True, "common/arg.cpp:3975"),
    "-ngld": (True, "common/arg.cpp:4222"),
    "-ctkd": (True, "common/arg.cpp:4090"),
    "-ctvd": (True, "common/arg.cpp:4103"),
    "--spec-type": (True, "common/arg.cpp:4249"),
    "--spec-draft-n-max": (True, "common/arg.cpp:4140"),
    "--spec-draft-n-min": (True, "common/arg.cpp:4150"),
    "--spec-draft-p-min": (True, "common/arg.cpp:4197"),
    "--spec-ngram-simple-size-n": (True, "common/arg.cpp:4290"),  # n-gram looked up (1..1024)
    "--spec-ngram-simple-size-m": (True, "common/arg.cpp:4300"),  # tokens drafted after a match
}
# Removed: the parser rejects them ("the argument has been removed" or "invalid argument").
LLAMACPP_REMOVED = {
    "--draft": "common/arg.cpp:4387", "--draft-n": "common/arg.cpp:4387", "--draft-max": "common/arg.cpp:4387",
    "--draft-min": "common/arg.cpp:4394", "--draft-n-min": "common/arg.cpp:4394",
    "-cd": "absent from common/arg.cpp", "--ctx-size-draft": "absent from common/arg.cpp",
}
LLAMACPP_SPEC_TYPES = ("none", "draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark",
                       "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")  # speculative.cpp:34-44
LLAMACPP_KV_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")  # arg.cpp:304-314

# vLLM 0.33.0 vllm/engine/arg_utils.py; `vllm serve [model_tag]` (entrypoints/cli/serve.py:51, :169)
VLLM_FLAGS = {
    "--max-model-len": (True, "vllm/engine/arg_utils.py:991"),
    "--tensor-parallel-size": (True, "vllm/engine/arg_utils.py:1209"),
    "--pipeline-parallel-size": (True, "vllm/engine/arg_utils.py:1171"),
    "--quantization": (True, "vllm/engine/arg_utils.py:992"),
    "--gpu-memory-utilization": (True, "vllm/engine/arg_utils.py:1389"),
    "--kv-cache-dtype": (True, "vllm/engine/arg_utils.py:1397"),
    "--speculative-config": (True, "vllm/engine/arg_utils.py:1866"),
}
VLLM_KV_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")  # part of config/cache.py:44-60
VLLM_SPEC_KEYS = {  # SpeculativeConfig fields, vllm/config/speculative.py
    "method": "vllm/config/speculative.py:419", "model": "vllm/config/speculative.py:416",
    "num_speculative_tokens": "vllm/config/speculative.py:413",
    "draft_tensor_parallel_size": "vllm/config/speculative.py:427",
    "use_heterogeneous_vocab": "vllm/config/speculative.py:496",
    "prompt_lookup_max": "vllm/config/speculative.py:503", "prompt_lookup_min": "vllm/config/speculative.py:506",
}
# SpeculativeMethod values the planner prints (vllm/config/speculative.py:71-83; MTP names :38-69 alias "mtp")
VLLM_METHODS = ("draft_model", "eagle3", "mtp", "ngram")

# SGLang 0.5.23: `sglang serve` (cli/main.py:27-51); flags are field names with dashes (arg_utils.py:288-290)
SGLANG_FLAGS = {
    "--model-path": (True, "srt/arg_groups/fields/model.py:51"),
    "--context-length": (True, "srt/arg_groups/fields/model.py:110"),
    "--tp-size": (True, "srt/arg_groups/fields/parallel.py:45"),
    "--pp-size": (True, "srt/arg_groups/fields/parallel.py:59"),
    "--quantization": (True, "srt/arg_groups/fields/model.py:177"),
    "--mem-fraction-static": (True, "srt/arg_groups/fields/schedule.py:27"),
    "--kv-cache-dtype": (True, "srt/arg_groups/fields/model.py:197"),
    "--speculative-algorithm": (True, "srt/arg_groups/fields/spec.py:31"),
    "--speculative-draft-model-path": (True, "srt/arg_groups/fields/spec.py:36"),
    "--speculative-num-steps": (True, "srt/arg_groups/fields/spec.py:58"),
    "--speculative-eagle-topk": (True, "srt/arg_groups/fields/spec.py:62"),
    "--speculative-num-draft-tokens": (True, "srt/arg_groups/fields/spec.py:66"),
    "--speculative-ngram-max-bfs-breadth": (True, "srt/arg_groups/fields/spec.py:256"),
}
# --speculative-algorithm builtins (srt/arg_groups/fields/spec.py:31-34; NEXTN: spec_registry.py:183)
SGLANG_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO")
SGLANG_KV_DTYPES = ("auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4",
                    "fp4_mx_block16")  # srt/arg_groups/fields/model.py:209-219

# mlx-lm 0.32.2 mlx_lm/server.py main()
MLX_FLAGS = {
    "--model": (True, "mlx_lm/server.py:1925"),
    "--draft-model": (True, "mlx_lm/server.py:1953"),
    "--num-draft-tokens": (True, "mlx_lm/server.py:1959"),
    "--kv-bits": (True, "mlx_lm/server.py:2054"),
}

# --- the plans rendered ----------------------------------------------------------------------------

ST_TARGET, ST_DRAFT = "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"  # safetensors repos
CASES = {
    "plain": LaunchInput(target=ST_TARGET, draft=None, k=1, context=4096),
    "plain-tp4-batch8-kv": LaunchInput(target=ST_TARGET, draft=None, k=1, context=8192, tp=4, batch=8,
                                       kv_dtype="fp8", gpu_memory_utilization=0.85),
    "draft": LaunchInput(target=ST_TARGET, draft=ST_DRAFT, k=4, context=4096),
    "draft-tp2-batch4-q8": LaunchInput(target=ST_TARGET, draft=ST_DRAFT, k=5, context=4096, tp=2, batch=4,
                                       kv_dtype="q8_0", draft_context=2048, weights_quant="q4_k"),
    "draft-fp8": LaunchInput(target=ST_TARGET, draft=ST_DRAFT, k=3, context=16384, kv_dtype="fp8", tp=8),
    "draft-heterogeneous": LaunchInput(target=ST_TARGET, draft="meta-llama/Llama-3.2-1B-Instruct", k=3,
                                       context=4096, heterogeneous=True, temperature=0.7),
    "draft-gguf-files": LaunchInput(target="/models/t Q4.gguf", draft="./d.gguf", k=6, context=2048, batch=2,
                                    kv_dtype="q4_0"),
    "draft-gguf-repos": LaunchInput(target="bartowski/Qwen2.5-7B-Instruct-GGUF",
                                    draft="bartowski/Qwen2.5-0.5B-Instruct-GGUF", k=2, context=4096,
                                    weights_quant="q4_k", draft_weights_quant="Q8_0"),
    "draft-nf4-weights": LaunchInput(target=ST_TARGET, draft=ST_DRAFT, k=2, context=4096, weights_quant="nf4"),
    "offload-pp-fp8": LaunchInput(target=ST_TARGET, draft=ST_DRAFT, k=3, context=4096, pp=2, gpu_layers=20,
                                  cpu_moe_layers=4, weights_quant="fp8"),
    "draft-catalog-ids": LaunchInput(target="qwen2.5-7b-instruct", draft="qwen2.5-0.5b-instruct", k=3,
                                     context=4096),
}
ENGINES = (LLAMACPP, VLLM, SGLANG, TRANSFORMERS, MLX)


def render(engine: str, case: str) -> dict[str, str]:
    return engines.launch(engine, CASES[case])


def parse(argv: list[str], flags: dict[str, tuple[bool, str]]) -> dict[str, str | None]:
    """flag -> value of a command's options; fails on a flag not in `flags` or a missing value."""
    seen: dict[str, str | None] = {}
    i = 0
    while i < len(argv):
        flag = argv[i]
        assert flag in flags, f"{flag!r} is not a flag of this engine (recorded: {sorted(flags)})"
        assert flag not in seen, f"{flag} given twice"
        takes_value = flags[flag][0]
        if takes_value:
            assert i + 1 < len(argv) and not argv[i + 1].startswith("--"), f"{flag} has no value"
        seen[flag] = argv[i + 1] if takes_value else None
        i += 2 if takes_value else 1
    return seen


def _own_parser(engine: str) -> argparse.ArgumentParser | None:
    """vLLM's or SGLang's own argument parser when the package is installed, else None."""
    if engine == VLLM and importlib.util.find_spec("vllm") is not None:
        from vllm.engine.arg_utils import EngineArgs
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        parser = EngineArgs.add_cli_args(FlexibleArgumentParser())
    elif engine == SGLANG and importlib.util.find_spec("sglang") is not None:
        from sglang.srt.server_args import ServerArgs

        parser = argparse.ArgumentParser()
        ServerArgs.add_cli_args(parser)  # srt/server_args.py:351
    else:
        return None
    parser.allow_abbrev = False  # a prefix of a real flag is not the flag
    return parser


def _options(engine: str, argv: list[str], flags: dict[str, tuple[bool, str]], *,
             model: str | None = None) -> dict[str, str | None]:
    """flag -> value: judged by the engine's own parser when it is installed (an unknown flag fails),
    else by the recorded list. `model` is vLLM's positional model tag (the parser's --model)."""
    parser = _own_parser(engine)
    if parser is None:
        return parse(argv, flags)
    _, unknown = parser.parse_known_args(["--model", model, *argv] if model else argv)
    assert unknown == [], f"{engine} does not know {unknown}"
    return {a: b for a, b in zip(argv, [*argv[1:], None], strict=True) if a.startswith("--")}


# --- llama.cpp -------------------------------------------------------------------------------------


def _hf_repo_is_gguf(value: str, ref: str) -> bool:
    """-hf/-hfd names a GGUF repo: its name ends in -GGUF, or the caller gave the quant (`repo:QUANT`)."""
    repo = value.partition(":")[0]
    return repo.upper().endswith("-GGUF") or ":" in ref


@pytest.mark.parametrize("case", sorted(CASES))
def test_llamacpp_flags_exist_and_draft_is_enabled(case):
    x, out = CASES[case], render(LLAMACPP, case)
    assert set(out) <= {"convert", "command", "note"}  # one command (after its convert steps): no second spelling
    argv = shlex.split(out["command"])
    assert argv[0] == "llama-server"
    assert not set(argv) & set(LLAMACPP_REMOVED), f"removed flag in {out['command']}"
    opts = parse(argv[1:], LLAMACPP_FLAGS)
    # runnable as printed: every file it loads is one the user gave or one the convert steps write
    written = [_written(step) for step in out.get("convert", "").split(" && ") if step]
    for flag in ("-m", "-md"):
        if flag in opts and opts[flag] not in (x.target, x.draft):
            assert opts[flag] in written, (flag, opts[flag], out.get("convert"))
    b = max(x.batch, 1)
    assert opts["-c"] == str(x.context * b) and opts["-ngl"] == str(x.gpu_layers or 99)
    assert opts.get("--n-cpu-moe") == (str(x.cpu_moe_layers) if x.cpu_moe_layers else None)
    assert ("-np" in opts) == (b > 1) and ("--kv-unified" in opts) == (b > 1)
    if b > 1:
        assert opts["-np"] == str(b)
    for flag in ("-ctk", "-ctv", "-ctkd", "-ctvd"):
        assert opts.get(flag, "f16") in LLAMACPP_KV_TYPES
    assert ("-m" in opts) != ("-hf" in opts)
    if "-hf" in opts:
        assert _hf_repo_is_gguf(opts["-hf"], x.target), f"-hf on a repo that holds no GGUF: {opts['-hf']}"
    if "-m" in opts:
        assert opts["-m"].endswith(".gguf")
    if not x.draft:
        assert not {"-md", "-hfd", "--spec-type", "-ngld"} & set(opts)
        return
    assert opts["--spec-type"] == "draft-simple" and opts["--spec-type"] in LLAMACPP_SPEC_TYPES
    assert opts["--spec-draft-n-max"] == str(x.k) and opts["--spec-draft-n-min"] == "0"
    assert float(opts["--spec-draft-p-min"]) == 0.0 and opts["-ngld"] == "99"
    assert ("-md" in opts) != ("-hfd" in opts)
    if "-hfd" in opts:
        assert _hf_repo_is_gguf(opts["-hfd"], x.draft), f"-hfd on a repo that holds no GGUF: {opts['-hfd']}"
    if "-md" in opts:
        assert opts["-md"].endswith(".gguf")


def _written(step: str) -> str:
    """The file one convert step writes: convert_hf_to_gguf.py's --outfile, llama-quantize's second path."""
    argv = shlex.split(step)
    if argv[0] == "llama-quantize":
        return argv[2]
    assert argv[:2] == ["python", "convert_hf_to_gguf.py"], step
    return argv[argv.index("--outfile") + 1]


def test_llamacpp_safetensors_repos_get_convert_steps_not_hf():
    out = render(LLAMACPP, "draft-tp2-batch4-q8")  # weights sized as q4_k
    opts = parse(shlex.split(out["command"])[1:], LLAMACPP_FLAGS)
    assert (opts["-m"], opts["-md"]) == ("Qwen2.5-7B-Instruct-Q4_K_M.gguf", "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf")
    # Q4_K_M is no --outtype of convert_hf_to_gguf.py: F16 first, then llama-quantize to the planned type
    steps = [shlex.split(c) for c in out["convert"].split(" && ")]
    assert steps[0] == ["python", "convert_hf_to_gguf.py", "--remote", "Qwen/Qwen2.5-7B-Instruct", "--outtype",
                        "f16", "--outfile", "Qwen2.5-7B-Instruct-F16.gguf"]
    assert steps[1] == ["llama-quantize", "Qwen2.5-7B-Instruct-F16.gguf", "Qwen2.5-7B-Instruct-Q4_K_M.gguf", "Q4_K_M"]
    assert [_written(" ".join(st)) for st in steps][1::2] == [opts["-m"], opts["-md"]]
    assert out["note"].count("convert or download a GGUF: llama.cpp does not run safetensors repos") == 1
    assert "size the draft from the target's context" in out["note"]  # draft_context 2048 != 4096
    repos = parse(shlex.split(render(LLAMACPP, "draft-gguf-repos")["command"])[1:], LLAMACPP_FLAGS)
    assert repos["-hf"] == "bartowski/Qwen2.5-7B-Instruct-GGUF:Q4_K_M"  # the draft has its own quant
    assert repos["-hfd"] == "bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q8_0"
    files = parse(shlex.split(render(LLAMACPP, "draft-gguf-files")["command"])[1:], LLAMACPP_FLAGS)
    assert (files["-m"], files["-md"]) == ("/models/t Q4.gguf", "./d.gguf")  # shlex-quoted, read back whole


# --- vLLM, SGLang, mlx-lm ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_vllm_flags_and_speculative_config(case):
    x, out = CASES[case], render(VLLM, case)
    argv = shlex.split(out["command"])
    assert argv[:2] == ["vllm", "serve"] and argv[2] == x.target
    opts = _options(VLLM, argv[3:], VLLM_FLAGS, model=argv[2])
    assert opts["--max-model-len"] == str(x.context)
    assert ("--tensor-parallel-size" in opts) == (x.tp > 1)
    assert opts.get("--kv-cache-dtype", "auto") in VLLM_KV_DTYPES
    if not x.draft:
        assert "--speculative-config" not in opts
        return
    spec = json.loads(opts["--speculative-config"])
    assert set(spec) <= set(VLLM_SPEC_KEYS)
    assert spec["method"] == "draft_model" and spec["model"] == x.draft and spec["num_speculative_tokens"] == x.k
    assert spec["draft_tensor_parallel_size"] in (1, x.tp)  # speculative.py:1858-1868
    assert spec.get("use_heterogeneous_vocab", False) == x.heterogeneous


@pytest.mark.parametrize("case", sorted(CASES))
def test_sglang_flags(case):
    x, out = CASES[case], render(SGLANG, case)
    argv = shlex.split(out["command"])
    assert argv[:2] == ["sglang", "serve"]
    opts = _options(SGLANG, argv[2:], SGLANG_FLAGS)
    assert opts["--model-path"] == x.target and opts["--context-length"] == str(x.context)
    assert opts.get("--tp-size", "1") == str(x.tp)
    assert opts.get("--kv-cache-dtype", "auto") in SGLANG_KV_DTYPES
    if x.kv_dtype == "fp8":
        assert opts["--kv-cache-dtype"] == "fp8_e4m3"  # SGLang has no plain "fp8" choice
    if not x.draft:
        assert not any(f.startswith("--speculative") for f in opts)
        return
    assert opts["--speculative-algorithm"] == "STANDALONE"  # srt/speculative/spec_info.py:45
    assert opts["--speculative-draft-model-path"] == x.draft
    assert opts["--speculative-num-steps"] == str(x.k) and opts["--speculative-eagle-topk"] == "1"
    assert opts["--speculative-num-draft-tokens"] == str(x.k + 1)


@pytest.mark.parametrize("case", sorted(CASES))
def test_mlx_flags(case):
    x, out = CASES[case], render(MLX, case)
    argv = shlex.split(out["command"])
    assert argv[0] == "mlx_lm.server"
    opts = parse(argv[1:], MLX_FLAGS)
    assert opts["--model"] == x.target
    assert opts.get("--kv-bits", "8") in ("4", "8")
    if x.draft:
        assert opts["--draft-model"] == x.draft and opts["--num-draft-tokens"] == str(x.k)
        assert "disables batching" in out["note"]
    else:
        assert "--draft-model" not in opts


# --- transformers --------------------------------------------------------------------------------


def _assignments(tree: ast.Module) -> dict[str, object]:
    """`a.b.c = literal` statements of a snippet, as {'a.b.c': value}."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for t in node.targets:
                found[ast.unparse(t)] = node.value.value
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_transformers_snippet_compiles_with_constant_k(case):
    x, out = CASES[case], render(TRANSFORMERS, case)
    compile(out["python"], f"<launch {case}>", "exec")  # valid Python, as pasted
    sets = _assignments(ast.parse(out["python"]))
    gen = "assistant.generation_config"
    if not x.draft:
        assert not any(k.startswith(gen) for k in sets)
        return
    # K is read from the assistant's generation_config (candidate_generator.py:115-119); a confidence
    # threshold > 0 (default 0.4, configuration_utils.py:640) would end rounds early (utils.py:1692-1699).
    assert sets[f"{gen}.num_assistant_tokens"] == x.k
    assert sets[f"{gen}.num_assistant_tokens_schedule"] == "constant"
    assert sets[f"{gen}.assistant_confidence_threshold"] == 0
    assert ("assistant_tokenizer=" in out["python"]) == x.heterogeneous


# --- every engine --------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_no_engine_prints_a_removed_llamacpp_flag_or_hf_on_safetensors(engine):
    for case in CASES:
        out = render(engine, case)
        text = out.get("command") or out["python"]
        words = set(shlex.split(text)) if engine != TRANSFORMERS else set(text.split())
        assert not words & set(LLAMACPP_REMOVED), f"{engine} {case}: removed llama.cpp flag"
        assert f"-hf {ST_TARGET}" not in text and f"-hfd {ST_DRAFT}" not in text


# --- drafting methods other than a draft model (eagle3, mtp, ngram, early_exit) ----------------------

HEAD = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
METHOD_CASES = {
    "eagle3": LaunchInput(target="meta-llama/Llama-3.1-8B-Instruct", draft=HEAD, k=3, context=4096,
                          method="eagle3"),
    "mtp": LaunchInput(target="deepseek-ai/DeepSeek-V3", draft=None, k=2, context=8192, tp=8, method="mtp"),
    "ngram": LaunchInput(target=ST_TARGET, draft=None, k=5, context=4096, method="ngram", ngram_max=4),
    "early_exit": LaunchInput(target="facebook/layerskip-llama3.2-1B", draft=None, k=4, context=2048,
                              method="early_exit", exit_layer=4),
}
RUN = [(e, m) for e in ENGINES for m in METHOD_CASES if m in engines.get(e).methods]


def test_each_engine_says_which_methods_it_runs():
    runs = {e: sorted(m for m in METHOD_CASES if m in engines.get(e).methods) for e in ENGINES}
    assert runs == {LLAMACPP: ["eagle3", "mtp", "ngram"], VLLM: ["eagle3", "mtp", "ngram"],
                    SGLANG: ["eagle3", "mtp", "ngram"], TRANSFORMERS: ["early_exit", "mtp", "ngram"], MLX: []}
    for e in ENGINES:  # a refused method names where the engine's source says so
        for m in set(METHOD_CASES) - set(runs[e]):
            assert engines.get(e).method_refusals[m]


@pytest.mark.parametrize(("engine", "method"), RUN)
def test_method_commands_use_real_flags(engine, method):
    x = METHOD_CASES[method]
    out = engines.launch(engine, x)
    if engine == TRANSFORMERS:
        code = out["python"]
        compile(code, f"<launch {method}>", "exec")
        call = next(n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call) and ast.unparse(n.func)
                    == "model.generate")
        kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        if method == "ngram":  # generation/configuration_utils.py:462-463
            assert kw["prompt_lookup_num_tokens"] == x.k and kw["max_matching_ngram_size"] == x.ngram_max
        elif method == "mtp":  # configuration_utils.py:403
            assert kw["use_mtp"] is True
        else:  # configuration_utils.py:464; K on the model's own generation_config
            assert kw["assistant_early_exit"] == x.exit_layer
            assert _assignments(ast.parse(code))["model.generation_config.num_assistant_tokens"] == x.k
        return
    argv = shlex.split(out["command"])
    if engine == LLAMACPP:
        opts = parse(argv[1:], LLAMACPP_FLAGS)
        assert opts["--spec-type"] in LLAMACPP_SPEC_TYPES
        want = {"eagle3": "draft-eagle3", "mtp": "draft-mtp", "ngram": "ngram-simple"}[method]
        assert opts["--spec-type"] == want and ("-md" in opts) == (method == "eagle3")
        if method == "ngram":
            assert opts["--spec-ngram-simple-size-m"] == str(x.k)
        else:
            assert opts["--spec-draft-n-max"] == str(x.k)
    elif engine == VLLM:
        opts = _options(VLLM, argv[3:], VLLM_FLAGS, model=argv[2])
        spec = json.loads(opts["--speculative-config"])
        assert set(spec) <= set(VLLM_SPEC_KEYS) and spec["method"] == method and spec["method"] in VLLM_METHODS
        assert spec["num_speculative_tokens"] == x.k
        assert spec.get("model") == (HEAD if method == "eagle3" else None)  # mtp loads the target (:1252-1266)
        if method == "ngram":
            assert 1 <= spec["prompt_lookup_min"] <= spec["prompt_lookup_max"] == x.ngram_max  # :1322
    else:
        opts = _options(SGLANG, argv[2:], SGLANG_FLAGS)
        algo = opts["--speculative-algorithm"]
        assert algo in SGLANG_ALGORITHMS and algo == {"eagle3": "EAGLE3", "mtp": "NEXTN", "ngram": "NGRAM"}[method]
        assert opts["--speculative-num-draft-tokens"] == str(x.k + 1)
        if method != "ngram":
            assert opts["--speculative-draft-model-path"] == (HEAD if method == "eagle3" else x.target)
            assert opts["--speculative-num-steps"] == str(x.k) and opts["--speculative-eagle-topk"] == "1"
