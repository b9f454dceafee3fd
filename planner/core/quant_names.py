"""Which module a tensor belongs to, and whether a checkpoint's pattern list names it.

Why apart from quant.py (the byte layouts): a quantised checkpoint names the modules it leaves alone or
targets (compressed-tensors `ignore` and `re:` targets, ModelOpt exclude lists and per-layer names, MLX per-module
overrides) in its own naming, which a multimodal wrapper changes, and a list of hundreds is asked about for each of
thousands of tensors: matching is its own job.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Sequence


def module_of(name: str) -> str:
    """The module a tensor belongs to: `x.q_proj.weight` -> `x.q_proj`; a fused expert tensor
    (`x.experts.gate_up_proj`, no `.weight`) is its own module."""
    for suffix in (".weight", ".bias"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def skipped(name: str, patterns: Sequence[str], substring: bool = False) -> bool:
    """Whether the tensor's module is left unquantised: `re:` patterns by re.match (compressed-tensors
    utils/match.py _match_name), others as names or fnmatch wildcards; ModelOpt also by substring.

    The module is tried under each name a checkpoint may give it (`aliases`): a multimodal checkpoint's
    `ignore` names its text layers `model.language_model.layers.N...` where the inventory says `model.layers.N...`
    (a Gemma 4 AWQ build lists every layer's dense MLP so: sized as INT4, -4.5%)."""
    if not patterns:
        return False
    match = _matcher(tuple(patterns), substring)
    return any(match(m) for m in aliases(module_of(name)))


# Where transformers' multimodal wrappers (Gemma3/4ForConditionalGeneration, Qwen2-VL, LLaVA since 4.52:
# `_checkpoint_conversion_mapping`) keep the text model, so where a checkpoint's own names put its layers.
_TEXT_PREFIXES = ("model.language_model.", "language_model.model.", "language_model.")
_TEXT_PARTS = ("layers.", "embed_tokens", "norm")  # the text model's own modules as the inventory names them


def aliases(module: str) -> tuple[str, ...]:
    """The module's inventory name and, for a text-model tensor (`model.X`), the names a multimodal
    checkpoint gives it."""
    if module == "lm_head":  # mlx-vlm keeps the head in its language model (`language_model.lm_head`)
        return (module, "language_model.lm_head")
    rest = module[len("model."):]
    if not module.startswith("model.") or not rest.startswith(_TEXT_PARTS):  # a vision tower is not the text model
        return (module,)
    return (module, *(p + rest for p in _TEXT_PREFIXES))


@functools.lru_cache(maxsize=64)
def _matcher(patterns: tuple[str, ...], substring: bool) -> Callable[[str], bool]:
    """One test for a pattern list (a quantised checkpoint's `ignore` lists hundreds of modules, asked for each
    of thousands of tensors): the same answer as trying each pattern in turn, `re:` by re.match, a name with
    fnmatch wildcards as fnmatch, a plain name by equality, as the module's dotted prefix (`p.*`) or as its
    string suffix (`endswith`), ModelOpt's also as a substring. A pure function of its arguments: cached by value."""
    regexes, wild, plain = [], [], set()
    for p in patterns:
        if p.startswith("re:"):
            try:
                regexes.append(re.compile(p[3:]))
            except re.error:
                continue
        elif any(c in p for c in "*?["):
            wild.append(re.compile(fnmatch.translate(p)))
            wild.append(re.compile(fnmatch.translate(p + ".*")))
        else:
            plain.add(p)
    lengths = sorted({len(p) for p in plain})

    def match(module: str) -> bool:
        if any(r.match(module) for r in regexes) or any(w.match(module) for w in wild):
            return True
        n = len(module)
        for ln in lengths:  # equal, a dotted prefix (fnmatch `p.*`), or a suffix
            if ln > n:
                break
            if module[n - ln:] in plain or (module[:ln] in plain and (ln == n or module[ln] == ".")):
                return True
        return substring and any(p in module for p in plain)

    return match
