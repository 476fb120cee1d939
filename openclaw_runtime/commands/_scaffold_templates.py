"""The files ``openclaw-runtime plugins new`` writes, as text templates (data, not logic).

Placeholders: ``__NAME__`` (entry-point and component name), ``__PKG__`` (import package),
``__DIST__`` (distribution), ``__CLASS__`` (CamelCase stem), ``__TITLE__``, ``__KIND__``,
``__CORE_SPEC__`` (the core versions the plugin supports). One ``KindTemplate`` per kind:
the component module, the hooks of ``plugin.py``, and the kind's tests (the contract suite
from ``openclaw_runtime.testing`` where there is one, and a run through the real entry point).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["COMMON_FILES", "KINDS", "RUNTIME_FIXTURE", "KindTemplate"]


@dataclass(frozen=True, slots=True)
class KindTemplate:
    """What differs between kinds: the component, the hooks, the tests, one README line."""

    component: str
    imports: str
    hooks: str
    tests: str
    summary: str
    config: str = '{"state_dir": str(openclaw_state_dir)}'


_PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.25"]
build-backend = "hatchling.build"

[project]
name = "__DIST__"
version = "0.1.0"
description = "An openclaw-runtime plugin: the __NAME__ __KIND__."
readme = "README.md"
requires-python = ">=3.11"
license = "MIT"
keywords = ["openclaw-runtime", "openclaw-runtime-plugin"]
classifiers = [
    "Framework :: AnyIO",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
]
dependencies = ["__CORE_SPEC__"]

[project.optional-dependencies]
test = ["pytest>=8", "anyio>=4", "trio>=0.25"]

# The runtime finds the plugin through this entry point: the name is the plugin's name.
[project.entry-points.openclaw_runtime]
__NAME__ = "__PKG__.plugin"

[tool.hatch.build.targets.wheel]
packages = ["__PKG__"]
# editable installs put this checkout on sys.path (a .pth file): no extra build dependency
dev-mode-dirs = ["."]

[tool.pytest.ini_options]
addopts = "--import-mode=importlib"
testpaths = ["tests"]
"""

_INIT = '''\
"""__TITLE__: an openclaw-runtime plugin."""
'''

_PLUGIN = '''\
"""Every hook implementation of __DIST__ (the entry-point target)."""

from __future__ import annotations

from typing import Any

from openclaw_runtime import hookimpl

from ._component import __IMPORTS__


__HOOKS__'''

_CONFTEST = '''\
"""Every ``@pytest.mark.anyio`` test runs on asyncio and on trio (skipped, with the reason,
where trio is not installed). That ``anyio_backend`` is the one thing this file adds: the
fixtures ``openclaw_runtime_fake``, ``openclaw_state_dir`` and ``fault_server`` come from
the pytest plugin openclaw-runtime installs, and the contract suites are plain imports."""

pytest_plugins = ["openclaw_runtime.testing"]
'''

_TOX = """\
# A tox matrix for __DIST__, from the template of openclaw-runtime (contrib/hello/tox.ini;
# docs/testing-plugins.md): same envs, same variable.
#   core-checkout  the core from a source checkout: OPENCLAW_RUNTIME_CHECKOUT=/path/to/it
#                  (default ../openclaw-runtime, a clone beside this directory); catches
#                  breakage before a core release
#   core-0.1       the released 0.1 series from the package index (add core-0.2... as they
#                  ship; the core is not on an index yet, so it is not in env_list)
# Each env runs this plugin's tests, then the core's contract suites over what the installed
# plugin registers (openclaw_runtime.testing.installed_contracts).
#   OPENCLAW_RUNTIME_CHECKOUT=../openclaw-runtime tox run
[tox]
env_list = core-checkout
skip_missing_interpreters = true
labels =
    release = core-0.1

[testenv]
# the core and the plugin are installed in one pip call, so pip takes the core from where
# these deps say instead of looking for it on an index first
package = skip
set_env =
    PLUGIN = __NAME__
    OPENCLAW_RUNTIME_PLUGINS = {env:PLUGIN}
    OPENCLAW_RUNTIME_STRICT_PLUGINS = 1
deps =
    checkout: -e {env:OPENCLAW_RUNTIME_CHECKOUT:{toxinidir}/../openclaw-runtime}[testing]
    0.1: openclaw-runtime[testing]>=0.1,<0.2
    -e .[test]
commands =
    pytest -p openclaw_runtime.testing tests {posargs}
    pytest -p openclaw_runtime.testing --pyargs openclaw_runtime.testing.installed_contracts
"""

