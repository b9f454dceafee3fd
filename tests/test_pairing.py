"""Pairing verdicts per engine, named rules, overlap and advice, on tokenizers built offline and the catalog.

Expected values come from the tokenizers library (id_to_token, vocab sizes), from the
construction of each vocabulary, or are worked by hand in the comments.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest
from tokenizers import Tokenizer, processors

from planner.core.constants import catalog_dir
from planner.core.errors import UsageError
from planner.pairing import pair as pairing
from planner.pairing.advice import SEVERITIES
from planner.pairing.heterogeneous import tli_acceptance
from planner.sources import load_spec
from planner.sources.tokenizer import fingerprint_for

from .cli_run import run_cli as run
from .test_tokenizer import BERT, bert_dir, tokenizer_dir, trained_bpe, word_tokenizer


def check(target_dir, draft_dir, **kw) -> pairing.PairReport:
    t, d = load_spec(str(target_dir)), load_spec(str(draft_dir))
    return pairing.pair(t, d, target_tokenizer=fingerprint_for(t), draft_tokenizer=fingerprint_for(d), **kw)


TC = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"}


# --- the six tokenizer situations -----------------------------------------------------------------


def test_identical(tmp_path):
    tok = trained_bpe(seed=0)
    n = tok.get_vocab_size(with_added_tokens=True)
    t = tokenizer_dir(tmp_path, "t", tok, base="Qwen2.5-7B", tokenizer_config=TC)
    d = tokenizer_dir(tmp_path, "d", tok, tokenizer_config=TC)
    r = check(t, d)
    assert all(v.compatible and v.failed_rule is None for v in r.verdicts.values())
    assert r.verdicts["llama.cpp"].confidence == "exact"
    assert f"ids 5..{n - 1}" in r.verdicts["llama.cpp"].detail
    assert r.same_tokenizer is True and r.differences == ()
    # byte-level tokens never contain a raw space, so normalising 'Ġ' collides with nothing: all n shared.
    assert (r.overlap.intersection, r.overlap.of_draft) == (n, 1.0)
    assert r.heterogeneous is None and not r.incompatible()


@pytest.mark.parametrize("pad, llamacpp_ok", [(128, True), (129, False)])
def test_same_tokenizer_config_vocab_padded(tmp_path, pad, llamacpp_ok):
    tok = trained_bpe(seed=0)
    n = tok.get_vocab_size(with_added_tokens=True)
    t = tokenizer_dir(tmp_path, "t", tok, base="Qwen2.5-7B", tokenizer_config=TC, vocab_size=n + pad)
    d = tokenizer_dir(tmp_path, "d", tok, tokenizer_config=TC, vocab_size=n)
    r = check(t, d)
    v = r.verdicts
    assert r.same_tokenizer is True
    assert v["llama.cpp"].compatible is llamacpp_ok
    if llamacpp_ok:  # n_vocab n+128 vs n: within 128, and ids n.. are [PAD{i}]-only on the target: equal text
        assert f"difference {pad} <= 128" in v["llama.cpp"].detail
    else:
        assert v["llama.cpp"].failed_rule == "n_vocab_difference" and f"difference {pad} > 128" in v["llama.cpp"].detail
    assert (v["vllm"].compatible, v["vllm"].failed_rule) == (False, "vocab_size")
    assert "use_heterogeneous_vocab" in v["vllm"].fallback and "refuses anyway" in v["vllm"].detail
    assert (v["transformers"].compatible, v["transformers"].failed_rule) == (False, "vocab_size")
    assert "assistant_tokenizer" in v["transformers"].fallback
    assert "routes a same-tokenizer pair to UAG" in v["transformers"].detail
    assert v["mlx"].compatible and v["mlx"].confidence == "exact"  # base vocab sizes equal
    assert any("embedding padding only" in x for x in r.differences)
    # overlap, vLLM convention: n shared / n draft rows; of the target's rows n / (n + pad)
    assert r.overlap.of_draft == 1.0 and r.overlap.of_target == pytest.approx(n / (n + pad))
    assert r.heterogeneous is not None and not r.incompatible()
    assert r.incompatible(("vllm",)) and not r.incompatible(("mlx",))


def test_same_size_different_token_strings(tmp_path):
    a, b = trained_bpe(seed=10, vocab_size=330), trained_bpe(seed=11, vocab_size=330)
    n = a.get_vocab_size(True)
    assert b.get_vocab_size(True) == n  # precondition of the case: equal sizes
    first = next(i for i in range(5, n) if a.id_to_token(i) != b.id_to_token(i))
    differing = sum(a.id_to_token(i) != b.id_to_token(i) for i in range(n))
    r = check(tokenizer_dir(tmp_path, "t", a, base="Qwen2.5-7B", tokenizer_config=TC),
              tokenizer_dir(tmp_path, "d", b, tokenizer_config=TC))
    v = r.verdicts
    assert (v["llama.cpp"].compatible, v["llama.cpp"].failed_rule) == (False, "token_text")
    assert f"token {first} differs: target {a.id_to_token(first)!r}, draft {b.id_to_token(first)!r}" \
        in v["llama.cpp"].detail
    # vLLM, transformers and mlx-lm compare sizes only: they accept, and say the drafts are garbage.
    assert v["vllm"].compatible and "no token-text check" in v["vllm"].detail
    assert v["transformers"].compatible and "tokenizers differ" in v["transformers"].detail
    assert v["mlx"].compatible
    assert r.same_tokenizer is False
    assert any(x.startswith(f"vocab: {differing} of {n} shared ids differ") for x in r.differences)
    assert any(a_.severity == "error" and a_.code == "vocabulary" for a_ in r.advice)
    assert not r.incompatible() and r.incompatible(("llama.cpp",))


@pytest.mark.parametrize("draft_bos, add_bos_draft, rule", [
    ("</s>", None, "bos_id"),  # both add a BOS (post-processor), different tokens
    ("<s>", False, "add_bos"),  # tokenizer_config switches the draft's BOS off
])
def test_different_bos(tmp_path, draft_bos, add_bos_draft, rule):
    base = trained_bpe(seed=0, bos=None)
    t_tok = Tokenizer.from_str(base.to_str())
    d_tok = Tokenizer.from_str(base.to_str())
    t_tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[
        ("<s>", base.token_to_id("<s>"))])
    d_tok.post_processor = processors.TemplateProcessing(single=f"{draft_bos} $A", special_tokens=[
        (draft_bos, base.token_to_id(draft_bos))])
    d_tc = {"bos_token": draft_bos, "eos_token": "</s>"}
    if add_bos_draft is not None:
        d_tc["add_bos_token"] = add_bos_draft
    r = check(tokenizer_dir(tmp_path, "t", t_tok, base="Qwen2.5-7B", tokenizer_config={"bos_token": "<s>"}),
              tokenizer_dir(tmp_path, "d", d_tok, tokenizer_config=d_tc))
    v = r.verdicts
    assert (v["llama.cpp"].compatible, v["llama.cpp"].failed_rule) == (False, rule)
    if rule == "bos_id":
        ids = (base.token_to_id("<s>"), base.token_to_id("</s>"))
        assert f"target {ids[0]}, draft {ids[1]}" in v["llama.cpp"].detail
    assert v["vllm"].compatible and v["transformers"].compatible and v["mlx"].compatible
    assert r.same_tokenizer is True  # same table; the difference is in the special-token settings


def test_bos_ids_not_added_only_matter_to_old_builds(tmp_path):
    tok = trained_bpe(seed=0, bos=None)
    t = tokenizer_dir(tmp_path, "t", tok, base="Qwen2.5-7B", tokenizer_config={"bos_token": "<s>"})
    d = tokenizer_dir(tmp_path, "d", tok, tokenizer_config={"bos_token": "</s>"})
    r = check(t, d)
    assert r.verdicts["llama.cpp"].compatible  # BPE default add_bos false: current builds ignore the ids
    assert "older builds" in r.verdicts["llama.cpp"].detail


def test_different_tokenizer_model_types(tmp_path):
    bpe = trained_bpe(seed=0)
    t = tokenizer_dir(tmp_path, "t", bpe, base="Qwen2.5-7B", tokenizer_config=TC)
    d = bert_dir(tmp_path)  # the real WordPiece tokenizer, 30522 tokens
    r = check(t, d)
    v = r.verdicts
    assert (v["llama.cpp"].compatible, v["llama.cpp"].failed_rule) == (False, "vocab_type")
    assert "target BPE, draft WPM" in v["llama.cpp"].detail
    for e in ("vllm", "transformers"):
        assert (v[e].compatible, v[e].failed_rule) == (False, "vocab_size")
    assert (v["mlx"].compatible, v["mlx"].failed_rule) == (False, "tokenizer.vocab_size")
    assert r.same_tokenizer is False and r.incompatible()
    # Overlap by hand: BPE 'Ġx' -> ' x'; BERT tokens keep their text (no space marker found, vLLM's
    # fallback strips a leading Ġ/▁, which BERT tokens never have).
    bert = Tokenizer.from_file(str(BERT / "tokenizer.json"))
    bpe_norm = {(" " + s[1:]) if s.startswith("Ġ") else s for s in bpe.get_vocab(with_added_tokens=True)}
    shared = bpe_norm & set(bert.get_vocab(with_added_tokens=True))
    assert r.overlap.intersection == len(shared) and r.overlap.of_draft == pytest.approx(len(shared) / 30522)


def _hetero_pair(tmp_path, draft_words):
    # Target: byte-level BPE, 5 specials + 'Ġw0'..'Ġw99' (105 tokens). Draft: SentencePiece-style,
    # 3 specials + '▁w{i}' for the given words; normalised, ' w{i}' is shared when i < 100.
    t_tok = word_tokenizer([f"w{i}" for i in range(100)], prefix="Ġ",
                           specials=("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|a|>", "<|b|>"))
    d_tok = word_tokenizer([f"w{i}" for i in draft_words], prefix="▁", specials=("<unk>", "<s>", "</s>"),
                           spm=True, bos="<s>")
    return check(tokenizer_dir(tmp_path, "t", t_tok, base="Qwen2.5-7B"), tokenizer_dir(tmp_path, "d", d_tok))


def test_heterogeneous_pair_with_known_overlap(tmp_path):
    r = _hetero_pair(tmp_path, range(10, 107))  # 97 words, 90 of them (w10..w99) in the target
    assert r.overlap.intersection == 90 and r.overlap.draft_rows == 100 and r.overlap.of_draft == 0.9
    assert r.overlap.of_target == pytest.approx(90 / 105)
    assert r.verdicts["llama.cpp"].failed_rule == "vocab_type"  # BPE vs SPM
    assert r.verdicts["vllm"].failed_rule == "vocab_size" and r.incompatible()
    h = r.heterogeneous
    assert {a["name"] for a in h.algorithms} == {"SLEM", "TLI"}
    # Interpolated between the published TLI points (0.798, 0.25) and (0.998, 0.61):
    # 0.25 + (0.9 - 0.798) / (0.998 - 0.798) * (0.61 - 0.25) = 0.25 + 0.51 * 0.36 = 0.4336
    assert h.tli_acceptance.value == pytest.approx(0.4336)
    assert any("PR #38174" in s for s in h.tli_acceptance.sources)
    assert float(h.homogeneous_reference["acceptance"]) == 0.80
    hetero = [a for a in r.advice if a.code == "heterogeneous"]
    assert len(hetero) == 1 and "90.0%" in hetero[0].message and "43%" in hetero[0].message


def test_heterogeneous_overlap_below_published_range(tmp_path):
    r = _hetero_pair(tmp_path, range(40, 137))  # w40..w99 shared: 60 of 100 rows
    assert r.overlap.of_draft == 0.6
    est = r.heterogeneous.tli_acceptance
    assert est.value is None and est.upper == 0.15 and "below the measured range" in est.detail


def test_tli_interpolation_points():
    pts = [{"overlap": 0.5, "acceptance": 0.1, "path": "TLI", "source": "s"},
           {"overlap": 0.9, "acceptance": 0.5, "path": "TLI", "source": "s"},
           {"overlap": 1.0, "acceptance": 0.9, "path": "homogeneous", "source": "s"}]
    assert tli_acceptance(0.7, pts).value == pytest.approx(0.3)  # midway: (0.1 + 0.5) / 2
    assert tli_acceptance(0.95, pts).value == 0.5  # above the last TLI point: nearest, not the plain row
    assert tli_acceptance(0.4, pts).upper == 0.1


# --- catalog pairs (offline) ----------------------------------------------------------------------


def test_catalog_qwen25_7b_with_05b():
    t, d = load_spec("qwen2.5-7b"), load_spec("qwen2.5-0.5b")
    r = pairing.pair(t, d, target_tokenizer=fingerprint_for(t), draft_tokenizer=fingerprint_for(d))
    v = r.verdicts
    assert (t.vocab, d.vocab) == (152064, 151936)  # Qwen2.5 pads 7B+ embeddings further
    assert v["llama.cpp"].compatible and v["llama.cpp"].confidence == "catalog"
    assert "difference 128 <= 128" in v["llama.cpp"].detail
    assert (v["vllm"].compatible, v["vllm"].failed_rule) == (False, "vocab_size")
    assert not v["transformers"].compatible and "routes a same-tokenizer pair to UAG" in v["transformers"].detail
    assert v["mlx"].compatible
    assert r.same_tokenizer is True and r.family_match
    # vLLM's overlap convention: len(tokenizer) / draft rows = 151665 / 151936
    assert r.overlap.of_draft == pytest.approx(151665 / 151936) and round(r.overlap.of_draft, 3) == 0.998
    assert r.heterogeneous.tli_acceptance.value == 0.61  # the published point for this very pair
    assert not r.incompatible()


def test_catalog_llama31_8b_with_llama32_1b():
    t, d = load_spec("llama-3.1-8b"), load_spec("llama-3.2-1b-instruct")
    r = pairing.pair(t, d)
    assert all(v.compatible for v in r.verdicts.values())
    assert r.same_tokenizer is True and r.overlap.of_draft == 1.0 and r.heterogeneous is None
    assert any(a.code == "instruct" and a.severity == "warning" for a in r.advice)  # base target, instruct draft
    ratio = d.params_total / t.params_total  # ~0.15: above a tenth, still a common pair
    assert 0.1 < ratio < 0.2
    assert any(a.code == "draft_size" and a.severity == "info" and f"{ratio:.0%}" in a.message for a in r.advice)


def test_catalog_without_tokenizer_facts_is_lower_confidence(tmp_path, monkeypatch):
    cat = tmp_path / "catalogs"
    shutil.copytree(catalog_dir(), cat)
    for f in (cat / "models").glob("*.json"):
        data = json.loads(f.read_text())
        items = data["models"] if isinstance(data, dict) else data
        for e in items:
            e.pop("tokenizer", None)
        f.write_text(json.dumps(data))
    monkeypatch.setenv("SPEC_PLANNER_CATALOG", str(cat))
    t, d = load_spec("qwen2.5-7b"), load_spec("qwen2.5-0.5b")
    assert t.tokenizer is None and d.tokenizer is None
    r = pairing.pair(t, d)
    assert r.basis == "none" and any("lower confidence" in n for n in r.notes)
    assert r.same_tokenizer is None and r.overlap is None
    assert r.verdicts["llama.cpp"].compatible and r.verdicts["llama.cpp"].confidence == "lower"
    assert r.verdicts["vllm"].failed_rule == "vocab_size" and r.verdicts["vllm"].confidence == "exact"
    # mlx-lm without tokenizer facts: config sizes, lower confidence
    assert not r.verdicts["mlx"].compatible and r.verdicts["mlx"].confidence == "lower"


def test_moe_target_and_context_advice():
    t, d = load_spec("qwen3-30b-a3b"), load_spec("qwen3-0.6b")
    r = pairing.pair(t, d, context=65536)
    moe = [a for a in r.advice if a.code == "moe"]
    assert len(moe) == 1 and f"{t.moe.experts} experts" in moe[0].message
    size = [a for a in r.advice if a.code == "draft_size" and "active" in a.message]
    assert size and f"{d.params_active / t.params_active:.0%}" in size[0].message
    ctx = [a for a in r.advice if a.code == "context"]
    assert ctx[0].severity == "warning" and str(d.max_context) in ctx[0].message  # 40960 < 65536


def test_draft_larger_than_target_is_an_error():
    r = pairing.pair(load_spec("qwen2.5-0.5b"), load_spec("qwen2.5-7b"))
    assert any(a.code == "draft_size" and a.severity == "error" for a in r.advice)


def test_engine_names_have_one_spelling_everywhere():
    """Pairing uses the registry's names: the same ones memory, fit and recommend use (no 'mlx-lm' key)."""
    from planner import engines

    assert engines.canonical("MLX") == "mlx" == engines.canonical("mlx-lm")
    assert engines.canonical("llamacpp") == "llama.cpp"
    r = pairing.pair(load_spec("qwen2.5-7b"), load_spec("qwen2.5-0.5b"))
    assert tuple(r.verdicts) == engines.names() == ("llama.cpp", "vllm", "sglang", "transformers", "mlx")
    with pytest.raises(UsageError, match=re.escape("expected one of llama.cpp, vllm, sglang, transformers, mlx")):
        engines.canonical("tgi")


