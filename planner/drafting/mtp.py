"""MTP: the multi-token-prediction layers a checkpoint ships beyond its decoder draft for it
(DeepSeek-V3/R1 `num_nextn_predict_layers`, GLM-4.5+, Qwen3-Next `mtp_num_hidden_layers`, MiMo).

Resident: the MTP layers (`ModelSpec.mtp`, sized by planner/sources from config or headers): plain
decoding does not load them, MTP speculation does (vLLM loads the target's checkpoint again as the
draft with method mtp, vllm/config/speculative.py:1252-1266; SGLang NEXTN; llama.cpp draft-mtp
makes a draft context on the target model itself, common/speculative.cpp:2556-2566). Each MTP
layer keeps its own KV cache, laid out as the target's last decoder layer; the embedding and the
output head are the target's (vLLM v1/spec_decode/llm_base_proposer.py:1467-1472 shares them).
Cost per drafted token: one forward of the MTP layers plus one read of the target's lm_head (the
logits of every drafted token); with fewer MTP layers than K the engine reuses them. Acceptance:
published MTP measurements (DeepSeek-V3 report: 85-90% for the second token; catalogs/methods).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..core.spec import ModelSpec, TensorInfo, WeightInventory
from ..engines.base import MTP, Engine, method_verdict
from ..fits import memory
from ..fits.memory import Settings
from ..speed import acceptance as acc
from ..speed import position_decay, roofline
from ..speed.roofline import MachineLike
from . import priors
from .base import Compatibility, DraftingMethod, MethodEntry

KIND = MTP


def mtp_model(target: ModelSpec) -> ModelSpec | None:
    """The target's MTP layers as a model of their own: their stored bytes, one decoder layer each.

    The bytes are MtpSpec.nbytes as sources/ measured them; how they split between routed experts
    and the rest is taken from the target's own split (MoE MTP layers are MoE layers), so the
    roofline reads only the experts a token touches.
    """
    m = target.mtp
    if m is None or m.layers < 1:
        return None
    groups = target.weights.bytes_by_group
    body = sum(v for g, v in groups.items() if g not in ("embedding", "lm_head", "vision"))
    share = groups.get("experts", 0) / body if body else 0.0
    experts = round(m.nbytes * share)
    dt = target.weights.dominant_dtype
    p_experts = round(m.params * share)  # shapes carry parameter counts, so a --weights-dtype re-sizes them
    h = max(target.hidden, 1)

    def matrix(name: str, params: int, nbytes: int, group: str) -> tuple[TensorInfo, ...]:
        # rows of `hidden` columns, as the layers' matrices are: a quantiser groups along rows, and a 1-D
        # vector would fall back to 16-bit; the few parameters past whole rows are kept apart, unquantised
        rows, rest = divmod(params, h)
        if not rows:
            return (TensorInfo(name, (params,), dt, nbytes, group),)
        main = nbytes * rows * h // params
        return (TensorInfo(name, (rows, h), dt, main, group),
                *((TensorInfo(f"{name}.rest", (rest,), dt, nbytes - main, "norm"),) if rest else ()))
    tensors = tuple(t for t in (*matrix("mtp.experts", p_experts, experts, "experts"),
                                *matrix("mtp.layers", m.params - p_experts, m.nbytes - experts, "ffn"))
                    if t.nbytes > 0)
    inv = WeightInventory(tensors=tensors, source=m.source, params_total=m.params, params_active=m.params,
                          notes=(f"{m.layers} MTP layer(s), {m.source}; experts share {share:.2f} as the target's",))
    last = next((x for x in reversed(target.layers) if x.has_kv), target.layers[-1])
    return replace(target, id=f"{target.id} MTP", layers=(last,) * m.layers, weights=inv, mtp=None,
                   tokenizer=None, provenance={"weights": f"{m.source} ({m.layers} MTP layer(s) of {target.id})"})


@dataclass(frozen=True)
class MtpLayers:
    """The target's own MTP layers as the drafter."""

    target: ModelSpec
    workload: str | None = None
    kind: str = KIND

    @property
    def label(self) -> str:
        return f"{self.target.id} MTP"

    @property
    def ref(self) -> str | None:
        return None

    def resident_model(self) -> ModelSpec | None:
        return mtp_model(self.target)

    def compatibility(self, target: ModelSpec, engine: Engine, *, context: int | None = None) -> Compatibility:
        v = method_verdict(engine, KIND)
        if v.compatible and target.mtp is None:
            v = replace(v, compatible=False, failed_rule="no_mtp_layers",
                        detail=f"'{target.id}' ships no MTP layers (no num_nextn_predict_layers / "
                               f"mtp_num_hidden_layers, no stored MTP tensors)")
        return Compatibility(verdict=v, fallback=None, tli_alpha=None, report=None)

    def settings_for(self, s: Settings) -> Settings:
        return s  # the MTP layers load in the target's format (vLLM aligns their quantization, :1262-1266)

    def step_s(self, machine: MachineLike, s: Settings) -> float:
        """One forward of the MTP layers + one read of the target's output head, per drafted token."""
        spec = self.resident_model()
        if spec is None:
            return 0.0
        layers = roofline.draft_step_s(spec, machine, context=s.context, settings=s)  # + the engine's overhead
        groups = memory.bytes_by_group(self.target, s)
        head = groups.get("lm_head") or groups.get("embedding", 0)  # a tied head is the embedding table
        return layers + head / float(machine.bandwidth_bytes_per_s)

    def acceptance_prior(self, target: ModelSpec) -> acc.Acceptance:
        """The pooled MTP prior (the trained layer's rate), falling past the target's own depth."""
        a = priors.prior(KIND, workload=self.workload, target=target.id)
        depth = target.mtp.layers if target.mtp is not None else 0
        return replace(a, decay=position_decay.reused_layer(depth)) if depth >= 1 else a

    def launch_fields(self) -> dict[str, Any]:
        return {"draft": None, "method": KIND, "draft_weights_quant": None}


def _self_draft(target: ModelSpec, workload: str | None) -> tuple[list[DraftingMethod], list[str]]:
    """The target's own MTP layers, where it ships them."""
    if target.mtp is None:
        return [], [f"{KIND}: {target.id} ships no MTP layers"]
    return [MtpLayers(target, workload)], []


ENTRY = MethodEntry(KIND, lambda target, draft, workload: MtpLayers(target, workload), _self_draft)
