"""The architecture's tensors from `transformers` on the meta device: no weights, no remote code.

Why a worker process: importing torch + transformers costs seconds and hundreds of MiB, and a config
can ask for a model of any size; so `planner.sources.meta_inventory` runs this module as
`python -m planner.probe.meta_worker` with a deadline, and this process caps its own address space
before importing anything heavy. It is the method `accelerate estimate-memory` uses
(accelerate src/accelerate/commands/estimate.py `create_empty_model`: `init_empty_weights()` +
`AutoModel.from_config`), restricted to architectures transformers knows natively: a config with
`auto_map` (remote code) is refused, never executed, and nothing is read from the Hub.

Protocol: the config.json dict as JSON on stdin (at most META_CONFIG_MAX_BYTES); one JSON object on
stdout: {"status": "ok", "tensors": [[name, dtype, shape], ...], "model_class", "version"} or
{"status": "absent" | "unknown" | "refused" | "failed", "reason": one line}. Exit status 0 either way.
"""

from __future__ import annotations

import contextlib
import json
import resource
import sys
from typing import Any

from ..core import dtypes
from ..core.constants import META_CONFIG_MAX_BYTES, META_MEMORY_MAX_BYTES

# Auto classes tried in order: a decoder LM first, then the wrappers that hold one (a VLM's
# ForConditionalGeneration); the mapping names are transformers' own (models/auto/modeling_auto.py).
_AUTO_CLASSES = ("AutoModelForCausalLM", "AutoModelForImageTextToText", "AutoModel")
# Errors a config transformers accepts by name can still raise while building (a bad width, a
# missing key): reported as "failed", one line.
_BUILD_ERRORS = (ValueError, TypeError, KeyError, AttributeError, IndexError, ZeroDivisionError, RuntimeError,
                 AssertionError, NotImplementedError)


def _checkpoint_dtype(config: dict[str, Any]) -> str:
    """The format the checkpoint stores floating tensors in: config `dtype`/`torch_dtype` (top, else
    the text sub-config), bf16 when absent (what the analytic path assumes too)."""
    sub = config.get("text_config")
    for c in (config, sub if isinstance(sub, dict) else {}):
        for key in ("dtype", "torch_dtype"):
            value = c.get(key)
            if isinstance(value, str) and dtypes.is_known(value):
                return dtypes.canonical(value)
    return "BF16"


def _remote_code(config: dict[str, Any]) -> bool:
    subs = [v for v in config.values() if isinstance(v, dict)]
    return any("auto_map" in c for c in [config, *subs])


def _fp32_names(model: Any) -> tuple[str, ...]:
    """Modules transformers keeps in float32 whatever the dtype (`_keep_in_fp32_modules[_strict]`)."""
    names: list[str] = []
    for attr in ("_keep_in_fp32_modules", "_keep_in_fp32_modules_strict"):
        value = getattr(model, attr, None)
        names += [v for v in value if isinstance(v, str)] if isinstance(value, (list, tuple, set)) else []
    return tuple(names)


# The config attributes under their standard names (a config class's `attribute_map` resolves the old
# spellings: GPT-J's n_embd / n_layer / n_head), handed back so the layer plan can be drawn for a config
# that spells them its own way.
STANDARD_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                 "intermediate_size", "vocab_size", "max_position_embeddings", "tie_word_embeddings")


def _standard(cfg: Any) -> dict[str, Any]:
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    out = {}
    for key in STANDARD_KEYS:
        value = getattr(text, key, None)
        if isinstance(value, (bool, int)) and not (isinstance(value, int) and value < 0):
            out[key] = value
    return out


def _aliased(cfg: Any) -> list[str]:
    """The config's own spellings of the standard keys (`attribute_map` values: GPT-J's n_embd)."""
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    amap = getattr(text, "attribute_map", None)
    return [v for k, v in amap.items() if k in STANDARD_KEYS and isinstance(v, str)] if isinstance(amap, dict) else []


