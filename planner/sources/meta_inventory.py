"""The third inventory source: the architecture's tensors as transformers builds it on the meta device.

Why: a config the analytic layer-kind formulas are unsure of (an unregistered model_type, structural keys
no rule reads) has, when transformers knows its model_type natively, an exact structure one import away:
transformers' own modelling code, with no weights (`torch.device("meta")`). Source order
(docs/ledger.md "Inventory sources"): safetensors headers (exact) > GGUF > this > the analytic formulas.

The build runs in a worker process (`planner/probe/meta_worker.py`, where torch may be imported) under a
deadline and an address-space cap, so this module never imports torch or transformers, and a default
install without them gets a one-line reason instead of an answer. The worker is handed the local
config.json only; it refuses `auto_map` (remote code) and never reaches the Hub.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import quant
from ..core.constants import META_CONFIG_MAX_BYTES, META_OUTPUT_MAX_BYTES, META_TIMEOUT_S, child_env_offline
from ..core.errors import UsageError, one_line
from ..core.spec import CHUNKED, FULL, SLIDING, LayerSpec, MtpSpec, WeightInventory
from .tensors import classify, inventory_from_header, mtp_from_header

# `--inventory`: auto (meta only when no header and the analytic figure is low), meta (always try it),
# analytic (never; the layer-kind formulas alone).
MODES = ("auto", "meta", "analytic")
_WORKER = "planner.probe.meta_worker"
_IMPORT_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding this `planner` package

Record = tuple[str, str, tuple[int, ...]]


@dataclass(frozen=True)
class MetaInventory:
    """What the worker built: the tensors as (name, stored dtype, shape), like a safetensors header's."""

    tensors: tuple[Record, ...]
    model_class: str
    version: str
    wall_s: float
    # the config's figures under their standard names, as transformers' config class reads them
    standard: dict[str, int | bool] = field(default_factory=dict)
    aliased: tuple[str, ...] = ()  # the config's own spellings of those keys (read through them)

    @property
    def label(self) -> str:
        """The provenance line: which library and class built the inventory."""
        return f"transformers {self.version} {self.model_class} on the meta device (structure, no weights)"


@dataclass(frozen=True)
class MetaRefusal:
    """Why no meta inventory: `status` absent | unknown | refused | failed | timeout, `reason` one line."""

    status: str
    reason: str


def meta_inventory(config: dict[str, Any], *, timeout_s: float = META_TIMEOUT_S) -> MetaInventory | MetaRefusal:
    """Build `config`'s tensor inventory in the meta worker.

    Args:
        config: the local config.json as read (top level: a wrapper's `text_config` stays nested).
        timeout_s: the worker's deadline; past it the worker is killed and a refusal returned.

    Returns:
        The inventory, or a `MetaRefusal` saying why not (transformers absent, model_type unknown to it,
        remote code, a config it cannot build, the deadline).

    Example:
        >>> r = meta_inventory({"model_type": "not-a-model"})
        >>> r.status in ("unknown", "absent")
        True
    """
    payload = json.dumps(config).encode()
    if len(payload) > META_CONFIG_MAX_BYTES:
        return MetaRefusal("refused", f"config over {META_CONFIG_MAX_BYTES} bytes")
    t0 = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", _WORKER], input=payload, capture_output=True,
                              timeout=timeout_s, env=child_env_offline(_IMPORT_ROOT), check=False)
    except subprocess.TimeoutExpired:
        return MetaRefusal("timeout", f"meta-device build took over {timeout_s:g} s: stopped")
    except OSError as e:
        return MetaRefusal("failed", f"cannot start the meta worker ({e})")
    wall = time.perf_counter() - t0
    return _parse(done.returncode, done.stdout, done.stderr, wall)


