"""The house plan, checked: layers only point down, no import circle, small modules, plain faces.

docs/architecture.md describes the plan; these tests keep the code honest to it. They read the
source with ``ast`` (nothing is imported), so they see type-only imports too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "openclaw_runtime"

# Layer of each top-level name under openclaw_runtime; a module may import its own layer or below.
LEAF, KERNEL, POLICY, RUNNER, RUNTIME, FRONT = range(6)
LAYER_NAMES = {
    LEAF: "leaf",
    KERNEL: "kernel",
    POLICY: "policy",
    RUNNER: "runner",
    RUNTIME: "runtime",
    FRONT: "cli/testing",
}
LAYERS: dict[str, int] = {
    "agent": KERNEL,
    **dict.fromkeys(
        (
            "failover",
            "auth",
            "context",
            "transcript",
            "repair",
            "providers",
            "containment",
            "backends",
            "toolpolicy",
            "prompt",
            "reply",
            "config",
            "_types",
        ),
        POLICY,
    ),
    "runner": RUNNER,
    **dict.fromkeys(
        (
            "_runtime",
            "_runtime_live",
            "_plugins",
            "hookspecs",
            "_hooks",
            "_components",
            "_backend_selection",
            "_memory_mode",
            "_plugin_report",
            "_plugin_settings",
            "_plugin_components",
            "_public_errors",
            "builtins",
        ),
        RUNTIME,
    ),
    **dict.fromkeys(("", "__main__", "cli", "commands", "demo", "testing", "types"), FRONT),
}

MAX_LINES = 800
SINGLE_PURPOSE_LINES = 500
MAX_FACE_LINES = 100
# Modules allowed over MAX_LINES because they are pure data (pattern tables), not logic.
DATA_TABLES = {"failover/patterns.py"}
LAZY_MARKER = "# lazy:"


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    in_function: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    return LAYERS.get(top, LEAF)


def _resolve(source: str, path: Path, node: ast.ImportFrom | ast.Import) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    package = source if path.name == "__init__.py" else source.rsplit(".", 1)[0]
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        target = ".".join(base) + (f".{node.module}" if node.module else "")
    else:
        target = node.module or ""
    yield target
    yield from (f"{target}.{alias.name}" for alias in node.names)


def imports_of(source: str, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                for target in _resolve(source, path, child):
                    if target in MODULES and target != source:
                        found.append(Import(source, target, child.lineno, in_function))
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            visit(child, inner)

    visit(tree, False)
    return found


IMPORTS: list[Import] = [imp for name, path in MODULES.items() for imp in imports_of(name, path)]


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one module (the circles)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_strongly_connected_finds_a_circle_and_only_circles():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert strongly_connected(edges) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_type_only_imports_included():
    edges: dict[str, set[str]] = {name: set() for name in MODULES}
    for imp in IMPORTS:
        if not imp.in_function:
            edges[imp.source].add(imp.target)
    assert strongly_connected(edges) == []


def test_function_level_imports_say_why_they_are_lazy():
    """An import inside a function exists for start-up time only, and says so."""
    undeclared = []
    for imp in IMPORTS:
        if not imp.in_function:
            continue
        lines = MODULES[imp.source].read_text(encoding="utf-8").splitlines()
        window = lines[max(0, imp.line - 2) : imp.line + 1]
        if not any(LAZY_MARKER in line for line in window):
            undeclared.append(f"{imp.source}:{imp.line} -> {imp.target}")
    assert undeclared == []


def test_layers_only_point_down():
    upward = [
        f"{imp.source} ({LAYER_NAMES[layer_of(imp.source)]}) -> "
        f"{imp.target} ({LAYER_NAMES[layer_of(imp.target)]})"
        for imp in IMPORTS
        if layer_of(imp.target) > layer_of(imp.source)
    ]
    assert upward == []


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


@pytest.mark.parametrize("path", sorted(MODULES.values()), ids=_relative)
def test_module_size(path: Path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if _relative(path) in DATA_TABLES:
        return
    assert lines <= MAX_LINES, f"{_relative(path)} has {lines} lines (max {MAX_LINES})"
    if lines > SINGLE_PURPOSE_LINES:
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert docstring, f"{_relative(path)} has {lines} lines and no docstring naming its purpose"


def test_data_tables_are_data():
    """A module exempt from the size limit holds tables and thin predicates over them only."""
    for name in DATA_TABLES:
        tree = ast.parse((PACKAGE / name).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                assert len(node.body) <= 12, f"{name}:{node.name} is logic, not a table lookup"
            assert not isinstance(node, ast.ClassDef), f"{name}:{node.name} is a class"


FACES = sorted(PACKAGE.rglob("__init__.py"))


def _is_reexport(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import | ast.ImportFrom):
        return True
    target = node.target if isinstance(node, ast.AugAssign) else None
    return isinstance(target, ast.Name) and target.id == "__all__"


#: A face may re-export lazily (start-up time): a name table and the shared loader
#: (``__getattr__ = _lazy_getattr(__name__, _LAZY)``, ``openclaw_runtime._lazy_face``). Nothing else.
LAZY_FACE_NAMES = {"_LAZY"}


def _is_lazy_getattr(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Assign)
        and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["__getattr__"]
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "_lazy_getattr"
    )


@pytest.mark.parametrize("path", FACES, ids=_relative)
def test_package_faces_only_reexport(path: Path):
    source = path.read_text(encoding="utf-8")
    lines = len(source.splitlines())
    assert lines <= MAX_FACE_LINES, f"{_relative(path)} has {lines} lines"
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if names <= {"__all__", "__version__"} | LAZY_FACE_NAMES:
                continue
        if isinstance(node, ast.If) and all(_is_reexport(child) for child in node.body):
            continue  # TYPE_CHECKING, or names that need an optional dependency
        if _is_lazy_getattr(node):
            continue
        raise AssertionError(f"{_relative(path)}:{node.lineno} is not a re-export")
