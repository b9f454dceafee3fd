"""`planner memory`: the memory ledger of a target and an optional draft (the typer face).

The work is planner/commands/_ledger.py's `run`, which a plain argv reaches without typer (start-up,
issue #33); this face parses everything else (help, errors, unusual spellings) and calls the same `run`.
"""

from __future__ import annotations

from . import _ledger
from ._common import app
from ._ledger import DEFAULTS as D
from ._options import (
    ContextOpt,
    DraftContextOpt,
    DraftOpt,
    EngineAutoOpt,
    GroupSizeOpt,
    InventoryOpt,
    JsonOpt,
    KvDtypeOpt,
    MethodOpt,
    ModelArg,
    OverheadOpt,
    ParallelBatchOpt,
    RevisionOpt,
    WeightsDtypeOpt,
    WideOpt,
)


@app.command()
def memory(
    model: ModelArg,
    draft: DraftOpt = D["draft"],
    method_kind: MethodOpt = D["method_kind"],
    context: ContextOpt = D["context"],
    batch: ParallelBatchOpt = D["batch"],
    draft_context: DraftContextOpt = D["draft_context"],
    engine: EngineAutoOpt = D["engine"],
    kv_dtype: KvDtypeOpt = D["kv_dtype"],
    weights_dtype: WeightsDtypeOpt = D["weights_dtype"],
    group_size: GroupSizeOpt = D["group_size"],
    revision: RevisionOpt = D["revision"],
    inventory: InventoryOpt = D["inventory"],
    overhead: OverheadOpt = D["overhead"],
    as_json: JsonOpt = D["as_json"],
    wide: WideOpt = D["wide"],
) -> None:
    """Memory ledger of a target (and optional draft): weights, KV cache, activations, overhead.

    \b
    Examples:
      planner memory llama-3.1-8b --context 8k
      planner memory qwen2.5-32b-instruct --weights-dtype bf16,int8,int4
      planner memory ./Qwen2.5-7B-Instruct-GGUF   (a folder or cached repo of GGUF files: one row each)
      planner memory Qwen/Qwen2.5-7B-Instruct --draft Qwen/Qwen2.5-0.5B-Instruct --engine vllm --json
      planner memory ./my-model --kv-dtype q8_0 --engine llama.cpp
      planner memory ./new-arch --inventory auto --json
      planner memory target.gguf --draft draft.gguf --parallel 4 --draft-context 4k
    """
    _ledger.run(_ledger.MemoryArgs(model, draft=draft, method_kind=method_kind, context=context, batch=batch,
                                   draft_context=draft_context, engine=engine, kv_dtype=kv_dtype,
                                   weights_dtype=weights_dtype, group_size=group_size, revision=revision,
                                   inventory=inventory, overhead=overhead, as_json=as_json, wide=wide))
