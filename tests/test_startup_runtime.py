"""What ``from openclaw_runtime import Runtime``, ``Runtime()``, a first run and
``openclaw-runtime run`` load: only what they use (issue 13, the start-up row).

Checked in a fresh interpreter (``sys.modules`` after the step), never by timing. The run
path, the providers' HTTP stack, the CLI's other commands and rich load when they are used;
the deferred pieces themselves (``DeferredProvider``, the lazy package faces, the terminal
check that keeps rich out of a piped CLI) are tested here as behaviour too.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.commands.terminal import surely_not_a_terminal
from openclaw_runtime.events import AssistantMessageEventStream
from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.providers.deferred import DeferredProvider
from openclaw_runtime.providers.echo import ECHO_MODEL, echo_stream_fn
from openclaw_runtime.providers.openai_compat import OpenAICompatProvider
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer

#: Third-party packages none of the steps below may load (httpx's CLI brings the next three).
HEAVY = ("httpx", "httpcore", "rich", "pygments", "jsonschema")
#: Runtime modules that only a run, a compaction, a provider or another command needs.
RUN_PATH = (
    "openclaw_runtime._backend_selection",
    "openclaw_runtime.agent.loop",
    "openclaw_runtime.context.compaction",
    "openclaw_runtime.context.legacy",
    "openclaw_runtime.failover.classify",
    "openclaw_runtime.failover.patterns",
    "openclaw_runtime.providers.openai_compat",
    "openclaw_runtime.repair.compose",
    "openclaw_runtime.repair.scan",
    "openclaw_runtime.runner.attempt_loop",
    "openclaw_runtime.runner.run",
    "openclaw_runtime.transcript.sanitize",
    "openclaw_runtime.transcript.store",
)
#: The faces made lazy; each must still hand out every name it lists.
LAZY_FACES = (
    "agent",
    "auth",
    "backends",
    "context",
    "failover",
    "prompt",
    "prompt.skills",
    "providers",
    "repair",
    "reply",
    "runner",
    "toolpolicy",
    "transcript",
)
ROOT = Path(__file__).resolve().parent.parent


def modules_after(
    code: str, *, cwd: Path, env: dict[str, str] | None = None, unset: tuple[str, ...] = ()
) -> set[str]:
    """``sys.modules`` after running ``code`` in a fresh interpreter (written to a file, so
    the step's own stdout stays free)."""
    out = cwd / "modules.json"
    script = f"import sys, json\n{code}\nopen({str(out)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
    subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        env={k: v for k, v in {**os.environ, **(env or {})}.items() if k not in unset},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(json.loads(out.read_text()))


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m in names or m.split(".")[0] in names)


def test_importing_runtime_loads_neither_the_run_path_nor_http(tmp_path):
    modules = modules_after("from openclaw_runtime import Runtime", cwd=tmp_path)
    assert "openclaw_runtime._runtime" in modules
    assert loaded(modules, HEAVY) == []
    assert loaded(modules, RUN_PATH) == []
    assert "stevedore" not in modules
    assert not any(m.startswith("openclaw_runtime.commands") for m in modules)


def test_building_a_runtime_registers_the_builtins_without_their_modules(tmp_path):
    modules = modules_after(
        "from openclaw_runtime import Runtime\n"
        f"runtime = Runtime({{'state_dir': {str(tmp_path / 'state')!r}}}, load_entrypoints=False)\n"
        "assert sorted(runtime.plugin_manager.records)[:3] == "
        "['builtin.backends', 'builtin.context', 'builtin.core']",
        cwd=tmp_path,
    )
    assert "openclaw_runtime.builtins.providers" in modules
    assert loaded(modules, HEAVY) == []
    assert loaded(modules, RUN_PATH) == []


def test_a_first_offline_run_does_not_load_http(tmp_path):
    modules = modules_after(
        "import anyio\n"
        "from openclaw_runtime import Runtime\n"
        f"runtime = Runtime({{'state_dir': {str(tmp_path / 'state')!r}}}, load_entrypoints=False)\n"
        "result = anyio.run(lambda: runtime.run('hi there', model='echo/echo'))\n"
        "assert result.ok and result.text == 'echo: hi there', result",
        cwd=tmp_path,
    )
    assert "openclaw_runtime.runner.run" in modules  # the run path did load, for the run
    assert loaded(modules, HEAVY) == []
    assert "openclaw_runtime.providers.openai_compat" not in modules


def test_the_cli_run_command_loads_only_itself_and_no_rich_when_piped(tmp_path):
    out = tmp_path / "answer.txt"
    modules = modules_after(
        "from openclaw_runtime.cli import main\n"
        "sys.argv = ['openclaw-runtime', 'run', '--model', 'echo/echo', 'hello there']\n"
        f"sys.stdout = open({str(out)!r}, 'w')\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
        "sys.stdout.close()",
        cwd=tmp_path,
        env={
            "OPENCLAW_RUNTIME_STATE_DIR": str(tmp_path / "state"),
            "OPENCLAW_RUNTIME_PLUGINS": "",  # the core only: a plugin may use httpx itself
        },
        unset=("FORCE_COLOR", "TTY_COMPATIBLE"),  # stderr is a pipe: no spinner, no rich
    )
    assert out.read_text().strip() == "echo: hello there"
    assert loaded(modules, HEAVY) == []
    commands = sorted(m for m in modules if m.startswith("openclaw_runtime.commands."))
    assert "openclaw_runtime.commands.run" in commands
    for other in ("chat", "doctor", "sessions", "profiles", "plugins", "models", "tools"):
        assert f"openclaw_runtime.commands.{other}" not in commands


