"""The checked-in corpus of malformed inputs (tests/fixtures/corpus/<reader>/), run through the CLI.

Each reader directory has a README.md whose table lists every file: where the runner places it,
what it exercises, and the fragment the one-line error must contain ("(accepted)": a former crash
that is now read, exit 0/1 with valid JSON). Files found by fuzzing are minimised inputs of the
bugs they fixed. The table and the directory must list the same files.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from .fuzz.harness import CORPUS, CliRun, run_cli
from .fuzz.safetensors_inputs import SHARD_FILES, TINY
from .fuzz.tokenizer_inputs import TOKENIZER_CONFIG, TOKENIZER_MODEL_CONFIG, TOKENIZERS

READERS = ("safetensors", "index", "config", "tokenizer", "gguf", "policy", "machine", "profile", "bench")
_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|([^|]*)\|\s*(.+?)\s*\|\s*$")


def corpus_table(reader: str) -> list[tuple[str, str, str]]:
    """(file, placed as, expected fragment) rows of tests/fixtures/corpus/<reader>/README.md."""
    rows = []
    for line in (CORPUS / reader / "README.md").read_text().splitlines():
        m = _ROW.match(line)
        if m:
            expected = m.group(4).strip()
            rows.append((m.group(1), m.group(2), expected.strip("`") if expected.startswith("`") else expected))
    return rows


def _cases() -> list[tuple[str, str, str, str]]:
    return [(reader, *row) for reader in READERS for row in corpus_table(reader)]


def run_corpus_file(reader: str, name: str, placed_as: str, work: Path) -> tuple[CliRun, Path]:
    """Put the corpus file where its reader finds it and run the command that reads it."""
    src = CORPUS / reader / name
    if reader in ("safetensors", "index", "config"):
        d = work / "model"
        d.mkdir()
        if reader != "config":
            (d / "config.json").write_text(json.dumps(TINY))
        if reader == "index":
            for shard, data in SHARD_FILES.items():
                (d / shard).write_bytes(data)
        target = d / placed_as
        shutil.copyfile(src, target)
        # an index error may name the shard or the checkpoint directory it concerns
        return run_cli(["memory", str(d), "--json"], [target, d] if reader == "index" else [target]), target
    if reader == "tokenizer":
        good, bad = work / "target", work / "draft"
        for d in (good, bad):
            d.mkdir()
            (d / "config.json").write_text(json.dumps(TOKENIZER_MODEL_CONFIG))
            (d / "tokenizer.json").write_text(json.dumps(TOKENIZERS["bpe"]))
            side = {k: v for k, v in TOKENIZER_CONFIG.items() if k != "chat_template" or d == good}
            (d / "tokenizer_config.json").write_text(json.dumps(side))  # the draft's template comes from its file
        if placed_as == "vocab.json":
            (bad / "tokenizer.json").unlink()  # vocab.json is read only when there is no tokenizer.json
        target = bad / placed_as
        shutil.copyfile(src, target)
        return run_cli(["pair", str(good), str(bad), "--json"], [target]), target
    target = work / placed_as
    shutil.copyfile(src, target)
    args = {"gguf": ["memory", str(target), "--json"],
            "policy": ["check", "--config", str(target), "--json"],
            "machine": ["machines", "show", str(target), "--json"],
            "profile": ["recommend", "smollm2-135m", "--profile", str(target), "--machine", "rtx-4090", "--json"],
            "bench": ["probe", "--import", str(target), "--json"]}[reader]
    return run_cli(args, [target]), target


@pytest.mark.parametrize("reader", READERS)
def test_readme_lists_every_corpus_file(reader):
    listed = [row[0] for row in corpus_table(reader)]
    present = sorted(p.name for p in (CORPUS / reader).iterdir() if p.name != "README.md")
    assert sorted(listed) == present, f"README.md and files differ in corpus/{reader}"
    assert len(listed) == len(set(listed))


@pytest.mark.parametrize(("reader", "name", "placed_as", "expected"), _cases(),
                         ids=[f"{c[0]}/{c[1]}" for c in _cases()])
def test_corpus_file_fails_cleanly(reader, name, placed_as, expected, tmp_path):
    r, _target = run_corpus_file(reader, name, placed_as, tmp_path)
    if expected == "(accepted)":
        assert r.code in (0, 1), r.err
        return
    assert r.code == 2, f"{reader}/{name}: exit {r.code}, stderr {r.err!r}"
    assert expected in r.err, f"{reader}/{name}: {expected!r} not in {r.err!r}"
