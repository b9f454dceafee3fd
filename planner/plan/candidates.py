"""Which drafts a recommendation ranks: the given ones, else catalog models of the target's tokenizer family
(matched by the catalog's tokenizer facts when the target carries no tag), and the target's own ways of
drafting (heads, MTP, n-gram, early exit), each kind that finds none saying so in a note.
"""

from __future__ import annotations

from ..core import memo
from ..core.constants import catalog_dir
from ..core.errors import PlannerError
from ..core.spec import ModelSpec
from ..drafting import DRAFT_MODEL, DraftingMethod, DraftModel, self_drafting
from ..engines import Engine
from ..sources import catalog, load_spec
from .request import Target

# A draft larger than this share of the target's weights is not a candidate by default.
MAX_DRAFT_SHARE = 0.5


def tokenizer_family(spec: ModelSpec) -> tuple[str | None, str]:
    """The catalog tokenizer family of `spec` and how it was matched.

    Catalog models carry the tag. A config-only directory or a GGUF is matched by its evidence
    against the catalog's tokenizer facts: token count (or config vocab_size), bos/eos ids,
    model_type and name; the match with the most agreeing facts wins.
    """
    fp = spec.tokenizer
    if fp is not None and fp.family:
        return fp.family, f"catalog tokenizer facts ({spec.id})"
    best: tuple[int, str, list[str]] | None = None
    name = spec.id.lower()
    for e in catalog.entries():
        facts = e.get("tokenizer")
        if not isinstance(facts, dict) or not facts.get("family"):
            continue
        cfg = e["config"].get("text_config") or e["config"]
        why: list[str] = []
        if fp is not None and fp.basis == "tokens" and fp.vocab_size == facts.get("vocab_size"):
            why.append(f"{fp.vocab_size} tokens")
        elif spec.vocab == cfg.get("vocab_size"):
            why.append(f"config vocab_size {spec.vocab}")
        else:
            continue
        eos = set(spec.eos_token_ids) | ({fp.eos_id} if fp is not None and fp.eos_id is not None else set())
        if facts.get("eos_id") is not None and facts["eos_id"] in eos:
            why.append(f"eos id {facts['eos_id']}")
        bos = spec.bos_token_id if spec.bos_token_id is not None else (fp.bos_id if fp else None)
        if facts.get("bos_id") is not None and facts["bos_id"] == bos:
            why.append(f"bos id {bos}")
        if cfg.get("model_type") == spec.model_type:
            why.append(f"model_type {spec.model_type}")
        if str(e.get("family", "")).lower().split("-")[0] in name:
            why.append(f"name contains '{e['family']}'")
        score = len(why)
        if best is None or score > best[0]:
            best = (score, str(facts["family"]), why)
    if best is None or best[0] < 2:
        return None, "no catalog tokenizer family shares this model's vocabulary size and special ids"
    return best[1], "matched by " + ", ".join(best[2])


def catalog_candidates(target: ModelSpec, family: str | None, weights_dtype: str | None = None) -> list[DraftingMethod]:
    """Catalog models sharing the target's tokenizer family and much smaller than it.

    The same list on every machine of a report: once per (target, family, draft format, catalog) (issue #33).
    """
    if family is None:
        return []
    key = ("catalog_candidates", family, weights_dtype, str(catalog_dir()))
    return list(memo.per_object(target, key, lambda: tuple(_catalog_candidates(target, family, weights_dtype))))


def _catalog_candidates(target: ModelSpec, family: str, weights_dtype: str | None) -> list[DraftingMethod]:
    out: list[DraftingMethod] = []
    for e in catalog.with_tokenizer_family(family):  # an index built once per catalog, not a scan per target
        if e["id"] == target.id:
            continue
        try:
            spec = load_spec(e["id"])
        except PlannerError:
            continue
        if spec.weights.resident_bytes <= target.weights.resident_bytes * MAX_DRAFT_SHARE:
            out.append(DraftModel(spec=spec, ref=e["id"], weights_dtype=weights_dtype))
    return out


def candidates(target: Target, engine: Engine, prompts: str | None, family: str | None,
                how: str) -> tuple[list[DraftingMethod], list[str]]:
    """The drafting methods to rank (the given drafts, else the catalog's of the tokenizer family; and the
    target's own heads, MTP, n-gram, early exit) and a note for each kind that found none."""
    spec, methods, notes = target.spec, target.methods, []
    wants_draft = not methods or DRAFT_MODEL in methods  # mtp / ngram alone look for no draft model
    if target.candidates is not None:
        cands = list(target.candidates)
    elif spec.source == "gguf":
        # catalog drafts are Hugging Face checkpoints: llama-server -md needs a GGUF file
        cands = []
        if wants_draft:
            notes.append(f"a GGUF target takes GGUF drafts: pass --draft d.gguf or --candidates a.gguf,b.gguf "
                         f"(catalog drafts are Hugging Face checkpoints; tokenizer family {family or '?'}: {how})")
    else:
        cands = catalog_candidates(spec, family, target.draft_weights_dtype)
        if not cands and wants_draft:
            notes.append(f"no catalog draft shares this target's tokenizer ({how}); pass --draft or --candidates")
    if target.candidates is None or methods:  # heads, MTP, n-gram, early exit: no checkpoint from the user
        own, left = self_drafting(spec, engine, workload=prompts, kinds=methods)
        cands = [c for c in cands if not methods or c.kind in methods] + own
        notes += left
    return cands, notes
