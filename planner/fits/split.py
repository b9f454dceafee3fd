"""Split: which bytes of one model land on which device of a tensor x pipeline parallel layout.

Its own module because the split is engine-specific bookkeeping over memory.py's formulas,
independent of budgets and of the verdict:

  tensor parallel t:  sharded weights / t (embedding and lm_head too where the engine shards the
                      vocabulary), replicated groups whole on every rank; KV heads max(kv_heads // t, 1)
                      per rank (MLA latent: one latent row, replicated); q heads, FFN width and
                      recurrent channels / t for the activations; NCCL buffers per rank (constants.py)
  pipeline parallel p: layers split into p stages (vLLM get_pp_indices; llama.cpp floor(il * p / L)),
                      embedding on the first stage, final norm + lm_head (+ a tied copy) and the
                      logits on the last
  partial offload:    llama.cpp -ngl N keeps layers [0, first_gpu_layer) in host RAM, weights and
                      KV (src/llama-model.cpp:1589-1595, src/llama-kv-cache.cpp:216-218: a layer's
                      cache lives on its layer's device); the GPU layers are split over the stages as
                      above; --n-cpu-moe N keeps only the expert tensors of layers [0, N) in host RAM
                      (common/arg.cpp:2767-2773, LLM_FFN_EXPS_REGEX common/common.h:1198)
"""

from __future__ import annotations

from dataclasses import replace

from ..core import memo
from ..core.errors import UsageError
from ..core.spec import MLA, LayerSpec, ModelSpec, TensorInfo
from ..engines import Engine
from . import memory
from .memory import Settings, activations, kv_cache

# Engine facts used here live in the engine files (engines/*.py): tp_unsplit_groups (tensor groups kept
# whole on every tensor-parallel rank; vLLM/SGLang shard embedding and lm_head, transformers' tp_plan
# not embed_tokens, llama.cpp's row split only the layers' matrices), tp_main_device_only (llama.cpp
# keeps the unsplit rest on the main GPU), host_input_embedding (llama.cpp keeps the input embedding
# in RAM) and tied_copy_on_last_stage.


