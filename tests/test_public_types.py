"""``openclaw_runtime.types`` is the public home of the plugin contract's types, and the
first-party plugins (``plugins/*``, ``contrib/*``) import no private module of the core.

A private module is any ``openclaw_runtime`` module path with a part starting with ``_``
(``openclaw_runtime._types``, ``openclaw_runtime.x._y``, ``from openclaw_runtime import _z``);
a plugin's own private modules (``openclaw_runtime_google._turns``) are its business.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import openclaw_runtime
from openclaw_runtime import _types, hookspecs, types

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_FILES = sorted(
    path
    for tree in ("plugins", "contrib")
    for path in (ROOT / tree).rglob("*.py")
    if not any(part.startswith(".") or part in {"build", "dist"} for part in path.parts)
)


def is_private_core_module(name: str) -> bool:
    """``openclaw_runtime`` path with a ``_x`` part (dunders such as ``__version__`` are
    public)."""
    parts = name.split(".")
    return parts[0] == "openclaw_runtime" and any(
        p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in parts[1:]
    )


def private_core_imports(source: str) -> list[str]:
    """The private ``openclaw_runtime`` modules ``source`` imports (module paths)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if not is_private_core_module(node.module):
                names += [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found += [name for name in names if is_private_core_module(name)]
    return found


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from openclaw_runtime.types import RegisterComponent", []),
        ("from openclaw_runtime import hookimpl, Runtime", []),
        ("from openclaw_runtime._types import RegisterComponent", ["openclaw_runtime._types"]),
        ("import openclaw_runtime._plugins as p", ["openclaw_runtime._plugins"]),
        ("from openclaw_runtime import _runtime", ["openclaw_runtime._runtime"]),
        ("from openclaw_runtime.runner import _x", ["openclaw_runtime.runner._x"]),
        ("from openclaw_runtime_google._turns import f", []),
        ("from ._provider import f", []),
        ("def f():\n    from openclaw_runtime._hooks import Hooks\n", ["openclaw_runtime._hooks"]),
        ("from openclaw_runtime import __version__", []),
    ],
)
def test_private_core_imports(source: str, expected: list[str]) -> None:
    assert sorted(set(private_core_imports(source))) == expected


def test_there_are_first_party_plugins_to_scan() -> None:
    plugin_modules = {p.parent.name for p in PLUGIN_FILES if p.name == "plugin.py"}
    assert {
        "openclaw_runtime_anthropic",
        "openclaw_runtime_google",
        "openclaw_runtime_openai",
        "openclaw_runtime_redis",
        "openclaw_runtime_hello",
        "openclaw_runtime_sliding_window",
    } <= plugin_modules


def test_first_party_plugins_import_no_private_core_module() -> None:
    offenders = {
        str(path.relative_to(ROOT)): hits
        for path in PLUGIN_FILES
        if (hits := private_core_imports(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_types_exports_exist_and_are_sorted() -> None:
    assert types.__all__ == sorted(types.__all__)
    missing = [name for name in types.__all__ if not hasattr(types, name)]
    assert missing == []


def test_register_callbacks_are_the_ones_the_hookspecs_name() -> None:
    for name in _types.__all__:
        assert getattr(types, name) is getattr(_types, name)


def test_every_type_a_hookspec_names_is_public() -> None:
    """Each annotation of each hook is a builtin, typing, pluggy, or a name of ``types``;
    a name may be read through a package face (``failover.FailoverSignal``: the hookspecs
    name what start-up does not load that way) when the face hands out that same object."""
    allowed = {"None", "Any", "list", "str", "int", "bool", "Mapping", "pluggy", "PluginManager"}
    unexplained = {}
    for hook in hookspecs.__all__:
        signature = inspect.signature(getattr(hookspecs, hook))
        annotations = [p.annotation for p in signature.parameters.values()]
        annotations.append(signature.return_annotation)
        names = set()
        for face, name in re.findall(
            r"(?:([A-Za-z_]\w*)\.)?([A-Za-z_]\w*)", " ".join(map(str, annotations))
        ):
            if face and face != "pluggy":
                home = getattr(openclaw_runtime, face)
                assert inspect.ismodule(home) and name in home.__all__, (hook, face, name)
                assert getattr(home, name) is getattr(types, name), (hook, face, name)
            names.add(name)
        extra = names - allowed - set(types.__all__)
        if extra:
            unexplained[hook] = sorted(extra)
    assert unexplained == {}


def test_the_package_face_does_not_shadow_the_types_module() -> None:
    assert openclaw_runtime.types is types