# --- CLI ------------------------------------------------------------------------------------------


def test_cli_json_schema_and_exit_codes(tmp_path, capsys):
    tok = trained_bpe(seed=0)
    n = tok.get_vocab_size(True)
    t = tokenizer_dir(tmp_path, "t", tok, base="Qwen2.5-7B", tokenizer_config=TC, vocab_size=n + 128)
    d = tokenizer_dir(tmp_path, "d", tok, tokenizer_config=TC)
    code, out, _ = run(["pair", str(t), str(d), "--json"], capsys)
    assert code == 0  # llama.cpp and mlx-lm accept: not incompatible for every engine
    data = json.loads(out)
    assert {"engines", "same_tokenizer", "vocab_overlap", "family_match", "advice"} <= set(data)
    assert set(data["engines"]) == {"llama.cpp", "vllm", "sglang", "transformers", "mlx"}
    for v in data["engines"].values():
        assert set(v) >= {"compatible", "failed_rule", "fallback", "detail"}
    assert data["engines"]["vllm"]["failed_rule"] == "vocab_size"
    assert data["same_tokenizer"] is True and data["vocab_overlap"] == 1.0
    assert all(set(a) >= {"severity", "message"} and a["severity"] in SEVERITIES for a in data["advice"])
    assert run(["pair", str(t), str(d), "--engine", "vllm"], capsys)[0] == 1
    assert run(["pair", str(t), str(d), "--engine", "llama.cpp"], capsys)[0] == 0
    # SGLang STANDALONE compares config vocab_size exactly (standalone_worker_v2.py): padded Qwen sizes refuse
    assert run(["pair", str(t), str(d), "--engine", "sglang"], capsys)[0] == 1
    code, _, err = run(["pair", str(t), str(d), "--engine", "tgi"], capsys)
    assert code == 2 and err.startswith("error: Cannot use engine 'tgi'")
    code, _, err = run(["pair", str(t), str(tmp_path / "missing")], capsys)
    assert code == 2 and err.count("\n") == 1