@pytest.mark.parametrize(
    ("is_tty", "env", "surely_not"),
    [
        (False, {}, True),
        (False, {"TERM": "xterm-256color", "NO_COLOR": "1"}, True),
        (True, {}, False),  # a terminal: rich decides (Jupyter, IDLE...)
        (False, {"FORCE_COLOR": "1"}, False),  # rich treats it as a terminal
        (False, {"FORCE_COLOR": ""}, False),  # set at all: rich reads it
        (False, {"TTY_COMPATIBLE": "1"}, False),
        (False, {"TTY_COMPATIBLE": "0"}, False),
    ],
)
def test_rich_is_skipped_only_when_it_would_say_not_a_terminal(is_tty, env, surely_not):
    assert surely_not_a_terminal(is_tty, env) is surely_not
    if surely_not:  # and rich agrees
        from rich.console import Console

        class Pipe:
            def isatty(self) -> bool:
                return is_tty

            def write(self, text: str) -> int:
                return len(text)

            def flush(self) -> None:
                pass

        assert Console(file=Pipe(), _environ=env).is_terminal is False  # type: ignore[arg-type]


@pytest.mark.parametrize("package", LAZY_FACES)
def test_a_lazy_face_hands_out_every_name_it_lists(package):
    face = importlib.import_module(f"openclaw_runtime.{package}")
    table = {name: module for module, names in face._LAZY.items() for name in names.split()}
    assert set(table) == set(face.__all__)
    for name, module in table.items():
        home = importlib.import_module(f"openclaw_runtime.{package}.{module}")
        assert getattr(face, name) is getattr(home, name), name
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = face.no_such_name


class CountingProvider:
    """A real provider (echo underneath) that counts its builds, calls and closes."""

    built = 0

    def __init__(self) -> None:
        CountingProvider.built += 1
        self.calls = 0
        self.closed = 0

    def stream_fn(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        self.calls += 1
        return echo_stream_fn(model, context, options)

    async def aclose(self) -> None:
        self.closed += 1


@pytest.mark.anyio
async def test_a_deferred_provider_builds_once_on_the_first_request():
    CountingProvider.built = 0
    deferred = DeferredProvider(CountingProvider)
    await deferred.aclose()  # nothing built: nothing to close, and nothing gets built
    assert (deferred.built, CountingProvider.built) == (False, 0)
    context = Context(messages=[UserMessage(content="one two")])
    for _ in range(2):
        message = await deferred.stream_fn(ECHO_MODEL, context, StreamOptions()).result()
        assert message.text() == "echo: one two"
    provider: Any = deferred.provider
    assert (CountingProvider.built, provider.calls) == (1, 2)
    await deferred.aclose()
    assert provider.closed == 1


@pytest.mark.anyio
async def test_the_builtin_chat_completions_provider_is_built_by_its_first_request(tmp_path):
    with FaultInjectingOpenAIServer(models={"main": 64_000}) as server:
        runtime = Runtime(
            {
                "state_dir": str(tmp_path / "state"),
                "models": [
                    {
                        "id": "main",
                        "api": "openai-completions",
                        "provider": "mock",
                        "baseUrl": server.base_url,
                        "contextWindow": 64_000,
                        "maxTokens": 256,
                    }
                ],
                "agent": {"model": "mock/main"},
            },
            load_entrypoints=False,
        )
        registration = runtime.components.providers.registrations()
        (component,) = [r.component for r in registration if r.name == "openai-completions"]
        owner = component.__self__
        assert isinstance(owner, DeferredProvider)
        assert not owner.built
        result = await runtime.run("Hello")
        assert result.ok, result.error
        assert len(server.requests) == 1
        assert owner.built and isinstance(owner.provider, OpenAICompatProvider)
        await runtime.aclose()


@pytest.mark.parametrize("plugin", ["openclaw_runtime_anthropic", "openclaw_runtime_google"])
def test_the_first_party_provider_plugins_register_without_httpx(tmp_path, plugin):
    """Loading the plugin (what ``Runtime()`` does with its entry point) and collecting its
    provider imports no HTTP stack; the provider is built by its first request."""
    modules = modules_after(
        "from openclaw_runtime import Runtime\n"
        "from openclaw_runtime.providers.deferred import DeferredProvider\n"
        f"import {plugin}.plugin as plugin\n"
        f"runtime = Runtime({{'state_dir': {str(tmp_path / 'state')!r}}}, "
        "load_entrypoints=False, plugins=[plugin])\n"
        "owners = [r.component.__self__ for r in runtime.components.providers.registrations()\n"
        "          if r.plugin == plugin.__name__]\n"
        "assert len(owners) == 1 and isinstance(owners[0], DeferredProvider), owners\n"
        "assert not owners[0].built",
        cwd=tmp_path,
    )
    assert f"{plugin}.plugin" in modules
    assert loaded(modules, HEAVY) == []
    assert f"{plugin}._provider" not in modules
