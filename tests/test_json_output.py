"""`--json` output carries `schema_version` (docs/json.md): first key of every object, lists left bare."""

from __future__ import annotations

import json

import pytest

from planner.cli import main
from planner.commands._common import emit
from planner.core.constants import JSON_SCHEMA_VERSION


def _json(capsys, argv: list[str]):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0
    return json.loads(capsys.readouterr().out)


def test_emit_puts_schema_version_first_and_leaves_lists_alone(capsys):
    emit({"a": 1})
    assert list(json.loads(capsys.readouterr().out).items()) == [("schema_version", 1), ("a", 1)]
    emit([{"a": 1}])
    assert json.loads(capsys.readouterr().out) == [{"a": 1}]


@pytest.mark.parametrize("argv", [["memory", "llama-3.1-8b", "--json"], ["machines", "show", "h100-sxm", "--json"],
                                  ["machines", "detect", "--json"]])
def test_objects_start_with_schema_version(capsys, argv):
    out = _json(capsys, argv)
    assert next(iter(out)) == "schema_version" and out["schema_version"] == JSON_SCHEMA_VERSION == 1


@pytest.mark.parametrize("argv", [["catalog", "--json"], ["machines", "list", "--json"]])
def test_lists_stay_lists(capsys, argv):
    out = _json(capsys, argv)
    assert isinstance(out, list) and out and "schema_version" not in out[0]