def stage_ranges(n_layers: int, pp: int, engine: Engine) -> tuple[tuple[int, int], ...]:
    """[start, end) layer ranges of the pp pipeline stages.

    vLLM/SGLang (vllm/distributed/utils.py get_pp_indices): n // pp layers each, the remainder
    one each to the stages before the last. Others (llama.cpp's equal tensor_split: layer il on
    device floor(il * pp / n)): the same formula.

    Raises:
        UsageError: more stages than layers.
    """
    if not 1 <= pp <= n_layers:
        raise UsageError(f"Cannot split {n_layers} layers into {pp} pipeline stages (expected 1..{n_layers}).")
    if engine.pp_vllm_stages:
        parts = [n_layers // pp] * pp
        for i in range(2, n_layers % pp + 2):
            parts[-i] += 1
    else:
        parts = [0] * pp
        for il in range(n_layers):
            parts[il * pp // n_layers] += 1
    out, start = [], 0
    for n in parts:
        out.append((start, start + n))
        start += n
    return tuple(out)


def _ceil_div(n: int, d: int) -> int:
    return -(-n // d)


def shard_layer(layer: LayerSpec, tp: int, engine: Engine) -> LayerSpec:
    """One tensor-parallel rank's view of a layer: heads, FFN width and recurrent channels / tp;
    KV heads max(kv_heads // tp, 1) (replicated when fewer than tp); a latent MLA row stays whole."""
    if tp == 1:
        return layer
    kv = layer.kv_heads
    if kv and not (layer.attention == MLA and engine.latent_mla):
        kv = max(kv // tp, 1)
    return replace(layer, q_heads=_ceil_div(layer.q_heads, tp), kv_heads=kv, ffn_width=_ceil_div(layer.ffn_width, tp),
                   conv_dim=_ceil_div(layer.conv_dim, tp),
                   recurrent_state_elems=_ceil_div(layer.recurrent_state_elems, tp))


def shard_spec(spec: ModelSpec, stage: tuple[int, int], tp: int, engine: Engine, *, last: bool) -> ModelSpec:
    """The part of `spec` one device runs: the stage's layers, sharded; logits only on the last stage.

    One object per (spec, stage, tp, engine, last) (core/memo.py): the fit search asks for the same part
    at every context it tries, and the KV ledger memoised on the part is then computed once per context.
    """
    return memo.per_object(spec, ("shard_spec", stage, tp, engine, last),
                           lambda: _shard_spec(spec, stage, tp, engine, last=last))


def _shard_spec(spec: ModelSpec, stage: tuple[int, int], tp: int, engine: Engine, *, last: bool) -> ModelSpec:
    a, b = stage
    layers = tuple(shard_layer(layer, tp, engine) for layer in spec.layers[a:b])
    moe = spec.moe
    if moe is not None and tp > 1:
        moe = replace(moe, expert_intermediate=_ceil_div(moe.expert_intermediate, tp),
                      shared_intermediate=_ceil_div(moe.shared_intermediate, tp))
    return replace(spec, layers=layers, moe=moe, vocab=spec.vocab if last else 0)


def resident_tensors(spec: ModelSpec, s: Settings) -> tuple[TensorInfo, ...]:
    """The tensors memory.weights() sums, as tensors (re-sized under --weights-dtype)."""
    return memory.resident_tensors(spec, s)


def gpu_stage_ranges(n_layers: int, pp: int, engine: Engine, first_gpu_layer: int = 0) -> tuple[tuple[int, int], ...]:
    """stage_ranges over the layers on GPUs, [first_gpu_layer, n_layers) (all of them unless offloading).

    Raises:
        UsageError: more stages than GPU layers.
    """
    if first_gpu_layer == 0:
        return stage_ranges(n_layers, pp, engine)
    return tuple((a + first_gpu_layer, b + first_gpu_layer)
                 for a, b in stage_ranges(n_layers - first_gpu_layer, pp, engine))


def weight_split(spec: ModelSpec, s: Settings, layout_tp: int, layout_pp: int, *,
                 on_host_ok: bool, first_gpu_layer: int = 0, cpu_moe_layers: int = 0) -> tuple[list[int], int]:
    """(weight bytes per device in stage-major order, bytes kept in host RAM).

    Layer tensors go to their layer's stage; embedding/vision/other to the first stage, final
    norm and lm_head to the last (a tied embedding is copied there by vLLM/SGLang/llama.cpp when
    it is not the first stage). llama.cpp keeps the input embedding in host RAM (`on_host_ok`).
    Within a stage, groups the engine shards are divided by tp (ceil), the others stay whole on
    every rank (llama.cpp: on the stage's first rank only). Partial offload (llama.cpp): the
    tensors of layers below `first_gpu_layer`, and the experts of layers below `cpu_moe_layers`,
    stay in host RAM.
    """
    key = ("split", memory._scheme_name(spec, s), s.group_size, s.engine, layout_tp, layout_pp, on_host_ok,
           first_gpu_layer, cpu_moe_layers)
    if key not in spec.weights.memo:
        spec.weights.memo[key] = _weight_split(spec, s, layout_tp, layout_pp, on_host_ok=on_host_ok,
                                               first_gpu_layer=first_gpu_layer, cpu_moe_layers=cpu_moe_layers)
    per_device, host = spec.weights.memo[key]
    return list(per_device), host


def _buckets(spec: ModelSpec, s: Settings) -> tuple[tuple[int | None, str, int], ...]:
    """The resident tensors' bytes summed by (layer index, group), in first-seen order (memoised per scheme).

    Why: every layout of every machine walks the same tensors (a 70B: ~700 of them) and only their layer
    and group decide where their bytes go, so a split sums ~2 buckets per layer instead (issue #33). Byte
    sums are integers: the split over buckets equals the split over tensors exactly.
    """
    key = ("split-buckets", memory._scheme_name(spec, s), s.group_size)
    memo = spec.weights.memo
    if key not in memo:
        by: dict[tuple[int | None, str], int] = {}
        for layer, group, _, nbytes in memory.resized_rows(spec, s):
            k = (layer, group)
            by[k] = by.get(k, 0) + nbytes
        memo[key] = tuple((layer, group, n) for (layer, group), n in by.items())
    return memo[key]  # type: ignore[no-any-return]


def _weight_split(spec: ModelSpec, s: Settings, layout_tp: int, layout_pp: int, *,
                  on_host_ok: bool, first_gpu_layer: int, cpu_moe_layers: int) -> tuple[list[int], int]:
    e, tp, pp = s.resolved_engine, layout_tp, layout_pp
    stages = gpu_stage_ranges(spec.n_layers, pp, e, first_gpu_layer)
    stage_of = [-1] * first_gpu_layer + [i for i, (a, b) in enumerate(stages) for _ in range(a, b)]
    split = [0] * pp  # bytes divided over the stage's ranks
    whole = [0] * pp  # bytes every rank (or the main rank) holds whole
    host = 0
    unsplit = e.tp_unsplit_groups
    buckets = _buckets(spec, s)
    has_head = any(group == "lm_head" for _, group, _ in buckets)
    for layer, group, nbytes in buckets:
        if group == "vision":  # a vision tower's own layer numbers are not the decoder's
            st = 0
        elif layer is not None and layer < spec.n_layers:
            st = stage_of[layer]
            if st < 0 or (group == "experts" and layer < cpu_moe_layers):
                host += nbytes  # offloaded: -ngl leaves the layer in RAM, --n-cpu-moe its experts
                continue
        elif group in ("lm_head", "norm"):
            st = pp - 1
        else:
            st = 0
        if group == "embedding" and on_host_ok and e.host_input_embedding:
            host += nbytes
            if spec.tied_embeddings and not has_head:  # the output head reads a device copy
                whole[pp - 1] += nbytes
            continue
        if group == "embedding" and spec.tied_embeddings and not has_head and pp > 1 \
                and e.tied_copy_on_last_stage:
            (whole if group in unsplit else split)[pp - 1] += nbytes
        (whole if group in unsplit else split)[st] += nbytes
    per_device = []
    for st in range(pp):
        for rank in range(tp):
            keep = whole[st] if (rank == 0 or not e.tp_main_device_only) else 0
            per_device.append(_ceil_div(split[st], tp) + keep)
    return per_device, host


def dynamic_split(spec: ModelSpec, s: Settings, tp: int, pp: int, context: int,
                  first_gpu_layer: int = 0) -> list[tuple[int, int]]:
    """(KV cache + state, activations) per device in stage-major order, from memory.py's formulas
    (the GPU layers only when offloading: host_kv() counts the rest)."""
    out = []
    stages = gpu_stage_ranges(spec.n_layers, pp, s.resolved_engine, first_gpu_layer)
    for st, stage in enumerate(stages):
        part = shard_spec(spec, stage, tp, s.resolved_engine, last=st == pp - 1)
        kv, _ = kv_cache(part, s, context)
        act = activations(part, s, context)
        out.extend([(kv, act)] * tp)
    return out



def host_kv(spec: ModelSpec, s: Settings, context: int, first_gpu_layer: int) -> int:
    """KV cache + state of the layers -ngl leaves in host RAM, [0, first_gpu_layer)."""
    if first_gpu_layer <= 0:
        return 0
    part = shard_spec(spec, (0, first_gpu_layer), 1, s.resolved_engine, last=False)
    return kv_cache(part, s, context)[0]
