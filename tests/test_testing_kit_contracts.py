"""The component contract suites, applied to every first-party component through the registry.

Each suite runs on what the built-in plugins register with a real runtime (formats,
sanitizers, the repairer, providers); ``tests/test_testing_kit_broken.py`` shows each suite
failing on a deliberately broken component.
"""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_runtime.llm import Model
from openclaw_runtime.testing import (
    ContextEngineContract,
    FakeProvider,
    FakeProviderPlugin,
    ProviderContract,
    StreamRepairerContract,
    ToolCallFormatContract,
    TranscriptSanitizerContract,
    fake_model,
    registered_component,
)

LOOKUP = {"query": "otters"}

# --------------------------------------------------------------------------- tool-call formats


class TestJsonObjectFormat(ToolCallFormatContract):
    format_name = "json_object"
    samples = (
        ('{"name": "lookup", "arguments": {"query": "otters"}}', "lookup", LOOKUP),
        ('{"tool": "lookup", "input": {"query": "otters"}}', "lookup", LOOKUP),
    )

    @pytest.fixture
    def tool_call_format_plugin(self) -> Any:
        return None


class TestBracketFormat(ToolCallFormatContract):
    format_name = "bracket"
    samples = (('[lookup]\n{"query": "otters"}\n[/lookup]', "lookup", LOOKUP),)

    @pytest.fixture
    def tool_call_format_plugin(self) -> Any:
        return None


class TestHarmonyFormat(ToolCallFormatContract):
    format_name = "harmony"
    samples = (
        (
            '<|channel|>commentary to=lookup code <|message|>{"query": "otters"}<|call|>',
            "lookup",
            LOOKUP,
        ),
    )

    @pytest.fixture
    def tool_call_format_plugin(self) -> Any:
        return None


class TestXmlishFormat(ToolCallFormatContract):
    format_name = "xmlish"
    samples = (
        ("<function=lookup><parameter=query>otters</parameter></function>", "lookup", LOOKUP),
    )

    @pytest.fixture
    def tool_call_format_plugin(self) -> Any:
        return None


# --------------------------------------------------------------------------- sanitizers, repairer

BUILTIN_SANITIZERS = (
    "blank_user_turns",
    "drop_reasoning_from_history",
    "drop_thinking_blocks",
    "google_turn_ordering",
    "images",
    "stale_assistant_usage",
    "thinking_signatures",
    "tool_call_inputs",
    "tool_result_details",
    "tool_use_result_pairing",
)


class TestBuiltinSanitizersKeepTheContract(TranscriptSanitizerContract):
    @pytest.fixture(params=BUILTIN_SANITIZERS)
    def sanitizer(self, request, tmp_path) -> Any:
        return registered_component(None, "transcript_sanitizers", request.param, tmp_path)


def test_every_builtin_sanitizer_is_under_contract(runtime_factory):
    registered = runtime_factory().components.transcript_sanitizers.names()
    assert sorted(registered) == sorted(BUILTIN_SANITIZERS)


class TestRegisteredRepairerKeepsTheContract(StreamRepairerContract):
    @pytest.fixture
    def stream_repairer(self, tmp_path) -> Any:
        return registered_component(None, "stream_repairers", "plain_text_tool_calls", tmp_path)


# --------------------------------------------------------------------------- providers


class TestOpenAICompletionsProvider(ProviderContract):
    @pytest.fixture
    def provider_plugin(self) -> Any:
        return None

    @pytest.fixture
    def provider_model(self, fault_server) -> Model:
        return Model(
            id="gpt-contract",
            api="openai-completions",
            provider="openai",
            baseUrl=fault_server.base_url,
        )


class TestEchoProvider(ProviderContract):
    uses_network = False

    @pytest.fixture
    def provider_plugin(self) -> Any:
        return None

    @pytest.fixture
    def provider_model(self) -> Model:
        return Model(id="echo", api="echo", provider="echo")


class TestFakeProvider(ProviderContract):
    uses_network = False

    @pytest.fixture
    def provider_plugin(self) -> Any:
        provider = FakeProvider()
        provider.reply("Hello from the fake.")
        return FakeProviderPlugin(provider)

    @pytest.fixture
    def provider_model(self) -> Model:
        return fake_model()


class TestRegisteredLegacyEngineKeepsTheContract(ContextEngineContract):
    @pytest.fixture
    def context_engine(self, tmp_path) -> Any:
        return registered_component(None, "context_engines", "legacy", tmp_path)()
