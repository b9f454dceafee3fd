"""Rules the code keeps (docs/architecture.md), checked on the source itself with `ast`.

- the import graph of planner/ has no cycle, and no import runs against the layer order;
- torch, transformers, accelerate and matplotlib are imported only where measuring happens (the plots are SVG by hand);
- no module is over MAX_MODULE_LINES lines;
- the project's own modules are imported at module top (lazy imports are for heavy third-party packages;
  DEFERRED_IMPORTS names the few a command face defers to the one path that needs them, for start-up);
- an engine's name is spelled (as a whole string) only in planner/engines/;
- the defaults that several commands share (context, largest K) are defined once, in core/constants.py;
- `except Exception` only where the handler re-raises (cleanup, or translating a third-party error at a
  boundary) or in the CLI's last line of defence: never to swallow what a parser raised.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "planner"

# Lowest first: a module may import its own folder and the folders before it, never one after it.
LAYERS = ("core", "sources", "engines", "fits", "pairing", "speed", "drafting", "plan", "render", "probe", "bench",
          "commands", "cli")
HEAVY = ("torch", "transformers", "accelerate", "matplotlib")
# Where the heavy packages may be imported: measuring (probe, bench); no module draws with matplotlib.
HEAVY_ALLOWED = ("planner.probe", "planner.bench")
# A ceiling, not a carving rule (issue #27: split by concept; ~450 lines is the smell the before-stop hook
# names, this is where a module has plainly outgrown one idea).
MAX_MODULE_LINES = 600
ENGINE_NAMES = {"llama.cpp", "vllm", "sglang", "mlx", "mlx-lm", "transformers"}
ENGINE_NAMES_ALLOWED = ("planner.engines",)
# Where "transformers" names the library the code drives (probe, bench), not the engine.
LIBRARY_NAME_ALLOWED = HEAVY_ALLOWED


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, tuple[Path, ast.Module]]:
    return {_module_name(p): (p, ast.parse(p.read_text(), str(p))) for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(module: str, path: Path, node: ast.ImportFrom | ast.Import) -> list[str]:
    """Project modules an import statement names (a `from pkg import sub` names pkg.sub)."""
    mods = modules()
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("planner")]
    if node.level:
        base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if not target.startswith("planner"):
        return []
    return [f"{target}.{a.name}" if f"{target}.{a.name}" in mods else target for a in node.names]


def _imports(tree: ast.Module):
    """(node, inside a function?) for every import statement."""
    def walk(node, in_func):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_func
            yield from walk(child, in_func or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))
    yield from walk(tree, False)


@cache
def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for name, (path, tree) in modules().items():
        for node, _ in _imports(tree):
            for target in _resolve(name, path, node):
                if target in modules() and target != name:
                    edges[name].add(target)
    return edges


def _layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "cli"  # planner/__init__ re-exports: the top
    return LAYERS.index(top) if top in LAYERS else LAYERS.index("cli")


def test_no_import_cycles():
    edges, seen, stack, cycles = graph(), set(), [], []

    def visit(m, on_path):
        seen.add(m)
        stack.append(m)
        on_path.add(m)
        for t in sorted(edges.get(m, ())):
            if t in on_path:
                cycles.append([*stack[stack.index(t):], t])
            elif t not in seen:
                visit(t, on_path)
        on_path.discard(m)
        stack.pop()

    for m in sorted(modules()):
        if m not in seen:
            visit(m, set())
    assert cycles == []


def test_no_import_against_the_layer_order():
    bad = sorted(f"{m} -> {t}" for m, ts in graph().items() for t in ts if _layer(t) > _layer(m))
    assert bad == []


def test_every_folder_has_a_layer():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders <= set(LAYERS)


def test_heavy_packages_only_where_measuring_or_plotting():
    bad = []
    for name, (_, tree) in modules().items():
        if name.startswith(HEAVY_ALLOWED):
            continue
        for node, _ in _imports(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            bad += [f"{name}: {n}" for n in names if n.split(".")[0] in HEAVY and not getattr(node, "level", 0)]
    assert bad == []


def test_no_module_over_the_line_limit():
    sizes = {name: len(path.read_text().splitlines()) for name, (path, _) in modules().items()}
    assert {n: s for n, s in sizes.items() if s > MAX_MODULE_LINES} == {}


# Start-up (issue #33): the project's own imports a command face may defer to the one path that needs them,
# so the common call never loads them. The graph above still sees them (cycles, layer order).
DEFERRED_IMPORTS = {
    "planner.commands._ledger": {"planner.commands._methods"},  # --draft/--method only: drafting, speed, pairing
    # typer's app and what it needs of the faces: only when the fast path (commands/_fastcli.py) steps aside
    # and the root's --help page (commands/_fasthelp.py), read only when that is the whole argv
    "planner.cli": {"planner.commands._common", "planner.commands._fastparse", "planner.commands._fasthelp"},
    # the GGUF reader (header, arch rules, tokenizer) only for a .gguf: a folder's ledger is the common call
    "planner.sources": {"planner.sources.gguf"},
    "planner.sources.resolve": {"planner.sources.gguf"},
}


def test_project_modules_are_imported_at_module_top():
    """A function-level import of the project's own module hides the real graph (and usually a cycle)."""
    bad = []
    for name, (path, tree) in modules().items():
        for node, in_func in _imports(tree):
            if in_func and set(_resolve(name, path, node)) - DEFERRED_IMPORTS.get(name, set()):
                bad.append(f"{name}:{node.lineno}")
    assert bad == []


