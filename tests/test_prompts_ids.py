"""Token-id prompts (probe/acceptance.py parse_prompts): what a folder without tokenizer files is benched on."""

from __future__ import annotations

import pytest

from planner.core.errors import ConfigError
from planner.probe.acceptance import MAX_PROMPT_TOKENS, Prompt, parse_prompts


def test_ids_and_text_entries_side_by_side():
    got = parse_prompts('{"prompts": [{"kind": "code", "ids": [1, 2, 3]}, "hello", {"text": "x"}]}', "p.json")
    assert got == (Prompt("code", "", (1, 2, 3)), Prompt("custom", "hello"), Prompt("custom", "x"))


@pytest.mark.parametrize("ids", ["[]", "[-1]", "[1.5]", "[true]", '"1 2"', f"[{', '.join(['1'] * (MAX_PROMPT_TOKENS + 1))}]"])
def test_bad_ids_are_one_error_naming_the_entry(ids):
    with pytest.raises(ConfigError, match="entry 0 has bad 'ids'"):
        parse_prompts(f'{{"prompts": [{{"ids": {ids}}}]}}', "p.json")
