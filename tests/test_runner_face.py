"""The runner's package face: its public API in one place, re-exports only (issue 10)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from openclaw_runtime import runner

RUNNER_PUBLIC_API = {
    "run_embedded_agent",
    "compact_session_queued",
    "RunRequest",
    "RunResult",
    "RunOptions",  # the keywords of Runtime.run, named by its signature
    "RunErrorInfo",
    "RunEventCallback",
    "AgentRunTerminalOutcome",
    "ReplyPayload",
    "RunServices",
    "RunHost",
    "RunHooks",
    "BUILTIN_DEFAULT_MODEL",
    "AttemptDecision",
    "AttemptEnd",
    "AttemptStart",
    "CompactionEnd",
    "CompactionStart",
    "ContextWindowWarning",
    "LaneAcquired",
    "LaneWait",
    "PluginFaultRaised",
    "PluginQuarantined",
    "ProfileRotated",
    "RetryScheduled",
    "RunEnd",
    "RunStart",
    "ToolResultsTruncated",
    "InProcessLanes",
    "FileLanes",
    "InMemorySteeringStore",
    "JsonFileSteeringStore",
    "RecordsSteeringStore",
    "JsonFileSessionIndex",
    # the live-run registry behind Runtime.steer & co. (issue 15 §1)
    "LiveMessageResult",
    "LiveRunHandle",
    "LiveRunRegistry",
    "FileLiveInbox",
}


def test_runner_package_face_only_reexports_its_public_api():
    """``openclaw_runtime.runner`` is the runner's public API in one place: every name it
    exports is the object its defining submodule exports, and it defines nothing itself."""
    assert len(runner.__all__) == len(set(runner.__all__))
    for name in runner.__all__:
        value = getattr(runner, name)
        home = getattr(value, "__module__", None)
        if home is None or not home.startswith("openclaw_runtime."):
            # constants and type aliases: found by the one submodule that exports them
            homes = [
                module
                for module in _runner_submodules()
                if name in getattr(importlib.import_module(module), "__all__", ())
            ]
            assert len(homes) == 1, (name, homes)
            home = homes[0]
        assert home.startswith("openclaw_runtime.runner."), (name, home)
        module = importlib.import_module(home)
        assert name in module.__all__, (name, home)
        assert getattr(module, name) is value, name
    defined_here = [
        name
        for name, value in vars(runner).items()
        if (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == "openclaw_runtime.runner"
        and name != "__getattr__"  # the lazy face's loader (docs/architecture.md)
    ]
    assert defined_here == []
    # the public API, and nothing else: the entry, what a host gives and gets back, the events,
    # the built-in backends (policy functions are imported from their own modules)
    assert set(runner.__all__) == RUNNER_PUBLIC_API


def _runner_submodules() -> list[str]:
    return [f"openclaw_runtime.runner.{m.name}" for m in pkgutil.iter_modules(runner.__path__)]
