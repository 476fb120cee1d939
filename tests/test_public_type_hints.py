"""The public API's annotations resolve at run time, in a fresh interpreter.

Frameworks that introspect callables (FastAPI dependencies, pydantic ``validate_call``, typer,
dependency injectors, sphinx-autodoc-typehints) call ``typing.get_type_hints`` or
``inspect.signature(..., eval_str=True)``; a name imported only under ``TYPE_CHECKING`` makes
them fail with ``NameError``. Start-up keeps the run path unloaded (``test_startup_*``), so the
annotations name such types through package faces (``runner.RunRequest``), which load a name
when it is first read. Each face is walked in its own fresh interpreter, having imported only
that face: a name that resolves only because something else loaded it first is not enough.
"""

from __future__ import annotations

import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import openclaw_runtime

ROOT = Path(__file__).resolve().parent.parent
#: Not faces: the console script, the commands (their face re-exports nothing), the built-in
#: plugins (registered, never imported by users).
NOT_FACES = {"cli", "commands", "builtins"}
DOCUMENTED = re.compile(r"from (openclaw_runtime(?:\.\w+)+) import")


def faces() -> list[str]:
    """The package, its public modules and subpackages, and every module the docs import
    from (``from openclaw_runtime.runner.lanes import ...``)."""
    found = {"openclaw_runtime"}
    for info in pkgutil.iter_modules(openclaw_runtime.__path__):
        if not info.name.startswith("_") and info.name not in NOT_FACES:
            found.add(f"openclaw_runtime.{info.name}")
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        found.update(DOCUMENTED.findall(page.read_text(encoding="utf-8")))
    return sorted(found)


def walk(face: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", "from tests.hints_support import main; main()", face],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_faces_include_the_documented_subpackages():
    found = faces()
    for face in ("agent", "backends", "events", "llm", "messages", "runner", "testing", "types"):
        assert f"openclaw_runtime.{face}" in found
    assert "openclaw_runtime.runner.lanes" in found  # named by the docs only


@pytest.mark.parametrize("face", faces())
def test_every_annotation_of_a_public_face_resolves(face):
    result = walk(face)
    assert result["failures"] == []
    assert result["checked"], f"{face} has nothing to check: is the walk broken?"


def test_runtime_methods_resolve_right_after_importing_runtime():
    """The case that was reported: ``get_type_hints(Runtime.run)`` raised ``NameError``; the
    hints are the real classes (what mypy sees), not stand-ins."""
    code = (
        "import inspect, json, typing\n"
        "from openclaw_runtime import Runtime\n"
        "names = ('run', 'create_agent', 'compact_session', 'checkout_session',\n"
        "         'checkin_session', '_handle', 'lanes', 'context_engines')\n"
        "out = {}\n"
        "for name in names:\n"
        "    method = getattr(Runtime, name)\n"
        "    method = getattr(method, 'fget', method)\n"
        "    inspect.signature(method, eval_str=True)\n"
        "    out[name] = {k: repr(v) if not isinstance(v, type) else\n"
        "                 f'{v.__module__}.{v.__qualname__}'\n"
        "                 for k, v in typing.get_type_hints(method).items()}\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    hints = json.loads(done.stdout.strip().splitlines()[-1])
    assert hints["run"]["return"] == "openclaw_runtime.runner.request.RunResult"
    assert "openclaw_runtime.runner.request.RunRequest" in hints["run"]["request"]
    assert hints["compact_session"]["return"] == "openclaw_runtime.context.engine.CompactResult"
    assert hints["create_agent"]["return"] == "openclaw_runtime.agent.agent.Agent"
    assert "openclaw_runtime.agent.tools.AgentTool" in hints["create_agent"]["tools"]
    assert hints["checkout_session"]["return"] == "openclaw_runtime.backends.sessions.Session"
    assert hints["checkin_session"]["session"] == "openclaw_runtime.backends.sessions.Session"
    assert "openclaw_runtime.runner.live.LiveRunHandle" in hints["_handle"]["return"]
    assert hints["lanes"]["return"] == "openclaw_runtime.backends.lanes.LaneBackend"
    assert hints["context_engines"]["return"] == (
        "openclaw_runtime.context.registry.ContextEngineSlot"
    )