def test_engine_names_are_spelled_only_in_the_engine_files():
    bad = []
    for name, (_, tree) in modules().items():
        if name.startswith(ENGINE_NAMES_ALLOWED):
            continue
        names = ENGINE_NAMES - {"transformers"} if name.startswith(LIBRARY_NAME_ALLOWED) else ENGINE_NAMES
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                bad.append(f"{name}:{node.lineno} {node.value!r}")
    assert bad == []


SHARED_DEFAULT_NAMES = {"context": (4096, "4096"), "max_k": (8,), "k_max": (8,)}


def _named_defaults(node: ast.AST):
    """(name, default value node) of function parameters and annotated class fields."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        pos = [*node.args.posonlyargs, *node.args.args]
        yield from zip([a.arg for a in pos[len(pos) - len(node.args.defaults):]], node.args.defaults, strict=True)
        yield from ((a.arg, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True)
                      if d is not None)
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        yield node.target.id, node.value


def test_shared_defaults_are_defined_once():
    """The default context (4096) and the largest K (8) are core/constants.py names, used by reference."""
    bad = []
    for name, (_, tree) in modules().items():
        if name == "planner.core.constants" or name.startswith("planner.sources.arch"):
            continue  # architecture files carry the transformers config classes' own defaults
        for node in ast.walk(tree):
            for arg, d in _named_defaults(node):
                if isinstance(d, ast.Constant) and d.value in SHARED_DEFAULT_NAMES.get(arg, ()):
                    bad.append(f"{name}:{d.lineno} {arg}={d.value!r}")
    assert bad == []


# The CLI's last line of defence, and the Hub's worker threads, which hand every exception to the
# waiting thread to be raised there (a deadline needs threads; an exception escaping one prints a traceback).
BROAD_EXCEPT_ALLOWED = ("planner.cli", "planner.sources.hub_http")


def test_broad_except_only_to_reraise():
    bad = []
    for name, (_, tree) in modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ExceptHandler) and isinstance(node.type, ast.Name) \
                    and node.type.id in ("Exception", "BaseException") and name not in BROAD_EXCEPT_ALLOWED \
                    and not any(isinstance(n, ast.Raise) for n in ast.walk(node)):
                bad.append(f"{name}:{node.lineno}")
    assert bad == []