def _parse(rc: int, out: bytes, err: bytes, wall: float) -> MetaInventory | MetaRefusal:
    """The worker's one JSON object, checked field by field (bounded: it is read back whole)."""
    if rc != 0 or not out:
        tail = one_line(err.decode(errors="replace").strip().splitlines()[-1] if err.strip() else f"exit {rc}")
        return MetaRefusal("failed", f"meta worker failed: {tail[:200]}")
    if len(out) > META_OUTPUT_MAX_BYTES:
        return MetaRefusal("failed", f"meta worker answer over {META_OUTPUT_MAX_BYTES} bytes")
    try:
        answer = json.loads(out)
    except ValueError:
        return MetaRefusal("failed", "meta worker answer is not JSON")
    if not isinstance(answer, dict):
        return MetaRefusal("failed", "meta worker answer is not an object")
    if answer.get("status") != "ok":
        return MetaRefusal(str(answer.get("status", "failed")), one_line(str(answer.get("reason", "?"))))
    records = []
    for item in answer.get("tensors") or []:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str) and isinstance(item[1], str)
                and isinstance(item[2], list) and all(isinstance(d, int) and d >= 0 for d in item[2])):
            return MetaRefusal("failed", f"meta worker answer has a malformed tensor record: {str(item)[:80]}")
        records.append((item[0], item[1], tuple(item[2])))
    if not records:
        return MetaRefusal("failed", "meta worker built a model with no tensors")
    raw = answer.get("standard")
    standard = {str(k): v for k, v in raw.items() if isinstance(v, (bool, int))} if isinstance(raw, dict) else {}
    return MetaInventory(tensors=tuple(records), model_class=one_line(str(answer.get("model_class", "?"))),
                         version=one_line(str(answer.get("version", "?"))), wall_s=wall, standard=standard,
                         aliased=tuple(str(a) for a in answer.get("aliased") or () if isinstance(a, str)))


def check_mode(mode: str) -> None:
    """Raise UsageError for an `--inventory` value outside MODES."""
    if mode not in MODES:
        raise UsageError(f"Cannot use --inventory '{mode}': unknown (expected one of {', '.join(MODES)}).")


def wanted(mode: str, *, has_headers: bool, low: bool) -> bool:
    """Whether to build the meta inventory: never over headers (exact already); `meta` always, `auto` only
    when the analytic figure is low (an unregistered model_type, keys no rule reads), `analytic` never."""
    check_mode(mode)
    return not has_headers and (mode == "meta" or (mode == "auto" and low))


def meta_weights(meta: MetaInventory, *, n_layers: int, tied: bool, headless: bool, scheme: quant.Scheme | None,
                 moe: tuple[int, int] | None) -> tuple[WeightInventory, MtpSpec | None, int]:
    """(resident inventory, MTP layers it holds, other stored bytes) from the meta tensors, by the same
    rules as a safetensors header (`inventory_from_header`: rotary buffers, layers past num_hidden_layers
    and a tied head copy excluded), then quantised per tensor by name like a config-only checkpoint
    (`quant.apply` with the config's quantization_config scheme). A headless model (an embedding
    checkpoint, `headless_reason`) drops the lm_head the causal-LM class adds."""
    records = [r for r in meta.tensors if not (headless and classify(r[0], len(r[2])) == "lm_head")]
    inv = inventory_from_header(records, n_layers=n_layers, tied=tied, moe=moe, source="meta")
    mtp = mtp_from_header(records, n_layers)
    extra = inv.excluded_bytes - (mtp.nbytes if mtp else 0)
    if scheme is not None:
        inv = WeightInventory(tensors=quant.apply(inv.tensors, scheme), source="meta", params_total=inv.params_total,
                              params_active=inv.params_active, excluded_bytes=inv.excluded_bytes, notes=inv.notes)
    return inv, mtp, extra


_KV_PROJ = re.compile(r"(?:^|\.)(?:layers|h|blocks)\.(\d+)\..*\b(k_proj|v_proj)\.weight$")


def kv_widths_agree(meta: MetaInventory, layers: tuple[LayerSpec, ...]) -> bool:
    """Whether transformers' own K and V projections give every layer the KV width the layer plan caches:
    out rows of `layers.N.*.k_proj` + `v_proj` == kv_heads x (head_dim_k + head_dim_v), for a plan of
    plain attention layers only (an MLA, recurrent or KV-less layer is not checkable this way: False)."""
    if not layers or any(s.attention not in (FULL, SLIDING, CHUNKED) or s.recurrent for s in layers):
        return False
    rows: dict[int, int] = {}
    for name, _, shape in meta.tensors:
        m = _KV_PROJ.search(name)
        if m and len(shape) == 2:
            rows[int(m.group(1))] = rows.get(int(m.group(1)), 0) + shape[0]
    return rows == {i: s.kv_heads * (s.head_dim_k + s.head_dim_v) for i, s in enumerate(layers)}


# Unread config keys that may still decide the cache (window, layer kinds, heads) once transformers has
# built the weights: they keep the KV figure a guess; any other unread key only ever shaped weights.
_KV_WORDS = re.compile(r"window|sliding|swa|layer_types|pattern|kv|key_value|head|chunk|attn|attention|ssm|"
                       r"mamba|linear|state|conv|hybrid|global|local|nope|lora|rank")


def kv_relevant(keys: list[str]) -> list[str]:
    """The unread keys of `keys` that may change the KV cache."""
    return [k for k in keys if _KV_WORDS.search(k)]
