"""The engine is resolved once, where a plan starts, and the resolved `Engine` travels down (issue #27).

Why: a name looked up again in every room (54 `engines.get(` calls before) hides which engine a function
uses, costs a look-up per ledger layer, and lets a typo'd name travel far before it fails. The CLI's entry
points (planner/commands/) and the registry (planner/engines/, with `engines.resolve` for `--engine auto`)
resolve names; fits.memory.Settings is made with the Engine its caller resolved and carries it
(`Settings.resolved_engine`); below them functions take `engine: Engine`. This test fails on an
`engines.get(` anywhere else, with no allowance.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLANNER = REPO / "planner"
ENTRY_POINTS = ("planner/engines/", "planner/commands/")
# (file, function) pairs allowed to resolve a name, each with why: none. Settings takes the Engine its caller
# resolved; the kernel catalogue's calibration engine is resolved through the registry when it loads.
ALLOWED: dict[tuple[str, str], str] = {}


def engine_lookups(path: Path, rel: str) -> list[tuple[int, str]]:
    """(line, enclosing function) of every `engines.get(...)` call or `from ..engines import get` in `path`."""
    tree = ast.parse(path.read_text())
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, func: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and child.func.attr == "get"
                    and isinstance(child.func.value, ast.Name) and child.func.value.id == "engines"):
                found.append((child.lineno, func))
            if (isinstance(child, ast.ImportFrom) and (child.module or "").split(".")[-1] == "engines"
                    and any(a.name == "get" for a in child.names)):
                found.append((child.lineno, func))
            visit(child, name)

    visit(tree, "<module>")
    return found


def test_no_engine_lookup_by_name_outside_the_registry_and_the_entry_points():
    stray = []
    for path in sorted(PLANNER.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(ENTRY_POINTS):
            continue
        stray += [f"{rel}:{line} in {func}()" for line, func in engine_lookups(path, rel) if (rel, func) not in ALLOWED]
    assert stray == [], "engines.get( outside the registry and the CLI's entry points (pass the resolved Engine " \
                        "down instead): " + ", ".join(stray)


def test_no_lookup_is_allowed_below_the_entry_points():
    # the list is empty and stays so: a new allowance is a name resolved below where the plan starts
    assert ALLOWED == {}


def test_the_scan_catches_a_lookup(tmp_path):
    p = tmp_path / "x.py"
    p.write_text("from .. import engines\nfrom ..engines import get\n\ndef f(name):\n    return engines.get(name).kv_options\n")
    assert engine_lookups(p, "planner/plan/x.py") == [(2, "<module>"), (5, "f")]


def test_settings_carry_the_engine_their_caller_resolved():
    from dataclasses import replace

    import pytest

    from planner import engines
    from planner.fits.memory import Settings

    llama = engines.get("llama-cpp")  # an alias, resolved once by the caller
    s = Settings(resolved_engine=llama)
    assert s.engine == "llama.cpp" and s.resolved_engine is llama
    assert replace(s, resolved_engine=engines.get("vllm")).engine == "vllm"  # the name follows the Engine
    assert s == Settings(resolved_engine=engines.get("llama.cpp")) and hash(s) == hash(Settings(resolved_engine=llama))
    assert Settings().resolved_engine is engines.get("transformers")  # no machine named: the registry's default
    with pytest.raises(TypeError, match="resolved Engine"):
        Settings(resolved_engine="vllm")  # a name is resolved where the plan starts, not here
    with pytest.raises(TypeError):
        Settings(engine="vllm")  # type: ignore[call-arg]  (the name is derived, not given)
    assert engines.resolve(None, "gpu") is engines.get("vllm") and engines.resolve("mlx", "gpu").name == "mlx"
