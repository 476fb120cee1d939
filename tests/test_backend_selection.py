"""``[backends]`` selects all five kinds; the runner reaches shared state only through them."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import openclaw_runtime
from openclaw_runtime import ConfigurationError, UnknownBackendError, hookimpl
from openclaw_runtime.backends import BACKEND_KINDS, EMBEDDED_BACKEND
from openclaw_runtime.config import BackendSettings
from openclaw_runtime.containment.proxy import GuardedBackend
from openclaw_runtime.runner.file_lanes import FileLanes
from openclaw_runtime.runner.lanes import InProcessLanes
from openclaw_runtime.runner.services import RunServices
from openclaw_runtime.runner.session_index import JsonFileSessionIndex
from openclaw_runtime.runner.steering_store import JsonFileSteeringStore
from openclaw_runtime.transcript.store import JsonlSessionStore

PACKAGE = Path(openclaw_runtime.__file__).parent


def echo_config(tmp_path: Path, **backends: str) -> dict[str, Any]:
    return {
        "state_dir": str(tmp_path / "state"),
        "agent": {"model": "echo/echo"},
        "backends": backends,
    }


class Recording:
    """A plugin backend that delegates to an embedded one and records the calls."""

    def __init__(self, inner: Any, calls: list[tuple[str, str]], kind: str) -> None:
        self._inner = inner
        self._calls = calls
        self._kind = kind

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if callable(value) and not name.startswith("_"):

            def call(*args: Any, **kwargs: Any) -> Any:
                self._calls.append((self._kind, name))
                return value(*args, **kwargs)

            return call
        return value


def recording_plugin(calls: list[tuple[str, str]]) -> Any:
    def factories() -> dict[str, Any]:
        return {
            "lanes": lambda runtime: InProcessLanes(),
            "auth_store": lambda runtime: __import__(
                "openclaw_runtime.auth.json_file", fromlist=["x"]
            ).open_auth_profile_store(runtime.config),
            "steering_store": lambda runtime: JsonFileSteeringStore(
                runtime.config.state_dir / "subagents" / "runs.json"
            ),
            "session_index": lambda runtime: JsonFileSessionIndex(
                runtime.sessions_dir / "index.json"
            ),
            "session_store": lambda runtime: JsonlSessionStore(runtime.sessions_dir),
        }

    class Plugin:
        @hookimpl
        def register_backends(self, register: Any) -> None:
            for kind, make in factories().items():
                register(
                    kind,
                    "recording",
                    lambda runtime, make=make, kind=kind: Recording(make(runtime), calls, kind),
                )

    return ("recording-backends", Plugin())


def test_the_five_kinds_are_the_config_fields() -> None:
    assert BACKEND_KINDS == (
        "lanes",
        "auth_store",
        "steering_store",
        "session_index",
        "session_store",
    )
    # plus ``default``: the name every kind left unset uses
    assert tuple(BackendSettings.model_fields) == ("default", *BACKEND_KINDS)


def test_every_embedded_default_is_registered_by_name(runtime_factory: Any) -> None:
    slots = runtime_factory().registrations()
    for kind in BACKEND_KINDS:
        (registration,) = [r for r in slots[f"backends.{kind}"] if r.name == EMBEDDED_BACKEND]
        assert registration.plugin == "builtin.backends"


@pytest.mark.anyio
async def test_naming_the_embedded_backends_runs_exactly_like_the_default(
    runtime_factory: Any, tmp_path: Path
) -> None:
    runtime = runtime_factory(echo_config(tmp_path, **dict.fromkeys(BACKEND_KINDS, "embedded")))
    result = await runtime.run("hello", session_key="chat:1")
    assert result.ok, result.error
    services = runtime.services
    assert type(services.lanes) is FileLanes  # built-ins are not wrapped
    assert type(services.session_index) is JsonFileSessionIndex
    assert type(services.steering_store) is JsonFileSteeringStore
    assert type(services.session_store) is JsonlSessionStore
    assert await services.session_index.lookup_id("chat:1") == result.session_id
    assert await services.session_store.exists(result.session_id)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", BACKEND_KINDS)
async def test_an_unknown_backend_name_lists_the_registered_ones(
    runtime_factory: Any, tmp_path: Path, kind: str
) -> None:
    calls: list[tuple[str, str]] = []
    runtime = runtime_factory(
        echo_config(tmp_path, **{kind: "nope"}), plugins=[recording_plugin(calls)]
    )
    with pytest.raises(UnknownBackendError) as caught:
        runtime.services.backend(kind)
    error = caught.value
    assert isinstance(error, ConfigurationError) and isinstance(error, LookupError)
    assert f"[backends] {kind} = 'nope'" in str(error)
    assert "'embedded', 'memory', 'recording'" in str(error)
    with pytest.raises(UnknownBackendError):
        await runtime.run("hello", session_id="s1")


@pytest.mark.anyio
async def test_a_run_goes_through_the_selected_plugin_backends_of_every_kind(
    runtime_factory: Any, tmp_path: Path
) -> None:
    calls: list[tuple[str, str]] = []
    runtime = runtime_factory(
        echo_config(tmp_path, **dict.fromkeys(BACKEND_KINDS, "recording")),
        plugins=[recording_plugin(calls)],
    )
    first = await runtime.run("hello", session_key="chat:7")
    second = await runtime.run("again", session_key="chat:7")
    assert first.ok and second.ok
    assert second.session_id == first.session_id
    for kind in BACKEND_KINDS:
        assert isinstance(runtime.services.backend(kind), GuardedBackend)
    used = set(calls)
    assert {
        ("session_index", "lookup_id"),
        ("session_index", "claim"),
        ("session_index", "bind"),
        ("lanes", "hold"),
        ("session_store", "open_or_create"),
        ("steering_store", "lease"),
    } <= used
    assert calls.count(("lanes", "hold")) == 4  # session + global lane, two runs
    assert calls.count(("session_index", "claim")) == 1  # the key's first turn only
    # the transcript landed in the selected store: two turns on one session
    session = await runtime.services.session_store.open(first.session_id)
    texts = [m.text() for m in session.build_session_context().messages]
    assert texts[0] == "hello" and texts[2] == "again"
    await session.aclose()


@pytest.mark.anyio
async def test_a_failing_session_index_ends_the_run_with_an_error_naming_the_plugin(
    runtime_factory: Any, tmp_path: Path
) -> None:
    class Broken:
        async def lookup_id(self, session_key: str) -> str | None:
            raise ConnectionError("index unreachable")

    class Plugin:
        @hookimpl
        def register_backends(self, register: Any) -> None:
            register("session_index", "broken", lambda runtime: Broken())

    runtime = runtime_factory(
        echo_config(tmp_path, session_index="broken"), plugins=[("broken-index", Plugin())]
    )
    events: list[Any] = []
    result = await runtime.run("hello", session_key="chat:1", on_event=events.append)
    assert not result.ok
    assert result.error is not None and result.error.kind == "plugin"
    assert "session_index:broken backend of plugin 'broken-index'" in result.error.message
    assert "lookup_id" in result.error.message and "index unreachable" in result.error.message
    assert events[0].type == "run_start" and events[-1].type == "run_end"
    assert [(f.plugin, f.unit) for f in result.faults] == [
        ("broken-index", "backend:session_index:broken")
    ]


@pytest.mark.anyio
async def test_run_services_over_ready_made_backends(tmp_path: Path) -> None:
    services = RunServices.of(
        lanes=InProcessLanes(),
        auth_store=__import__(
            "openclaw_runtime.auth.store", fromlist=["x"]
        ).InMemoryAuthProfileStore(),
        steering_store=JsonFileSteeringStore(tmp_path / "runs.json"),
        session_index=JsonFileSessionIndex(tmp_path / "index.json"),
        session_store=JsonlSessionStore(tmp_path / "sessions"),
    )
    session = await services.checkout_session("s1", cwd="/w")
    await session.append_message({"role": "user", "content": "hi", "timestamp": 1})
    await services.checkin_session(session)
    again = await services.checkout_session("s1", cwd="/w")
    assert again is session  # kept open between turns
    await services.close_sessions()
    assert await services.session_store.exists("s1")
    with pytest.raises(KeyError, match="unknown backend kind 'queues'"):
        services.backend("queues")


def _imports(path: Path) -> set[str]:
    """Absolute names of the openclaw_runtime modules ``path`` imports (also under
    TYPE_CHECKING)."""
    tree = ast.parse(path.read_text())
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            out.add(module)
            out.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


@pytest.mark.parametrize("package", ["runner", "backends", "failover"])
def test_lower_layers_never_import_the_runtime(package: str) -> None:
    for path in sorted((PACKAGE / package).rglob("*.py")):
        imported = _imports(path)
        assert "openclaw_runtime._runtime" not in imported, path
        if package == "backends":
            assert not any(name.startswith("openclaw_runtime.runner") for name in imported), path