_README = """\
# __DIST__

An [openclaw-runtime](https://pypi.org/project/openclaw-runtime/) plugin: __SUMMARY__

## Install

    openclaw-runtime install -e .        # from this checkout
    openclaw-runtime plugins __NAME__    # it is listed with its components

## Develop

    python -m pip install -e '.[test]'
    python -m pytest                     # the contract suite and the entry-point test
    OPENCLAW_RUNTIME_CHECKOUT=/path/to/openclaw-runtime tox run   # the tox matrix

`__PKG__/plugin.py` holds the hooks, `__PKG__/_component.py` the component. Settings, if
you need them, are a pydantic model declared with `register_plugin_settings` and read with
`runtime.plugin_settings("__NAME__")` (see docs/plugin-hooks.md of openclaw-runtime).
"""

_RUNTIME_FIXTURE = '''\
@pytest.fixture
def runtime(openclaw_state_dir):
    """A runtime that loads this plugin through its installed entry point, and only it."""
    rt = Runtime(
        __CONFIG__,
        allow=["__NAME__"],
        on_load_failure="raise",
    )
    yield rt
    rt.close()


def test_found_through_the_entry_point(runtime):
    record = {r.name: r for r in runtime.plugin_records()}["__NAME__"]
    assert (record.source, record.status) == ("entrypoint", "loaded")
    assert record.distribution == "__DIST__"
    runtime.plugin_manager.check_pending()
'''

COMMON_FILES: dict[str, str] = {
    "pyproject.toml": _PYPROJECT,
    "README.md": _README,
    "tox.ini": _TOX,
    "conftest.py": _CONFTEST,
    "__PKG__/__init__.py": _INIT,
    "__PKG__/py.typed": "",
    "__PKG__/plugin.py": _PLUGIN,
}

_ENGINE = KindTemplate(
    imports="__CLASS__Engine",
    config='{"context_engine": "__NAME__", "state_dir": str(openclaw_state_dir)}',
    summary="a context engine (how the history is assembled for each model call).",
    component='''\
"""The __NAME__ context engine. It sends the whole history; change ``assemble`` to choose."""

from __future__ import annotations

from openclaw_runtime.abort import AbortError
from openclaw_runtime.context.delegate import delegate_compaction_to_runtime
from openclaw_runtime.context.engine import (
    AssembleParams,
    AssembleResult,
    CompactParams,
    CompactResult,
    ContextEngineInfo,
    IngestParams,
    IngestResult,
)

__all__ = ["__CLASS__Engine"]


class __CLASS__Engine:
    """Select with ``context_engine = "__NAME__"`` in openclaw-runtime.toml."""

    info = ContextEngineInfo(id="__NAME__", name="__TITLE__", version="0.1.0")

    async def ingest(self, params: IngestParams) -> IngestResult:
        """Nothing to store: the session transcript is the source of truth."""
        return IngestResult(ingested=False)

    async def assemble(self, params: AssembleParams) -> AssembleResult:
        """The messages for the next model call, as a new list (never touch the input)."""
        if params.abort_signal is not None and params.abort_signal.aborted:
            raise AbortError("assemble aborted")
        return AssembleResult(messages=list(params.messages), estimated_tokens=0)

    async def compact(self, params: CompactParams) -> CompactResult:
        """The runtime's own summarizing compaction."""
        return await delegate_compaction_to_runtime(params)
''',
    hooks='''\
@hookimpl
def register_context_engines(register: Any) -> None:
    """The __NAME__ engine."""
    register("__NAME__", __CLASS__Engine)
''',
    tests='''\
"""The __NAME__ engine: the contract suite, and the engine chosen through the entry point."""

from __future__ import annotations

import pytest
from __PKG__ import plugin

from openclaw_runtime import Runtime
from openclaw_runtime.context.engine import AssembleParams
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.testing import ContextEngineContract


class Test__CLASS__Contract(ContextEngineContract):
    @pytest.fixture
    def context_engine(self):
        return plugin.__CLASS__Engine()


__RUNTIME_FIXTURE__

@pytest.mark.anyio
async def test_selected_by_the_config(runtime):
    assert runtime.components.context_engines.registration("__NAME__").plugin == "__NAME__"
    engine = await runtime.resolve_context_engine()
    result = await engine.assemble(
        AssembleParams(session_id="s", messages=[UserMessage(content="hi")], token_budget=1000)
    )
    assert [m.text() for m in result.messages] == ["hi"]


@pytest.mark.anyio
async def test_a_run_through_the_whole_pipeline(openclaw_runtime_fake):
    fake = openclaw_runtime_fake
    fake.add_plugin(plugin, name="__NAME__")
    fake.config["context_engine"] = "__NAME__"
    fake.provider.reply("first answer")
    fake.provider.reply("second answer")
    await fake.run("one", session_id="s1")
    result = await fake.run("two", session_id="s1")
    assert result.payloads[-1].text == "second answer"
    # what the model saw on the second call: the history this engine assembled
    seen = [m.text() for m in fake.provider.history[1].context.messages]
    assert seen == ["one", "first answer", "two"]
''',
)

