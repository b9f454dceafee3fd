"""What undoing a partly rejected round costs on a target with recurrent layers (hybrid targets).

Why a module of its own: a KV cache is truncated for free, a recurrent state (Gated DeltaNet, Mamba,
linear attention) is not. llama-server saves the target's state before each verify and, when the draft
is only partly accepted, restores it and runs the accepted tokens again (catalogs/mechanisms/
recurrent_rollback.json has the sources). That is a cost per round that depends on K and on the
acceptance, so it cannot be a fixed per-round overhead; this module prices it, pure, from the state's
bytes (fits/memory.py sizes them from the config) and a copy rate.

  P(J = j)  = a**j * (1 - a)  for j < K,   P(J = K) = a**K         (J: drafts accepted in a round)
  X(K)      = t_save + sum_{j<K} P(j) * (t_restore + t_v(j + 2))    (the retry verifies id_last + j + 1)
  tokens    = E(K) + (1 - a**K)                                     (the retry also yields its bonus token)
  t_save    = t_restore = S / B_copy                                (S: state bytes of every sequence)

A plan is priced by folding X into the verify curve: t_v'(K+1) = t_v(K+1) + D(K), with D chosen so that
E(K) t_v(1) / (T(K) + D) = (E(K) + 1 - a**K) t_v(1) / (T(K) + X(K)), T(K) = K t_d + t_v(K+1) + t_o: exact at
the central acceptance; the interval's ends take the same D (an approximation, stated in the source).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from ..core.constants import catalog_dir
from ..core.jsonio import read_json_object
from ..core.spec import ModelSpec
from ..fits import memory
from ..fits.memory import Settings
from .model import expected_accepted

CHECKPOINT, ROLLBACK = "checkpoint", "rollback"


@cache
def rules() -> dict[str, Any]:
    """catalogs/mechanisms/recurrent_rollback.json, read once."""
    return read_json_object(catalog_dir() / "mechanisms" / "recurrent_rollback.json", what="rollback catalog")


def is_hybrid(spec: ModelSpec) -> bool:
    """Whether any layer keeps a recurrent state (a hybrid or wholly recurrent target)."""
    return any(layer.recurrent for layer in spec.layers)


def state_bytes(spec: ModelSpec, s: Settings) -> int:
    """Recurrent state of every sequence in the engine's own format (what one checkpoint copies).

    # S = batch * sum_layers (conv_dim * (kernel - 1) + state elems) * dtype bytes   (fits/memory.py)
    """
    one = replace(s, spec_tokens=0)  # a checkpoint holds one state per sequence, not vLLM's per-position copies
    return one.batch * sum(memory.state_bytes_per_sequence(layer, one, spec.dtype, spec.state_dtype)
                           for layer in spec.layers)


def path_for(engine: str, kind: str) -> str | None:
    """How `engine` undoes a rejected draft of method `kind` on a hybrid target: CHECKPOINT, ROLLBACK or None
    (the engine's rollback is not catalogued; nothing is added)."""
    e = rules()["engines"].get(engine, {})
    if kind in e.get("checkpoint", ()):
        return CHECKPOINT
    if kind in e.get("rollback", ()):
        return ROLLBACK
    return None


def refusal(engine: str, kind: str) -> str | None:
    """The engine's reason for refusing method `kind` on a hybrid target, with its source; None: it runs."""
    return rules()["engines"].get(engine, {}).get("refuse", {}).get(kind)


@dataclass(frozen=True)
class CopyRate:
    """Bytes per second a state checkpoint is copied at: central and the interval's ends, with the source."""

    central: float
    low: float
    high: float
    source: str
    short: str  # the source in a few words, for a plan's cost line


def copy_rate(machine_kind: str, bandwidth_bytes_per_s: float) -> CopyRate:
    """A discrete GPU copies the state over its host link (catalogued, assumed); unified memory and CPU RAM
    read and write it at the memory bandwidth (bytes / (bandwidth / 2))."""
    table = rules()["host_copy_bytes_per_s"]
    if machine_kind == "gpu":
        g = table["gpu"]
        return CopyRate(float(g["central"]), float(g["low"]), float(g["high"]), g["source"], g["short"])
    half = bandwidth_bytes_per_s / 2.0
    u = table["unified"]
    return CopyRate(half, half, half, u["source"], u["short"])


def checkpoint_extra_s(k: int, alpha: float, verify_s: Sequence[float], copy_s: float) -> tuple[float, float]:
    """(X(K) seconds, extra tokens) one round adds on the checkpoint path (module docstring).

    # X(K) = t_copy + sum_{j<K} a**j (1 - a) (t_copy + t_v(j + 2));  extra tokens = 1 - a**K
    """
    x = copy_s
    for j in range(k):
        x += alpha ** j * (1.0 - alpha) * (copy_s + verify_s[j + 1])
    return x, 1.0 - alpha ** k


def verify_delta_s(k: int, alpha: float, verify_s: Sequence[float], draft_s: float, overhead_s: float,
                   copy_s: float) -> float:
    """D(K): what to add to t_v(K+1) so the plain speed-up formula gives the checkpoint path's speed-up.

    # E t1 / (T + D) = (E + r) t1 / (T + X)   =>   D = E (T + X) / (E + r) - T
    """
    e = expected_accepted(alpha, k)
    t = k * draft_s + verify_s[k] + overhead_s
    x, r = checkpoint_extra_s(k, alpha, verify_s, copy_s)
    return e * (t + x) / (e + r) - t


def rollback_delta_s(k: int, state: int, bandwidth_bytes_per_s: float) -> float:
    """The rollback path's cost: each of the K drafted positions writes one more state on the device.

    # D(K) = K * S / bandwidth
    """
    return k * state / bandwidth_bytes_per_s