def test_cli_table_and_all_engines_refuse(tmp_path, capsys):
    t = tokenizer_dir(tmp_path, "t", trained_bpe(seed=0), base="Qwen2.5-7B", tokenizer_config=TC)
    code, out, _ = run(["pair", str(t), str(bert_dir(tmp_path))], capsys)
    assert code == 1
    assert "vocab_type" in out and "advice:" in out and "use_heterogeneous_vocab" in out


def test_pair_never_imports_transformers_tokenizers_or_torch():
    import subprocess
    import sys

    code = ("import sys\nfrom planner.cli import main\ntry:\n    main(['pair', 'qwen2.5-7b', 'qwen2.5-0.5b', '--json'])\n"
            "except SystemExit as e:\n    assert e.code == 0, e.code\n"
            "heavy = [m for m in ('torch', 'transformers', 'tokenizers') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_gguf_and_tokenizer_json_holding_one_table_agree(tmp_path):
    """A real GGUF (SmolLM2-135M-Instruct) against a tokenizer.json rebuilt from its token list."""
    from tokenizers import models, pre_tokenizers

    from .gguf_dir import gguf_test_dir

    path = gguf_test_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        pytest.skip(f"{path} not found: run 'python scripts/fetch_ggufs.py' (or set SPEC_PLANNER_GGUF_DIR)")
    g = load_spec(str(path))
    gfp = g.tokenizer
    toks = gfp.tokens
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(toks)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.add_special_tokens(list(gfp.special_tokens))
    tc = {"bos_token": toks[gfp.bos_id], "eos_token": toks[gfp.eos_id], "add_bos_token": gfp.add_bos}
    same = tokenizer_dir(tmp_path, "same", tok, base="SmolLM2-360M", tokenizer_config=tc)
    hf = load_spec(str(same))
    r = pairing.pair(g, hf, target_tokenizer=fingerprint_for(g), draft_tokenizer=fingerprint_for(hf))
    assert fingerprint_for(hf).vocab_hash == gfp.vocab_hash  # one digest definition for both sources
    assert r.same_tokenizer is True and r.verdicts["llama.cpp"].compatible
    assert r.verdicts["llama.cpp"].confidence == "exact" and f"ids 5..{len(toks) - 1}" in r.verdicts["llama.cpp"].detail
    # One token changed at id 1000: llama.cpp names it.
    vocab = {t: i for i, t in enumerate(toks)}
    vocab.pop(toks[1000])
    vocab["changed-token"] = 1000
    tok2 = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok2.add_special_tokens(list(gfp.special_tokens))
    other = load_spec(str(tokenizer_dir(tmp_path, "other", tok2, base="SmolLM2-360M", tokenizer_config=tc)))
    r2 = pairing.pair(g, other, target_tokenizer=gfp, draft_tokenizer=fingerprint_for(other))
    assert r2.verdicts["llama.cpp"].failed_rule == "token_text"
    assert f"token 1000 differs: target {toks[1000]!r}, draft 'changed-token'" in r2.verdicts["llama.cpp"].detail