_SANITIZER = KindTemplate(
    imports="sanitize___FN__",
    summary="a transcript sanitizer (run on the history before every model call).",
    component='''\
"""The __NAME__ sanitizer: drops user messages with no text. Deterministic and idempotent."""

from __future__ import annotations

from typing import Any

from openclaw_runtime.messages import UserMessage

__all__ = ["sanitize___FN__"]


def sanitize___FN__(messages: list[Any], policy: Any) -> list[Any]:
    """A new list without blank user messages (the input is never changed)."""
    return [m for m in messages if not (isinstance(m, UserMessage) and not m.text().strip())]
''',
    hooks='''\
@hookimpl
def register_transcript_sanitizers(register: Any) -> None:
    """The __NAME__ sanitizer, at the default position."""
    register("__NAME__", sanitize___FN__, order=100)
''',
    tests='''\
"""The __NAME__ sanitizer: the contract suite, its rule, and the installed registration."""

from __future__ import annotations

import pytest
from __PKG__ import plugin

from openclaw_runtime import Runtime
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.testing import TranscriptSanitizerContract


class Test__CLASS__Contract(TranscriptSanitizerContract):
    @pytest.fixture
    def sanitizer(self):
        return plugin.sanitize___FN__


def test_drops_blank_user_messages():
    messages = [UserMessage(content=" "), UserMessage(content="hi")]
    kept = plugin.sanitize___FN__(messages, None)
    assert [m.text() for m in kept] == ["hi"]


__RUNTIME_FIXTURE__

def test_registered_in_the_pipeline(runtime):
    names = {r.name: r.plugin for r in runtime.transcript_sanitizers()}
    assert names["__NAME__"] == "__NAME__"


@pytest.mark.anyio
async def test_a_run_through_the_whole_pipeline(openclaw_runtime_fake):
    fake = openclaw_runtime_fake
    fake.add_plugin(plugin, name="__NAME__")
    fake.provider.reply("first answer")
    fake.provider.reply("second answer")
    await fake.run("one", session_id="s1")
    result = await fake.run("two", session_id="s1")
    assert result.payloads[-1].text == "second answer"
    # the model saw the history as sanitized: nothing with text was dropped
    seen = [m.text() for m in fake.provider.history[1].context.messages]
    assert seen == ["one", "first answer", "two"]
''',
)

_REPAIRER = KindTemplate(
    imports="repair___FN__",
    summary="a stream repairer (a transformer of each model's event stream).",
    component='''\
"""The __NAME__ stream repairer. It passes every event through; a repairer that rewrites
deltas must rewrite the final ``done`` message the same way (the contract suite checks)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

__all__ = ["repair___FN__"]


async def repair___FN__(events: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
    """Yield the provider's events, repaired."""
    async for event in events:
        yield event
''',
    hooks='''\
@hookimpl
def register_stream_repairers(register: Any) -> None:
    """The __NAME__ repairer, at the default position."""
    register("__NAME__", repair___FN__, order=100)
''',
    tests='''\
"""The __NAME__ repairer: the contract suite and the installed registration."""

from __future__ import annotations

import pytest
from __PKG__ import plugin

from openclaw_runtime import Runtime
from openclaw_runtime.testing import StreamRepairerContract, text


class Test__CLASS__Contract(StreamRepairerContract):
    @pytest.fixture
    def stream_repairer(self):
        return plugin.repair___FN__


__RUNTIME_FIXTURE__

def test_registered_in_the_pipeline(runtime):
    registration = runtime.components.stream_repairers.registration("__NAME__")
    assert registration.plugin == "__NAME__"


@pytest.mark.anyio
async def test_a_run_through_the_whole_pipeline(openclaw_runtime_fake):
    fake = openclaw_runtime_fake
    fake.add_plugin(plugin, name="__NAME__")
    fake.provider.reply(text("an answer streamed in small pieces", chunk=3))
    result = await fake.run("hello", session_id="s1")
    assert result.payloads[-1].text == "an answer streamed in small pieces"
''',
)

