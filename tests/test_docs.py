"""The hook reference stays in step with the hookspecs (datasette's meta-tests)."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
import types
from pathlib import Path

import pytest

from openclaw_runtime import hookspecs
from openclaw_runtime._plugins import get_plugin_manager

DOCS = Path(__file__).resolve().parent.parent / "docs" / "plugin-hooks.md"
HOOK_TESTS = Path(__file__).resolve().parent / "test_hooks.py"
HOOKS = sorted(hookspecs.__all__)


def doc_sections() -> dict[str, str]:
    text = DOCS.read_text(encoding="utf-8")
    sections = {}
    for match in re.finditer(r"^### (\w+)\((.*?)\)\n(.*?)(?=^### |\Z)", text, re.M | re.S):
        sections[match.group(1)] = (match.group(2), match.group(3))
    return sections


def test_hookspecs_all_is_sorted_and_complete():
    declared = [
        name
        for name, value in vars(hookspecs).items()
        if isinstance(value, types.FunctionType) and hasattr(value, "openclaw_runtime_spec")
    ]
    assert hookspecs.__all__ == sorted(hookspecs.__all__)
    assert sorted(declared) == HOOKS


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented_with_its_exact_signature(hook):
    sections = doc_sections()
    assert hook in sections, f"docs/plugin-hooks.md has no section for {hook}"
    documented_args = [a.strip() for a in sections[hook][0].split(",") if a.strip()]
    assert documented_args == list(inspect.signature(getattr(hookspecs, hook)).parameters)
    assert f'<a id="plugin-hook-{hook}"></a>' in DOCS.read_text(encoding="utf-8")
    assert "Implemented by:" in sections[hook][1]


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_test(hook):
    tree = ast.parse(HOOK_TESTS.read_text(encoding="utf-8"))
    names = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    assert any(
        name == f"test_hook_{hook}" or name.startswith(f"test_hook_{hook}_") for name in names
    )


@pytest.mark.parametrize("hook", HOOKS)
def test_every_docs_example_is_a_valid_plugin(hook):
    """Each section's example registers cleanly: its hookimpls match the specs."""
    body = doc_sections()[hook][1]
    blocks = re.findall(r"```python\n(.*?)```", body, re.S)
    assert blocks, f"the {hook} section has no example"
    module = types.ModuleType(f"docs_example_{hook}")
    exec(compile(textwrap.dedent(blocks[0]), f"<docs:{hook}>", "exec"), module.__dict__)
    pm = get_plugin_manager(plugins=[(module.__name__, module)], load_entrypoints=False)
    pm.check_pending()
    implemented = {caller.name for caller in pm.get_hookcallers(module) or []}
    assert hook in implemented