def tensors_of(model: Any, stored: str) -> list[list[Any]]:
    """[name, stored dtype, shape] of every parameter (tied ones once: `named_parameters` drops the
    duplicate, as the checkpoint stores a tied head once) and every persistent buffer (the ones
    `state_dict` holds, so the ones a checkpoint stores)."""
    fp32 = _fp32_names(model)
    out: list[list[Any]] = []

    def fmt(name: str, is_float: bool, own: str) -> str:
        if not is_float:
            return dtypes.canonical(own)
        return "F32" if any(f".{m}." in f".{name}" for m in fp32) else stored

    for name, p in model.named_parameters():
        out.append([name, fmt(name, p.is_floating_point(), str(p.dtype).removeprefix("torch.")), list(p.shape)])
    for mod_name, module in model.named_modules():
        skip: set[str] = getattr(module, "_non_persistent_buffers_set", set())
        for b_name, b in module.named_buffers(recurse=False):
            if b is None or b_name in skip:
                continue
            name = f"{mod_name}.{b_name}" if mod_name else b_name
            out.append([name, fmt(name, b.is_floating_point(), str(b.dtype).removeprefix("torch.")), list(b.shape)])
    return out


def build(config: dict[str, Any]) -> dict[str, Any]:
    """The worker's answer for one config dict (see the module docstring)."""
    if _remote_code(config):
        return {"status": "refused", "reason": "config has auto_map (remote code): not executed"}
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        return {"status": "unknown", "reason": "config has no model_type"}
    try:
        import torch
        import transformers
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    except ImportError as e:
        return {"status": "absent", "reason": f"transformers/torch not installed ({type(e).__name__}: {e})"}
    if model_type not in CONFIG_MAPPING:
        return {"status": "unknown",
                "reason": f"transformers {transformers.__version__} does not know model_type '{model_type}'"}
    named = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    if named and not any(hasattr(transformers, a) for a in named):
        return {"status": "unknown", "reason": f"architectures {named[0]} is not a class of transformers "
                                               f"{transformers.__version__} (a draft head or custom code)"}
    kwargs = {k: v for k, v in config.items() if k not in ("model_type", "quantization_config")}
    try:
        cfg = transformers.AutoConfig.for_model(model_type, **kwargs)
        # the class the config names, when transformers has it for this config type: what the checkpoint was
        # saved from (an Auto class can pick a narrower one: AutoModelForCausalLM builds MllamaForCausalLM,
        # text only, from a Llama 3.2 Vision config whose checkpoint holds the tower too)
        named_cls: list[Any] = [c for c in (getattr(transformers, a, None) for a in named)
                     if isinstance(c, type) and getattr(c, "config_class", None) is type(cfg)]
        builders = [c._from_config for c in named_cls[:1]] + [
            getattr(transformers, a).from_config for a in _AUTO_CLASSES
            if type(cfg) in getattr(transformers, a)._model_mapping]
        if builders:
            with torch.device("meta"):
                model = builders[0](cfg)
            return {"status": "ok", "tensors": tensors_of(model, _checkpoint_dtype(config)),
                    "model_class": type(model).__name__, "version": transformers.__version__,
                    "standard": _standard(cfg), "aliased": _aliased(cfg)}
    except _BUILD_ERRORS as e:
        msg = " ".join(str(e).split())[:200]
        return {"status": "failed", "reason": f"{type(e).__name__}: {msg}"}
    return {"status": "unknown", "reason": f"transformers {transformers.__version__} maps model_type "
                                           f"'{model_type}' to no model class it can build"}


def main() -> None:
    """Read the config from stdin, cap this process's memory, answer on stdout."""
    # a platform that refuses the cap (macOS may): the caller's deadline still bounds the run
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (META_MEMORY_MAX_BYTES, META_MEMORY_MAX_BYTES))
    raw = sys.stdin.buffer.read(META_CONFIG_MAX_BYTES + 1)
    if len(raw) > META_CONFIG_MAX_BYTES:
        answer: dict[str, Any] = {"status": "refused", "reason": f"config over {META_CONFIG_MAX_BYTES} bytes"}
    else:
        try:
            config = json.loads(raw)
        except ValueError as e:
            config, answer = None, {"status": "failed", "reason": f"config is not JSON ({e})"}
        if isinstance(config, dict):
            answer = build(config)
        elif config is not None:
            answer = {"status": "failed", "reason": "config is not a JSON object"}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