_CLASSIFIER = KindTemplate(
    imports="classify___FN__",
    summary="a failover classifier (why did a model call fail?).",
    component='''\
"""The __NAME__ classifier: HTTP 418 from the providers it knows means "overloaded, retry"."""

from __future__ import annotations

from openclaw_runtime.failover import FailoverClassification, FailoverReason, FailoverSignal

__all__ = ["PROVIDERS", "classify___FN__"]

#: The providers whose failures this classifier knows (e.g. ``{"openai"}``). It has no
#: opinion on anyone else's, so their own classifiers (and the built-in one) decide.
PROVIDERS = frozenset({"__NAME__"})


def classify___FN__(signal: FailoverSignal) -> FailoverClassification | None:
    """A classification, or None for no opinion (the next classifier answers)."""
    if signal.provider not in PROVIDERS:
        return None
    if signal.status == 418:
        return FailoverClassification.of(FailoverReason.OVERLOADED, same_model_retry=True)
    return None
''',
    hooks='''\
@hookimpl
def classify_failover(signal: Any) -> Any:
    """Answer for the failures this plugin knows; None for the rest."""
    return classify___FN__(signal)
''',
    tests='''\
"""The __NAME__ classifier: the contract suite, its answer through the installed entry
point, and a run that ends for the reason it gives."""

from __future__ import annotations

import pytest
from __PKG__ import _component, plugin

from openclaw_runtime import Runtime
from openclaw_runtime.failover import FailoverReason, FailoverSignal
from openclaw_runtime.testing import FailoverClassifierContract


class Test__CLASS__Contract(FailoverClassifierContract):
    provider = "__NAME__"
    cases = (
        (FailoverSignal(provider="__NAME__", status=418), FailoverReason.OVERLOADED),
        (FailoverSignal(provider="__NAME__", status=500, message="oops"), None),
        (FailoverSignal(provider="__NAME__"), None),
    )

    @pytest.fixture
    def failover_plugin(self):
        return plugin


__RUNTIME_FIXTURE__

def test_answers_through_the_host(runtime):
    signal = FailoverSignal(provider="__NAME__", status=418, message="teapot")
    answer, by = runtime.hooks.classify_failover(signal)
    assert (answer.reason, by) == (FailoverReason.OVERLOADED, "__NAME__")


@pytest.mark.anyio
async def test_a_run_fails_for_the_reason_it_classifies(openclaw_runtime_fake, monkeypatch):
    # the fake provider's failures count as ours for this test
    monkeypatch.setattr(_component, "PROVIDERS", frozenset({"fake"}))
    fake = openclaw_runtime_fake
    fake.add_plugin(plugin, name="__NAME__")
    fake.provider.fail("I'm a teapot", status=418)
    result = await fake.run("tea, please", session_id="s1")
    # overloaded, with no fallback model configured: the run ends with that reason
    assert not result.ok
    assert (result.error.kind, result.error.reason) == ("provider", "overloaded")
''',
)

