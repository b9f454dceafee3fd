"""MeasuredAcceptance of a draft against a target, measured teacher-forced on real weights.

Method (docs/probe.md "What it measures"): for each calibration prompt the target generates a continuation
(greedy at temperature 0, else sampled at the temperature); then one forward of each model over
prompt + continuation gives, at every continuation position, the target's p and the draft's q.
Per position alpha_t = sum_x min(p(x), q(x)) (Leviathan et al. 2023: the chance speculative
sampling accepts the draft's token, = 1 - total variation); at temperature 0 it is 1 when the
argmaxes agree, else 0. The greedy match rate is P(argmax q = argmax p) at any temperature.
Because accepted tokens follow the target's distribution, positions along the target's own
continuation are the contexts a real run meets.

Per-position acceptance a_k (chance drafted token k is accepted given 1..k-1 were): over every
window start s, P(first k accepted) ~ mean_s prod_{i<k} alpha_{s+i}, and a_k is the ratio of
successive ones. The pure summaries below are torch-free and unit-tested by hand.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..core import constants, jsonio
from ..core.errors import ConfigError, IncompatiblePair
from ..speed.profile import MeasuredAcceptance
from ..speed.profile_file import read_bounded
from .real import model_forward, new_cache
from .timing import Deadline

MAX_PROMPTS = 1000
MAX_PROMPT_CHARS = 20_000
MAX_PROMPT_TOKENS = 1024


@dataclass(frozen=True)
class Prompt:
    """One calibration prompt and its kind (chat, code, math, prose, custom); `ids` when it is given as
    token ids (a model folder without tokenizer files can still be benched)."""

    kind: str
    text: str
    ids: tuple[int, ...] | None = None


MAX_TOKEN_ID = 1 << 31  # ids are checked against each model's vocabulary before use; this bounds the JSON


def _ids(it: dict, i: int, origin: str) -> tuple[int, ...]:
    ids = it.get("ids")
    if not isinstance(ids, list) or not 1 <= len(ids) <= MAX_PROMPT_TOKENS or not all(
            isinstance(x, int) and not isinstance(x, bool) and 0 <= x < MAX_TOKEN_ID for x in ids):
        raise _prompt_error(origin, f"entry {i} has bad 'ids'", f"1..{MAX_PROMPT_TOKENS} non-negative integers",
                            repr(ids)[:40])
    return tuple(ids)


def _prompt_error(origin: str, reason: str, expected: str, got: Any) -> ConfigError:
    return ConfigError(f"Cannot read calibration prompts from '{origin}': {reason} (expected {expected}, got "
                       f"{got}). Pass a JSON file like planner/probe/prompts.json or a text file, one prompt "
                       f"per line.", origin, key="prompts")


def parse_prompts(text: str, origin: str) -> tuple[Prompt, ...]:
    """Prompts from JSON ({"prompts": [{"kind", "text"}|{"kind", "ids"}|str, ...]} or a list) or plain text lines.

    Raises:
        ConfigError: no prompts, too many, or an entry that is not a non-empty string.
    """
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            data = jsonio.loads(text)
        except (ValueError, RecursionError) as e:
            where = f"error at line {e.lineno}" if isinstance(e, json.JSONDecodeError) else str(e)[:60]
            raise _prompt_error(origin, "it is not valid JSON", "JSON", where) from e
        items = data.get("prompts") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise _prompt_error(origin, "no prompt list", "a 'prompts' list", type(items).__name__)
        out = []
        for i, it in enumerate(items):
            if isinstance(it, dict) and "ids" in it:  # token ids: {"kind": "code", "ids": [1, 2, 3]}
                kind = it.get("kind") or "custom"
                out.append(Prompt(kind if isinstance(kind, str) else "custom", "", _ids(it, i, origin)))
                continue
            kind, body = ("custom", it) if isinstance(it, str) else \
                ((it.get("kind") or "custom"), it.get("text")) if isinstance(it, dict) else (None, None)
            if not isinstance(body, str) or not body.strip() or not isinstance(kind, str):
                raise _prompt_error(origin, f"entry {i} has no text", "a non-empty string", repr(it)[:40])
            out.append(Prompt(kind, body))
    else:
        out = [Prompt("custom", line) for line in text.splitlines() if line.strip()]
    if not 1 <= len(out) <= MAX_PROMPTS:
        raise _prompt_error(origin, "wrong number of prompts", f"1..{MAX_PROMPTS}", len(out))
    long = [i for i, p in enumerate(out) if len(p.text) > MAX_PROMPT_CHARS]
    if long:
        raise _prompt_error(origin, f"prompt {long[0]} is too long", f"<= {MAX_PROMPT_CHARS} characters",
                            len(out[long[0]].text))
    return tuple(out)


def load_prompts(path: str | Path | None = None) -> tuple[Prompt, ...]:
    """The bundled calibration set (chat, code, math, prose), or the prompts in `path`.

    Raises:
        ConfigError / ProfileError: unreadable, too large, or malformed.
    """
    if path is None:
        text = resources.files("planner.probe").joinpath("prompts.json").read_text(encoding="utf-8")
        return parse_prompts(text, "planner/probe/prompts.json")
    raw = read_bounded(Path(path), constants.PROBE_PROMPTS_MAX_BYTES, "calibration prompts")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _prompt_error(str(path), "it is not UTF-8 text", "UTF-8", f"byte {e.start}") from e
    return parse_prompts(text, str(path))


# --- pure summaries ----------------------------------------------------------------------

def per_position(alphas: Sequence[Sequence[float]], k_max: int) -> tuple[float, ...]:
    """a_1..a_K from per-position alphas of each prompt's continuation.

    P_k = mean over window starts s (those with s + K <= len, the same set for every k) of
    prod_{i<k} alpha_{s+i}; a_k = P_k / P_{k-1}, P_0 = 1. K is k_max, or less when the
    continuations are shorter.
    """
    k = min(k_max, max((len(a) for a in alphas), default=0))
    if k == 0:
        return ()
    probs = [0.0] * (k + 1)
    starts = 0
    for a in alphas:
        for s in range(len(a) - k + 1):
            run = 1.0
            starts += 1
            probs[0] += 1.0
            for j in range(k):
                run *= a[s + j]
                probs[j + 1] += run
    out = []
    for j in range(1, k + 1):
        out.append(probs[j] / probs[j - 1] if probs[j - 1] > 0 else 0.0)
    return tuple(out)


def summarize(kinds: Sequence[str], alphas: Sequence[Sequence[float]], greedy: Sequence[Sequence[float]], *,
              temperature: float, k_max: int, source: str) -> MeasuredAcceptance:
    """Pool per-position values into the MeasuredAcceptance record (alpha pooled over positions)."""
    flat = [x for a in alphas for x in a]
    flat_g = [x for g in greedy for x in g]
    per_prompt = [sum(a) / len(a) for a in alphas if a]
    by_kind: dict[str, list[float]] = {}
    for kind, a in zip(kinds, alphas, strict=True):
        if a:
            by_kind.setdefault(kind, []).append(sum(a) / len(a))
    return MeasuredAcceptance(alpha=min(1.0, sum(flat) / len(flat)), greedy_match=sum(flat_g) / len(flat_g),
                      per_position=tuple(min(1.0, x) for x in per_position(alphas, k_max)),
                      temperature=temperature, prompts=len(per_prompt), positions=len(flat),
                      alpha_std=statistics.pstdev(per_prompt) if len(per_prompt) > 1 else 0.0,
                      alpha_min=min(1.0, min(per_prompt)), alpha_max=min(1.0, max(per_prompt)),
                      by_kind={k: min(1.0, sum(v) / len(v)) for k, v in by_kind.items()}, source=source)


# --- measurement (torch, transformers) ---------------------------------------------------

def _encode(tokenizer: Any, prompt: Prompt) -> list[int]:
    # The repository's chat template is a Jinja program from a stranger: it is hashed, never rendered
    # (docs/security.md), so chat prompts are encoded as plain text like every other kind.
    ids = tokenizer(prompt.text)["input_ids"]
    return list(ids)[-MAX_PROMPT_TOKENS:]


def continuation(model: Any, ids: Any, n: int, *, temperature: float, gen: Any, eos: set[int]) -> Any:
    """The target's own continuation of ids: greedy at temperature 0, else sampled at it."""
    import torch


    cache = new_cache(model)
    logits = model_forward(model, ids, cache, last_only=True)[-1]
    out: list[int] = []
    for _ in range(n):
        if temperature <= 0:
            tok = int(logits.argmax())
        else:
            probs = torch.softmax(logits.double() / temperature, -1)
            tok = int(torch.multinomial(probs.cpu(), 1, generator=gen))
        out.append(tok)
        if tok in eos:
            break
        logits = model_forward(model, torch.tensor([tok], device=ids.device), cache, last_only=True)[-1]
    return torch.tensor(out, device=ids.device)


