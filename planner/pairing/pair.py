"""Target x draft -> PairReport: can each engine run the plain draft algorithm, and if not, what then.

Why per engine: each engine checks something different, and none says why it refused.
llama.cpp compares vocab type, BOS/EOS, n_vocab and every token's text, and reports any
failure as "draft model vocab type must match target model"; vLLM and transformers compare
only config.json vocab_size (so a same-tokenizer Qwen2.5 pair whose embeddings are padded
differently is refused, while two unrelated tokenizers of equal size pass); mlx-lm compares
the tokenizer's base vocabulary size. We name the rule that fails, the fallback that applies
(TLI / UAG) and what it costs, from published measurements (catalogs/heterogeneous_vocab.json).

Pure computation over ModelSpec + TokenizerFingerprint (sources/tokenizer.py builds those).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from types import MappingProxyType
from typing import Any

from ..core.constants import (
    PAIR_DRAFT_RATIO_MAX,
    PAIR_DRAFT_RATIO_TYPICAL,
    PAIR_DRAFT_RATIO_WARN,
    PAIR_DRAFT_TYPICAL_PARAMS,
    catalog_dir,
)
from ..core.errors import ConfigError, UsageError
from ..core.spec import ModelSpec, TokenizerFingerprint

ENGINES = ("llama.cpp", "vllm", "transformers", "mlx-lm")
ENGINE_ALIASES = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "llama_cpp": "llama.cpp", "mlx": "mlx-lm",
                  "mlx_lm": "mlx-lm", "mlxlm": "mlx-lm", "hf": "transformers"}
# llama.cpp common/speculative.cpp: SPEC_VOCAB_MAX_SIZE_DIFFERENCE (once 100) and SPEC_VOCAB_CHECK_START_TOKEN_ID.
LLAMACPP_MAX_VOCAB_DIFF = 128
LLAMACPP_CHECK_START_ID = 5
# llama.cpp's add_bos when a file does not say (src/llama-vocab.cpp defaults per tokenizer model).
LLAMACPP_ADD_BOS_DEFAULT = {"SPM": True, "WPM": True, "BPE": False, "UGM": False}
LLAMACPP_REFUSAL = ("llama.cpp reports any failed rule as 'draft model vocab type must match target model' "
                    "(common/speculative.cpp common_speculative_are_compatible)")
# Confidence of a verdict: what the engine itself compares was read ("exact"), catalog facts
# (family tags, sizes) stood in for token tables ("catalog"), or only config vocab_size and ids ("lower").
EXACT, CATALOG, LOWER = "exact", "catalog", "lower"
SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Verdict:
    """One engine: does the plain same-vocabulary algorithm run without extra options."""

    engine: str
    compatible: bool
    failed_rule: str | None
    fallback: str | None
    detail: str
    confidence: str = EXACT


@dataclass(frozen=True)
class Advice:
    severity: str  # error | warning | info
    code: str  # family, instruct, chat_template, draft_size, moe, context, vocabulary, heterogeneous
    message: str


@dataclass(frozen=True)
class Overlap:
    """Vocabulary intersection after space-marker normalisation (vLLM VocabMapping convention)."""

    intersection: int
    draft_rows: int  # draft config vocab_size: the denominator vLLM reports ("% of draft")
    target_rows: int
    of_draft: float
    of_target: float
    basis: str  # tokens | catalog


@dataclass(frozen=True)
class AcceptanceEstimate:
    """Expected TLI acceptance from published (overlap, acceptance) points; one pair per point."""

    value: float | None
    upper: float | None
    detail: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class Heterogeneous:
    """What a pair with different vocabularies (or vocab sizes) can still use, and at what cost."""

    overlap: Overlap | None
    algorithms: tuple[Mapping[str, Any], ...]
    tli_acceptance: AcceptanceEstimate | None
    homogeneous_reference: Mapping[str, Any] | None


@dataclass(frozen=True)
class PairReport:
    target: str
    draft: str
    verdicts: Mapping[str, Verdict]
    same_tokenizer: bool | None
    overlap: Overlap | None
    family_match: bool
    differences: tuple[str, ...]
    advice: tuple[Advice, ...]
    heterogeneous: Heterogeneous | None
    basis: str  # weakest fingerprint basis of the two: tokens | catalog | config | none
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "verdicts", MappingProxyType(dict(self.verdicts)))

    def incompatible(self, engines: Sequence[str] = ENGINES) -> bool:
        """True when every engine in `engines` refuses the plain algorithm (CLI exit 1)."""
        return all(not self.verdicts[e].compatible for e in engines)


def canonical_engine(name: str) -> str:
    """Engine name as used in reports ('llama.cpp', 'vllm', 'transformers', 'mlx-lm').

    Raises:
        UsageError: not one of the engines pairing knows.
    """
    key = name.strip().lower()
    key = ENGINE_ALIASES.get(key, key)
    if key not in ENGINES:
        raise UsageError(f"Cannot check pairing for engine '{name}': expected one of {', '.join(ENGINES)} "
                         f"(got '{name}'). Pass --engine with one of those names.")
    return key


# --- one side of the pair -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Side:
    spec: ModelSpec
    fp: TokenizerFingerprint | None

    @property
    def basis(self) -> str:
        return self.fp.basis if self.fp else "none"

    @property
    def vocab_type(self) -> str | None:
        vt = self.fp.vocab_type if self.fp else None
        return None if vt in (None, "UNKNOWN") else vt

    @property
    def n_vocab(self) -> int:
        return self.fp.n_vocab if self.fp else self.spec.vocab

    @property
    def bos(self) -> int | None:
        return self.fp.bos_id if self.fp and self.fp.bos_id is not None else self.spec.bos_token_id

    @property
    def eos(self) -> int | None:
        if self.fp and self.fp.eos_id is not None:
            return self.fp.eos_id
        return self.spec.eos_token_ids[0] if self.spec.eos_token_ids else None

    def add_bos(self) -> tuple[bool | None, str]:
        """add_bos as llama.cpp would hold it, and where it came from."""
        if self.fp is None:
            return None, "unknown"
        if self.fp.add_bos is not None:
            return self.fp.add_bos, "tokenizer files" if self.fp.basis != "catalog" else "catalog"
        default = LLAMACPP_ADD_BOS_DEFAULT.get(self.vocab_type or "")
        return default, f"llama.cpp default for {self.vocab_type}" if default is not None else "unknown"

    def add_eos(self) -> bool | None:
        if self.fp is None:
            return None
        return self.fp.add_eos if self.fp.add_eos is not None else (False if self.vocab_type else None)


_BASIS_RANK = {"tokens": 3, "catalog": 2, "config": 1, "none": 0}


def _weakest(t: _Side, d: _Side) -> str:
    return min((t.basis, d.basis), key=lambda b: _BASIS_RANK.get(b, 0))


# --- llama.cpp ----------------------------------------------------------------------------------


def _llamacpp(t: _Side, d: _Side) -> Verdict:
    """common_speculative_are_compatible, rule by rule, naming the first that fails."""
    weakest = _weakest(t, d)
    conf = EXACT if weakest == "tokens" else CATALOG if weakest == "catalog" else LOWER

    def fail(rule: str, why: str) -> Verdict:
        return Verdict("llama.cpp", False, rule, None, f"{why}. {LLAMACPP_REFUSAL}; builds of about mid-2025 "
                       f"to mid-2026 translated such pairs through text instead (--spec-replace, PR #12635), "
                       f"which is slow; current builds refuse.", conf)

    if t.vocab_type and d.vocab_type and t.vocab_type != d.vocab_type:
        return fail("vocab_type", f"vocab types differ: target {t.vocab_type}, draft {d.vocab_type}")
    notes = []
    (tb, tb_src), (db, db_src) = t.add_bos(), d.add_bos()
    if tb is not None and db is not None:
        if tb != db:
            return fail("add_bos", f"add_bos differs: target {tb} ({tb_src}), draft {db} ({db_src})")
        if tb and t.bos != d.bos:
            return fail("bos_id", f"both add BOS but the ids differ: target {t.bos}, draft {d.bos}")
    elif t.bos is not None and d.bos is not None and t.bos != d.bos:
        return fail("bos_id", f"bos ids differ: target {t.bos}, draft {d.bos} (add_bos unknown, assumed added)")
    te, de = t.add_eos(), d.add_eos()
    if te is not None and de is not None:
        if te != de:
            return fail("add_eos", f"add_eos differs: target {te}, draft {de}")
        if te and t.eos != d.eos:
            return fail("eos_id", f"both add EOS but the ids differ: target {t.eos}, draft {d.eos}")
    unadded = [f"{k} {a} vs {b}" for k, a, b in (("bos", t.bos, d.bos), ("eos", t.eos, d.eos))
               if a is not None and b is not None and a != b]
    if unadded:
        notes.append(f"ids not added differ ({', '.join(unadded)}): current builds ignore them, older builds "
                     f"compared bos/eos ids unconditionally and refuse this pair")
    diff = abs(t.n_vocab - d.n_vocab)
    if diff > LLAMACPP_MAX_VOCAB_DIFF:
        return fail("n_vocab_difference", f"n_vocab {t.n_vocab} (target) vs {d.n_vocab} (draft): difference "
                    f"{diff} > {LLAMACPP_MAX_VOCAB_DIFF} (SPEC_VOCAB_MAX_SIZE_DIFFERENCE)")
    end = min(t.n_vocab, d.n_vocab)
    if t.fp is not None and d.fp is not None and t.fp.tokens is not None and d.fp.tokens is not None:
        i = first_text_mismatch(t.fp, d.fp, start=LLAMACPP_CHECK_START_ID, end=end)
        if i is not None:
            return fail("token_text", f"token {i} differs: target {t.fp.token_text(i)!r}, draft "
                        f"{d.fp.token_text(i)!r} (ids {LLAMACPP_CHECK_START_ID}..{end - 1} must match)")
        checked = f"token text equal for ids {LLAMACPP_CHECK_START_ID}..{end - 1}"
    elif t.fp is not None and d.fp is not None and t.fp.family and d.fp.family:
        if t.fp.family != d.fp.family:
            return fail("token_text", f"tokenizer families differ (catalog facts): target '{t.fp.family}', "
                        f"draft '{d.fp.family}', so token texts differ")
        checked = f"same tokenizer family '{t.fp.family}' (catalog facts): token text taken as equal"
    else:
        checked = "token text not compared (no token table on both sides): lower confidence"
        conf = LOWER
    detail = (f"vocab type {t.vocab_type or '?'}/{d.vocab_type or '?'}, add_bos {tb}/{db}, n_vocab "
              f"{t.n_vocab}/{d.n_vocab} (difference {diff} <= {LLAMACPP_MAX_VOCAB_DIFF}); {checked}")
    return Verdict("llama.cpp", True, None, None, "; ".join([detail, *notes]), conf)


def first_text_mismatch(a: TokenizerFingerprint, b: TokenizerFingerprint, *, start: int, end: int) -> int | None:
    """The first id in [start, end) whose token text differs (padding ids read as `[PAD{i}]`), or None."""
    ta, tb = a.tokens or (), b.tokens or ()
    m = max(start, min(len(ta), len(tb), end))
    if ta[start:m] != tb[start:m]:  # tuple comparison runs in C; locate only on failure
        return next(i for i in range(start, m) if ta[i] != tb[i])
    for i in range(m, end):
        if a.token_text(i) != b.token_text(i):
            return i
    return None


# --- vLLM, transformers, mlx-lm -----------------------------------------------------------------


def _vllm(t: _Side, d: _Side, same: bool | None) -> Verdict:
    tv, dv = t.spec.vocab, d.spec.vocab
    if tv == dv:
        extra = (" The tokenizers differ, and vLLM does no token-text check: it runs the pair and rejects "
                 "nearly every draft token." if same is False else "")
        return Verdict("vllm", True, None, None, f"config vocab_size {tv} on both (vLLM draft_model compares "
                       f"only this, vllm/config/speculative.py).{extra}")
    pad = (" Same tokenizer: the sizes differ only by embedding padding, vLLM refuses anyway." if same else "")
    return Verdict("vllm", False, "vocab_size",
                   "speculative_config {\"method\": \"draft_model\", \"use_heterogeneous_vocab\": true} "
                   "(TLI, greedy drafting only)",
                   f"config vocab_size {tv} (target) vs {dv} (draft): 'Target and draft model should have the "
                   f"same vocabulary size' (vllm/config/speculative.py).{pad}")


def _transformers(t: _Side, d: _Side, same: bool | None) -> Verdict:
    tv, dv = t.spec.vocab, d.spec.vocab
    if tv == dv:
        extra = (" Caution: the tokenizers differ, so draft ids mean other strings to the target and "
                 "nearly all are rejected." if same is False else "")
        return Verdict("transformers", True, None, None, f"config vocab_size {tv} on both: plain assisted "
                       f"generation, generate(assistant_model=...) (generation/utils.py _validate_assistant).{extra}")
    routed = (" This routes a same-tokenizer pair to UAG: transformers decides 'same tokenizer' by "
              "config.vocab_size alone, and the sizes differ only by embedding padding (issue #45307 crashed "
              "on this path)." if same else "")
    return Verdict("transformers", False, "vocab_size",
                   "Universal Assisted Generation: generate(assistant_model=..., tokenizer=..., "
                   "assistant_tokenizer=...); text re-encoding (SLEM) when greedy, TLI "
                   "(AssistantToTargetTranslator) when do_sample=True",
                   f"config vocab_size {tv} (target) vs {dv} (draft): generate() requires tokenizer and "
                   f"assistant_tokenizer.{routed}")


def _mlx(t: _Side, d: _Side) -> Verdict:
    """mlx_lm generate: `draft_tokenizer.vocab_size != tokenizer.vocab_size` -> refuse (base vocabulary)."""
    tf, df = t.fp, d.fp
    if tf and df and tf.base_vocab_size is not None and df.base_vocab_size is not None:
        a, b, what, conf = tf.base_vocab_size, df.base_vocab_size, "tokenizer.vocab_size (base vocabulary)", EXACT
        if _weakest(t, d) == "catalog":
            conf = CATALOG
    elif tf and df and tf.family and df.family and tf.family == df.family:
        return Verdict("mlx-lm", True, None, None, f"same tokenizer family '{tf.family}' (catalog facts): "
                       f"equal tokenizer.vocab_size", CATALOG)
    elif tf and df and tf.basis != "config" and df.basis != "config":
        a, b, what, conf = tf.vocab_size, df.vocab_size, "len(tokenizer) (base vocabulary size unknown)", LOWER
    else:
        a, b, what, conf = t.spec.vocab, d.spec.vocab, "config vocab_size (no tokenizer facts)", LOWER
    if a == b:
        return Verdict("mlx-lm", True, None, None, f"{what} {a} on both", conf)
    return Verdict("mlx-lm", False, "tokenizer.vocab_size", None,
                   f"{what} {a} (target) vs {b} (draft): mlx_lm refuses ('Draft model tokenizer does not match "
                   f"model tokenizer', mlx_lm/generate.py); no heterogeneous-vocabulary path", conf)


# --- same tokenizer, differences, overlap -------------------------------------------------------


def _compare_tokenizers(t: _Side, d: _Side) -> tuple[bool | None, list[str]]:
    """Whether the two id -> token tables (and text processing) are the same; named differences."""
    diffs: list[str] = []
    tf, df = t.fp, d.fp
    same: bool | None = None
    if tf and df and tf.tokens is not None and df.tokens is not None:
        same_table = unpadded(tf.tokens) == unpadded(df.tokens)
        same = same_table and t.vocab_type == d.vocab_type
        if t.vocab_type != d.vocab_type:
            diffs.append(f"vocab_type: {t.vocab_type} vs {d.vocab_type}")
        if not same_table:
            n = min(len(tf.tokens), len(df.tokens))
            differing = sum(1 for i in range(n) if tf.tokens[i] != df.tokens[i])
            first = first_text_mismatch(tf, df, start=0, end=n)
            where = f", first at id {first}: {tf.tokens[first]!r} vs {df.tokens[first]!r}" if first is not None else ""
            diffs.append(f"vocab: {differing} of {n} shared ids differ{where}; sizes {len(tf.tokens)} vs "
                         f"{len(df.tokens)}")
        for name, a, b in (("normalizer", tf.normalizer_hash, df.normalizer_hash),
                           ("pre_tokenizer", tf.pre_tokenizer_hash, df.pre_tokenizer_hash),
                           ("pre", tf.pre, df.pre)):
            if a is not None and b is not None and a != b:
                diffs.append(f"{name}: differs ({a} vs {b})")
                same = False
    elif tf and df and tf.family and df.family:
        same = tf.family == df.family and t.vocab_type == d.vocab_type
        if not same:
            diffs.append(f"tokenizer family (catalog): {tf.family} vs {df.family}")
    if tf and df and tf.vocab_size != df.vocab_size and tf.basis != "config" and df.basis != "config":
        diffs.append(f"vocab_size (len(tokenizer)): {tf.vocab_size} vs {df.vocab_size}")
    if t.spec.vocab != d.spec.vocab:
        diffs.append(f"config vocab_size: {t.spec.vocab} vs {d.spec.vocab}"
                     + (" (embedding padding only)" if same else ""))
    for name, a, b in (("bos_id", t.bos, d.bos), ("eos_id", t.eos, d.eos),
                       ("pad_id", tf.pad_id if tf else None, df.pad_id if df else None),
                       ("add_bos", t.add_bos()[0], d.add_bos()[0]), ("add_eos", t.add_eos(), d.add_eos())):
        if a is not None and b is not None and a != b:
            diffs.append(f"{name}: {a} vs {b}")
    if tf and df and tf.chat_template_hash and df.chat_template_hash and tf.chat_template_hash != df.chat_template_hash:
        diffs.append("chat_template: differs")
    return same, diffs


def unpadded(tokens: Sequence[str]) -> Sequence[str]:
    """The table without the trailing `[PAD{i}]` fillers convert_hf_to_gguf adds up to config vocab_size."""
    n = len(tokens)
    while n and tokens[n - 1] == f"[PAD{n - 1}]":
        n -= 1
    return tokens[:n]


def space_prefixes(fp: TokenizerFingerprint) -> tuple[str, ...]:
    """The word-initial space marker(s) of a vocabulary (vLLM _detect_space_prefix, by vocab type)."""
    if fp.vocab_type in ("SPM", "UGM"):
        return ("▁",)
    if fp.vocab_type == "BPE":
        return ("Ġ",)
    return ("Ġ", "▁")  # vLLM's fallback when probing finds no marker (e.g. WordPiece)


def normalised_vocab(fp: TokenizerFingerprint, rows: int) -> dict[str, int]:
    """Normalised token string -> first id below `rows`; gap fillers `[PAD{i}]` are not tokens.

    Normalisation (vLLM _normalize_token): a leading space marker becomes a plain space.
    """
    prefixes = space_prefixes(fp)
    toks = (fp.tokens or ())[:rows]
    norm = toks
    for p in prefixes:  # one pass per marker, in C-level str methods; a token has at most one
        k = len(p)
        norm = [(" " + t[k:]) if t.startswith(p) else t for t in norm]
    out = dict(zip(reversed(norm), range(len(norm) - 1, -1, -1), strict=True))  # smallest id wins
    for i, t in enumerate(toks):
        if t.startswith("[PAD") and t == f"[PAD{i}]" and out.get(norm[i]) == i:
            del out[norm[i]]
    return out


def vocab_overlap(t: TokenizerFingerprint | None, d: TokenizerFingerprint | None, *, target_rows: int,
                  draft_rows: int) -> Overlap | None:
    """Intersection of the two vocabularies as vLLM's VocabMapping counts it.

    of_draft = |shared normalised tokens| / draft rows (config vocab_size), the figure vLLM logs
    as '% of draft' and PR #38174 reports as overlap. None when neither tables nor equal catalog
    families are known.
    """
    if t is None or d is None:
        return None
    if t.tokens is not None and d.tokens is not None:
        tn, dn = normalised_vocab(t, target_rows), normalised_vocab(d, draft_rows)
        inter, basis = len(tn.keys() & dn.keys()), "tokens"
    elif t.family and d.family and t.family == d.family:
        inter, basis = min(t.vocab_size, d.vocab_size, target_rows, draft_rows), "catalog"
    else:
        return None
    return Overlap(inter, draft_rows, target_rows, inter / max(draft_rows, 1), inter / max(target_rows, 1), basis)


# --- published measurements ---------------------------------------------------------------------


@lru_cache(maxsize=2)
def _catalog(directory: str) -> dict[str, Any]:
    from ..core.jsonio import read_json_object

    return read_json_object(f"{directory}/heterogeneous_vocab.json", what="heterogeneous vocabulary catalog")


def heterogeneous_catalog() -> dict[str, Any]:
    """catalogs/heterogeneous_vocab.json (published TLI acceptance, algorithms, sources).

    Raises:
        ConfigError: the catalog is missing or malformed.
    """
    data = _catalog(str(catalog_dir()))
    if not isinstance(data.get("tli_acceptance"), list) or not isinstance(data.get("algorithms"), list):
        raise ConfigError(f"Cannot read '{catalog_dir()}/heterogeneous_vocab.json': expected lists "
                          f"'tli_acceptance' and 'algorithms'. Restore the bundled catalog.")
    return data


def tli_acceptance(overlap: float, points: Sequence[Mapping[str, Any]]) -> AcceptanceEstimate:
    """Expected TLI acceptance at `overlap`, by linear interpolation between published TLI points.

    Each point is one model pair on one workload (vLLM PR #38174), so the estimate is an order of
    magnitude: acceptance also depends on how well the draft predicts the target.
    Above the highest TLI overlap the nearest point is used; below the lowest only an upper bound.
    """
    pts = sorted((float(p["overlap"]), float(p["acceptance"]), str(p["source"])) for p in points
                 if str(p.get("path", "")).startswith("TLI"))
    if not pts:
        return AcceptanceEstimate(None, None, "no published TLI measurement in the catalog", ())
    srcs = tuple(sorted({s for *_, s in pts}))
    lo, hi = pts[0], pts[-1]
    if overlap >= hi[0]:
        return AcceptanceEstimate(hi[1], None, f"overlap {overlap:.3f} >= the highest measured TLI overlap "
                                  f"{hi[0]}: nearest point, {hi[1]:.2f}", srcs)
    if overlap < lo[0]:
        return AcceptanceEstimate(None, lo[1], f"overlap {overlap:.3f} is below the measured range "
                                  f"({lo[0]}..{hi[0]}): expect acceptance under {lo[1]:.2f}", srcs)
    for (x0, y0, _), (x1, y1, _) in pairwise(pts):
        if x0 <= overlap <= x1:
            # linear: a = a0 + (overlap - o0) / (o1 - o0) * (a1 - a0)
            a = y0 + (overlap - x0) / (x1 - x0) * (y1 - y0)
            return AcceptanceEstimate(a, None, f"interpolated between published TLI points ({x0}, {y0}) and "
                                      f"({x1}, {y1}): {a:.2f}", srcs)
    raise AssertionError("unreachable: overlap inside the measured range")


def _heterogeneous(ov: Overlap | None) -> Heterogeneous:
    cat = heterogeneous_catalog()
    homog = next((p for p in cat["tli_acceptance"] if not str(p.get("path", "")).startswith("TLI")), None)
    est = tli_acceptance(ov.of_draft, cat["tli_acceptance"]) if ov is not None else None
    return Heterogeneous(ov, tuple(MappingProxyType(a) for a in cat["algorithms"]), est,
                         MappingProxyType(homog) if homog else None)


# --- family and size advice ---------------------------------------------------------------------


def _norm_family(f: str | None) -> str:
    return "".join(ch for ch in (f or "").lower() if ch.isalnum())


def family_match(target: ModelSpec, draft: ModelSpec, same_tokenizer: bool | None) -> bool:
    """Same family tag, or the same architecture with the same tokenizer (one lineage)."""
    if target.family and draft.family and _norm_family(target.family) == _norm_family(draft.family):
        return True
    return bool(same_tokenizer) and target.model_type == draft.model_type


def _b(n: int) -> str:
    return f"{n / 1e9:.2f}B"


def _size_advice(target: ModelSpec, draft: ModelSpec) -> list[Advice]:
    out = []
    t_act, d_act = target.params_active, draft.params_active
    ratio = d_act / t_act if t_act else float("inf")
    basis = "active " if target.moe else ""
    if d_act >= t_act:
        out.append(Advice("error", "draft_size", f"draft ({_b(d_act)} active) is not smaller than the target's "
                          f"{basis}parameters ({_b(t_act)}): a draft step costs as much as a target step, so "
                          f"speculation cannot be faster"))
    elif ratio > PAIR_DRAFT_RATIO_MAX:
        out.append(Advice("error", "draft_size", f"draft larger than useful: {_b(d_act)} is {ratio:.0%} of the "
                          f"target's {basis}{_b(t_act)}; even perfect acceptance caps the speed-up below 2x"))
    elif ratio > PAIR_DRAFT_RATIO_WARN:
        out.append(Advice("warning", "draft_size", f"draft is {ratio:.0%} of the target's {basis}parameters "
                          f"({_b(d_act)} of {_b(t_act)}); useful drafts are well under a tenth, and each draft "
                          f"step here costs about {ratio:.0%} of a target step"))
    elif ratio > PAIR_DRAFT_RATIO_TYPICAL:
        out.append(Advice("info", "draft_size", f"draft is {ratio:.0%} of the target's {basis}parameters "
                          f"({_b(d_act)} of {_b(t_act)}): above the usual tenth, gains shrink as the draft grows "
                          f"(Llama-3.1-8B + 3.2-1B at 15% still gave 1.71x in llama.cpp #5877)"))
    else:
        out.append(Advice("info", "draft_size", f"draft is {ratio:.1%} of the target's {basis}parameters "
                          f"({_b(d_act)} of {_b(t_act)}): within the usual range (under a tenth)"))
    lo, hi = PAIR_DRAFT_TYPICAL_PARAMS
    total = draft.params_total
    if total > hi:
        out.append(Advice("warning", "draft_size", f"draft has {_b(total)} parameters; drafts are typically "
                          f"{_b(lo)}-{_b(hi)}: a smaller one of the same family usually drafts faster"))
    elif total < lo:
        out.append(Advice("info", "draft_size", f"draft has {_b(total)} parameters, below the usual "
                          f"{_b(lo)}-{_b(hi)}: cheap steps, but acceptance is often low (SmolLM2-1.7B + 135M "
                          f"ran 30% slower in vLLM, issue #15025)"))
    return out


def _moe_advice(target: ModelSpec, k_hint: int = 4) -> list[Advice]:
    moe = target.moe
    if moe is None:
        return []
    # Verifying K+1 tokens routes each to top_k experts: up to min(E, (K+1)*top_k) experts per layer are
    # read, against top_k for one decode step, so verification costs more than on a dense model.
    touched = min(moe.experts, (k_hint + 1) * moe.experts_per_token)
    return [Advice("warning", "moe", f"MoE target: a decode step reads {_b(target.params_active)} active of "
                   f"{_b(target.params_total)} parameters, so size the draft against the active count; verifying "
                   f"K+1 tokens touches up to {touched} of {moe.experts} experts per layer (K={k_hint}, top-"
                   f"{moe.experts_per_token}) instead of {moe.experts_per_token}, which erodes the gain")]


def _context_advice(target: ModelSpec, draft: ModelSpec, context: int | None) -> list[Advice]:
    want = context or target.max_context
    what = "deployment context" if context else "target's max context"
    if draft.max_context >= want:
        return [Advice("info", "context", f"draft max context {draft.max_context} >= {what} {want}")]
    return [Advice("warning" if context else "info", "context",
                   f"draft max context {draft.max_context} < {what} {want}: past {draft.max_context} tokens the "
                   f"draft runs beyond its trained positions (acceptance falls) or the engine caps the draft's "
                   f"context (llama.cpp -cd, vLLM draft max_model_len)")]


def _lineage_advice(t: _Side, d: _Side, fam: bool, same: bool | None) -> list[Advice]:
    out = []
    tfam, dfam = t.spec.family or t.spec.model_type, d.spec.family or d.spec.model_type
    if fam:
        out.append(Advice("info", "family", f"same family/lineage ({tfam})"))
    else:
        out.append(Advice("warning", "family", f"different families ({tfam} vs {dfam}): drafts from another "
                          f"lineage predict the target worse; prefer a small model of the target's family"))
    ti, di = t.spec.instruct, d.spec.instruct
    if ti and di is False:
        out.append(Advice("warning", "instruct", "instruct target with a base draft: the draft has not learnt the "
                          "chat format, so acceptance drops on chat prompts; use the draft's instruct variant"))
    elif ti is False and di:
        out.append(Advice("warning", "instruct", "base target with an instruct draft: the draft is tuned to "
                          "answer in chat style; use the base variant for completion workloads"))
    tf, df = t.fp, d.fp
    if tf and df and tf.chat_template_hash and df.chat_template_hash and tf.chat_template_hash != df.chat_template_hash:
        out.append(Advice("warning", "chat_template", "chat templates differ: a prompt formatted for the target "
                          "looks foreign to the draft, lowering acceptance on chat traffic"))
    elif tf and df and tf.has_chat_template and df.has_chat_template is False:
        out.append(Advice("warning", "chat_template", "the target has a chat template and the draft none "
                          "(a base model): acceptance drops on chat prompts"))
    if same is False and t.spec.vocab == d.spec.vocab:
        out.append(Advice("error", "vocabulary", "same config vocab_size but different tokenizers: vLLM, "
                          "transformers and mlx-lm accept this pair, yet each draft id means another string to "
                          "the target and nearly every draft is rejected"))
    return out


# --- the report ---------------------------------------------------------------------------------


def pair(target: ModelSpec, draft: ModelSpec, *, target_tokenizer: TokenizerFingerprint | None = None,
         draft_tokenizer: TokenizerFingerprint | None = None, context: int | None = None) -> PairReport:
    """Check a draft against a target for llama.cpp, vLLM, transformers and mlx-lm.

    Args:
        target, draft: the two models (sources.load_spec).
        target_tokenizer, draft_tokenizer: fingerprints to compare; default the specs' own
            (`sources.tokenizer.fingerprint_for(spec)` gives the full token table when files exist).
        context: deployment context in tokens, for the draft-context advice (default: target max).

    Returns:
        PairReport with a verdict per engine, named differences, overlap, advice.

    Raises:
        ConfigError: the heterogeneous-vocabulary catalog is missing or malformed.

    Example:
        >>> from planner.sources import load_spec
        >>> r = pair(load_spec("qwen2.5-7b"), load_spec("qwen2.5-0.5b"))
        >>> r.verdicts["vllm"].failed_rule, r.verdicts["llama.cpp"].compatible
        ('vocab_size', True)
    """
    t = _Side(target, target_tokenizer if target_tokenizer is not None else target.tokenizer)
    d = _Side(draft, draft_tokenizer if draft_tokenizer is not None else draft.tokenizer)
    same, diffs = _compare_tokenizers(t, d)
    verdicts = {"llama.cpp": _llamacpp(t, d), "vllm": _vllm(t, d, same), "transformers": _transformers(t, d, same),
                "mlx-lm": _mlx(t, d)}
    ov = vocab_overlap(t.fp, d.fp, target_rows=target.vocab, draft_rows=draft.vocab)
    fam = family_match(target, draft, same)
    advice = (_lineage_advice(t, d, fam, same) + _size_advice(target, draft) + _moe_advice(target)
              + _context_advice(target, draft, context))
    hetero = None
    if same is not True or any(not v.compatible for v in verdicts.values()):
        hetero = _heterogeneous(ov)
        advice.append(_hetero_advice(hetero, same, verdicts))
    basis = _weakest(t, d)
    notes = []
    if basis in ("config", "none"):
        notes.append("no token tables or catalog tokenizer facts on both sides: verdicts use config vocab_size "
                     "and bos/eos ids only (lower confidence)")
    elif basis == "catalog":
        notes.append("verdicts from catalog tokenizer facts (family tags and sizes), not token tables")
    return PairReport(target=target.id, draft=draft.id, verdicts=verdicts, same_tokenizer=same, overlap=ov,
                      family_match=fam, differences=tuple(diffs), advice=tuple(advice), heterogeneous=hetero,
                      basis=basis, notes=tuple(notes))


def _hetero_advice(h: Heterogeneous, same: bool | None, verdicts: Mapping[str, Verdict]) -> Advice:
    refused = [e for e, v in verdicts.items() if not v.compatible]
    ov = f"vocabulary overlap {h.overlap.of_draft:.1%} of the draft's rows" if h.overlap else "overlap unknown"
    est = h.tli_acceptance
    cost = ""
    if est is not None and est.value is not None:
        cost = f"; published TLI acceptance suggests about {est.value:.0%} ({est.detail})"
    elif est is not None and est.upper is not None:
        cost = f"; {est.detail}"
    ref = h.homogeneous_reference
    if ref is not None and cost:
        cost += (f", against ~{float(ref['acceptance']):.0%} for a same-vocabulary pair ({ref['draft']} -> "
                 f"{str(ref['target']).split(' ')[0]})")
    who = f"{', '.join(refused)} refuse the plain algorithm" if refused else "the tokenizers differ"
    sev = "warning" if same is not False or (h.overlap and h.overlap.of_draft >= 0.9) else "error"
    return Advice(sev, "heterogeneous", f"{who}: {ov}; SLEM (greedy) or TLI (sampling; vLLM: greedy drafting "
                  f"only) apply{cost}")


def to_json(r: PairReport) -> dict[str, Any]:
    """The `planner pair --json` schema (docs/pairing.md)."""
    def verdict(v: Verdict) -> dict[str, Any]:
        return {"compatible": v.compatible, "failed_rule": v.failed_rule, "fallback": v.fallback,
                "detail": v.detail, "confidence": v.confidence}

    h = r.heterogeneous
    return {
        "target": r.target, "draft": r.draft,
        "engines": {e: verdict(r.verdicts[e]) for e in ENGINES},
        "same_tokenizer": r.same_tokenizer,
        "vocab_overlap": round(r.overlap.of_draft, 6) if r.overlap else None,
        "family_match": r.family_match,
        "advice": [{"severity": a.severity, "code": a.code, "message": a.message} for a in r.advice],
        "differences": list(r.differences),
        "overlap": None if r.overlap is None else {
            "intersection": r.overlap.intersection, "draft_rows": r.overlap.draft_rows,
            "target_rows": r.overlap.target_rows, "of_draft": round(r.overlap.of_draft, 6),
            "of_target": round(r.overlap.of_target, 6), "basis": r.overlap.basis},
        "heterogeneous": None if h is None else {
            "algorithms": [dict(a) for a in h.algorithms],
            "tli_acceptance": None if h.tli_acceptance is None else {
                "value": h.tli_acceptance.value, "upper": h.tli_acceptance.upper,
                "detail": h.tli_acceptance.detail, "sources": list(h.tli_acceptance.sources)},
            "homogeneous_reference": dict(h.homogeneous_reference) if h.homogeneous_reference else None},
        "basis": r.basis, "notes": list(r.notes),
    }