_PROVIDER = KindTemplate(
    imports="__UPPER___MODEL, __FN___stream_fn",
    summary="a provider (a model API) and its model `__NAME__/echo`.",
    component='''\
"""The __NAME__ provider: answers ``echo: <last user text>``. Replace ``_answer`` with calls
to your API; a stream function never raises (failures are ``error`` events)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from openclaw_runtime.events import (
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Done,
    Error,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
)
from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import AssistantMessage, TextContent, UserMessage

__all__ = ["__UPPER___MODEL", "__FN___stream_fn"]

# a run refuses models with a context window under 16,000 tokens: give your model's real one
__UPPER___MODEL = Model(
    id="echo", api="__NAME__", provider="__NAME__", context_window=32_000
)


def __FN___stream_fn(
    model: Model, context: Context, options: StreamOptions
) -> AssistantMessageEventStream:
    """The provider: one streamed assistant message per call."""
    return AssistantMessageEventStream(_answer(model, context, options))


async def _answer(
    model: Model, context: Context, options: StreamOptions
) -> AsyncIterator[AssistantMessageEvent]:
    message = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
    yield Start(message)
    if options.signal is not None and options.signal.aborted:
        message.stop_reason = "aborted"
        message.error_message = "the call was aborted"
        yield Error("aborted", message)
        return
    last = next((m for m in reversed(context.messages) if isinstance(m, UserMessage)), None)
    answer = f"echo: {last.text().strip() if last else ''}"
    message.content.append(TextContent(text=answer))
    yield TextStart(0, message)
    yield TextDelta(0, answer, message)
    yield TextEnd(0, answer, message)
    yield Done("stop", message)
''',
    hooks='''\
@hookimpl
def register_providers(register: Any) -> None:
    """The ``__NAME__`` API."""
    register("__NAME__", __FN___stream_fn)


@hookimpl
def register_models(register: Any) -> None:
    """``__NAME__/echo``."""
    register(__UPPER___MODEL)
''',
    tests='''\
"""The __NAME__ provider: the contract suite, and whole turns through the runtime, loaded by
its entry point."""

from __future__ import annotations

import pytest
from __PKG__ import plugin

from openclaw_runtime import Runtime
from openclaw_runtime.testing import ProviderContract


class Test__CLASS__Contract(ProviderContract):
    uses_network = False  # the echo provider makes no HTTP request; remove this for yours

    @pytest.fixture
    def provider_plugin(self):
        return plugin

    @pytest.fixture
    def provider_model(self):
        # for a provider that calls an HTTP API, point the model at a local server:
        # plugin.__UPPER___MODEL.model_copy(update={"base_url": fault_server.base_url})
        return plugin.__UPPER___MODEL


__RUNTIME_FIXTURE__

@pytest.mark.anyio
async def test_answers_a_turn(runtime):
    assert runtime.components.providers.registration("__NAME__").plugin == "__NAME__"
    agent = runtime.create_agent(model="__NAME__/echo")
    await agent.prompt("hello there")
    assert agent.state.messages[-1].text() == "echo: hello there"


@pytest.mark.anyio
async def test_a_run_through_the_whole_pipeline(runtime):
    result = await runtime.run("hello there", model="__NAME__/echo", session_id="s1")
    assert result.payloads[-1].text == "echo: hello there"
''',
)

_FORMAT = KindTemplate(
    imports="__CLASS__Format",
    summary="a tool-call format (a syntax for tool calls models write as plain text).",
    component='''\
"""The __NAME__ tool-call format. It starts as the built-in JSON-object syntax; override
``parse_at`` / ``scan_at`` for your model's syntax (see openclaw_runtime.repair.formats)."""

from __future__ import annotations

from openclaw_runtime.repair.formats import JsonObjectToolCallFormat

__all__ = ["__CLASS__Format"]


class __CLASS__Format(JsonObjectToolCallFormat):
    """Tried by the plain-text tool-call repairer on every assistant text."""
''',
    hooks='''\
@hookimpl
def register_tool_call_formats(register: Any) -> None:
    """The __NAME__ syntax."""
    register("__NAME__", __CLASS__Format())
''',
    tests='''\
"""The __NAME__ format: the contract suite, its registration through the entry point, and a
call written as text that runs a tool."""

from __future__ import annotations

import pytest
from __PKG__ import plugin

from openclaw_runtime import Runtime, tool
from openclaw_runtime.testing import ToolCallFormatContract


class Test__CLASS__Contract(ToolCallFormatContract):
    format_name = "__NAME__"
    samples = (
        ('{"name": "lookup", "arguments": {"query": "otters"}}', "lookup", {"query": "otters"}),
        ('{"name": "ping", "arguments": {}}', "ping", {}),
    )

    @pytest.fixture
    def tool_call_format_plugin(self):
        return plugin


__RUNTIME_FIXTURE__

def test_registered(runtime):
    registration = runtime.components.tool_call_formats.registration("__NAME__")
    assert registration.plugin == "__NAME__"
    assert isinstance(registration.component, plugin.__CLASS__Format)


@tool
async def lookup(query: str) -> str:
    """Look something up."""
    return f"result for {query}"


@pytest.mark.anyio
async def test_a_written_call_runs_the_tool(openclaw_runtime_fake):
    fake = openclaw_runtime_fake
    fake.add_plugin(plugin, name="__NAME__")
    fake.provider.reply('{"name": "lookup", "arguments": {"query": "otters"}}')
    fake.provider.reply("Otters hold hands while they sleep.")
    result = await fake.run("Tell me about otters", session_id="s1", tools=[lookup])
    assert result.payloads[-1].text == "Otters hold hands while they sleep."
    tool_result = fake.provider.history[1].context.messages[-1]
    assert (tool_result.role, tool_result.text()) == ("toolResult", "result for otters")
''',
)

#: ``--kind`` → template.
KINDS: dict[str, KindTemplate] = {
    "engine": _ENGINE,
    "classifier": _CLASSIFIER,
    "sanitizer": _SANITIZER,
    "repairer": _REPAIRER,
    "provider": _PROVIDER,
    "format": _FORMAT,
}

RUNTIME_FIXTURE = _RUNTIME_FIXTURE