def position_values(p_logits: Any, q_logits: Any, temperature: float) -> tuple[list[float], list[float]]:
    """Per position (alpha_t, greedy match) from target and draft logits [C, V] (V cut to the shorter)."""
    import torch

    v = min(p_logits.shape[-1], q_logits.shape[-1])
    lp, lq = p_logits[:, :v].double(), q_logits[:, :v].double()
    match = (lp.argmax(-1) == lq.argmax(-1)).double()
    if temperature <= 0:
        alpha = match
    else:
        alpha = torch.minimum(torch.softmax(lp / temperature, -1), torch.softmax(lq / temperature, -1)).sum(-1)
    return alpha.cpu().tolist(), match.cpu().tolist()


def measure_acceptance(target: Any, draft: Any, tokenizer: Any, prompts: Sequence[Prompt], *, temperature: float,
                       max_new_tokens: int, k_max: int, device: str, seed: int, deadline: Deadline,
                       draft_tokenizer: Any = None, progress: Callable[[str, float], None] | None = None
                       ) -> MeasuredAcceptance:
    """Teacher-forced acceptance of `draft` against `target` over the prompts (stops at the deadline).

    Raises:
        IncompatiblePair: the draft's tokenizer encodes a prompt differently from the target's.
    """
    import torch


    gen = torch.Generator(device="cpu")
    gen.manual_seed(seed)
    eos_ids = getattr(tokenizer, "eos_token_id", None)
    eos = {eos_ids} if isinstance(eos_ids, int) else set(eos_ids or [])
    kinds, alphas, greedy = [], [], []
    per_prompt_s = 0.0
    for i, prompt in enumerate(prompts):
        if i and deadline.left() < 1.5 * per_prompt_s:
            break
        if progress:
            progress(f"acceptance: prompt {i + 1}/{len(prompts)} ({prompt.kind})", i / len(prompts))
        t0 = deadline.elapsed()
        ids = _encode(tokenizer, prompt)
        if draft_tokenizer is not None and _encode(draft_tokenizer, prompt) != ids:
            raise IncompatiblePair(f"Cannot measure acceptance: the draft's tokenizer encodes prompt {i} "
                                   f"({prompt.kind}) differently from the target's (expected identical ids). "
                                   f"Plain speculative decoding needs a shared tokenizer.", ["token ids"])
        x = torch.tensor(ids, device=device)
        cont = continuation(target, x, max_new_tokens, temperature=temperature, gen=gen, eos=eos)
        full = torch.cat([x, cont])
        lo, hi = len(ids) - 1, len(ids) - 1 + len(cont)
        pl = model_forward(target, full)[lo:hi]
        ql = model_forward(draft, full)[lo:hi]
        a, g = position_values(pl, ql, temperature)
        kinds.append(prompt.kind)
        alphas.append(a)
        greedy.append(g)
        per_prompt_s = max(per_prompt_s, deadline.elapsed() - t0)
    note = f"teacher-forced, {len(alphas)} of {len(prompts)} prompts, {max_new_tokens} new tokens each"
    out = summarize(kinds, alphas, greedy, temperature=temperature, k_max=k_max, source=note)
    if not math.isfinite(out.alpha):
        raise IncompatiblePair("Cannot measure acceptance: the models produced non-finite logits.", ["logits"])
    return out
