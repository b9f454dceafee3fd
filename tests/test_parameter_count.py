"""No function below the CLI faces takes more than 10 parameters (issue #27: settings objects, not 20-keyword calls).

Why: a 22-parameter `recommend()` made every caller thread the same keywords and every re-plan rebuild them;
the plan now takes small frozen objects grouped by concept (plan/request.py) that the CLI builds at the edge.
The typer command functions in planner/commands/ are exempt (typer reads one parameter per CLI option) but
their helpers are not. The baseline below held more when this test was added; it shrinks, it never grows.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIMIT = 10
# (file, function) -> parameters when the limit was set: the rest to turn into objects
BASELINE = {
    ("planner/commands/probe.py", "_measured"): 17,
    ("planner/commands/_bench_endpoint.py", "bench_endpoint"): 17,  # the bench command's flags, passed through
    ("planner/commands/bench.py", "_run"): 15,
    ("planner/probe/runner.py", "_finish"): 13,
    ("planner/speed/adaptive_predict.py", "_predict_adaptive"): 12,
    ("planner/probe/acceptance.py", "measure_acceptance"): 12,
    ("planner/bench/runner.py", "run_pair"): 12,
    ("planner/sources/arch/base.py", "attention"): 11,
    ("planner/probe/curves.py", "_probe_samples"): 11,
}


def count(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters a caller can pass (self/cls not counted; *args and **kwargs one each)."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    n = len(positional) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    return n - (1 if positional and positional[0].arg in ("self", "cls") else 0)


def _is_command(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A typer command (decorated `@app.command(...)`): one parameter per CLI option by design."""
    return any(isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "command"
               for d in fn.decorator_list)


def wide_functions(root: Path = REPO / "planner") -> dict[tuple[str, str], int]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.name
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _is_command(node):
                n = count(node)
                if n > LIMIT:
                    out[(rel, node.name)] = n
    return out


def test_no_new_function_takes_more_than_ten_parameters():
    wide = wide_functions()
    new = {k: n for k, n in wide.items() if k not in BASELINE}
    assert new == {}, f"more than {LIMIT} parameters (group them in a frozen dataclass, as plan/request.py): {new}"
    grown = {k: (BASELINE[k], n) for k, n in wide.items() if k in BASELINE and n > BASELINE[k]}
    assert grown == {}, f"a baseline function took more parameters (baseline, now): {grown}"


def test_the_baseline_only_shrinks():
    # an entry that is fixed is removed, so the list cannot grow stale
    wide = wide_functions()
    assert [k for k in BASELINE if k not in wide] == []


def test_the_count_sees_keywords_varargs_and_skips_self(tmp_path):
    p = tmp_path / "x.py"
    p.write_text("class C:\n    def m(self, a, b, /, c, *d, e, f=1, **g):\n        pass\n")
    fn = next(n for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.FunctionDef))
    assert count(fn) == 7  # a, b, c, *d, e, f, **g
    q = tmp_path / "y.py"
    q.write_text("@app.command()\ndef face(" + ", ".join(f"p{i}" for i in range(12)) + "):\n    pass\n"
                 "def helper(" + ", ".join(f"p{i}" for i in range(11)) + "):\n    pass\n")
    assert wide_functions(tmp_path) == {("y.py", "helper"): 11}
