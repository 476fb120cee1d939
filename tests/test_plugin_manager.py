"""The plugin manager: policy, registration order, validation, attribution, conflicts."""

from __future__ import annotations

import pytest

from openclaw_runtime import (
    ComponentNotFoundError,
    ConfigurationError,
    HookError,
    PluginConflictError,
    PluginValidationError,
    Runtime,
    hookimpl,
)
from openclaw_runtime._plugins import PluginPolicy, get_plugin_manager, resolve_plugin_policy
from openclaw_runtime._registry import ComponentRegistry


@pytest.mark.parametrize(
    ("env", "kwargs", "expected"),
    [
        ({}, {}, PluginPolicy(None, frozenset(), False, False)),
        ({"OPENCLAW_RUNTIME_PLUGINS": "a, b,,"}, {}, PluginPolicy(frozenset({"a", "b"}))),
        ({"OPENCLAW_RUNTIME_PLUGINS": ""}, {}, PluginPolicy(frozenset())),
        ({"OPENCLAW_RUNTIME_PLUGINS": "a"}, {"allow": ["z"]}, PluginPolicy(frozenset({"z"}))),
        ({}, {"config_allow": ["c"]}, PluginPolicy(frozenset({"c"}))),
        (
            {"OPENCLAW_RUNTIME_PLUGINS": "e"},
            {"config_allow": ["c"]},
            PluginPolicy(frozenset({"e"})),
        ),
        (
            {"OPENCLAW_RUNTIME_DISABLE_PLUGINS": "x,y"},
            {},
            PluginPolicy(None, frozenset({"x", "y"})),
        ),
        ({}, {"config_disable": ["d"]}, PluginPolicy(None, frozenset({"d"}))),
        ({"OPENCLAW_RUNTIME_STRICT_PLUGINS": "1"}, {}, PluginPolicy(strict=True)),
        ({"OPENCLAW_RUNTIME_STRICT_PLUGINS": "no"}, {"config_strict": True}, PluginPolicy()),
        ({"OPENCLAW_RUNTIME_STRICT_PLUGINS": "1"}, {"strict": False}, PluginPolicy()),
        ({"OPENCLAW_RUNTIME_TRACE_PLUGINS": "true"}, {}, PluginPolicy(trace=True)),
    ],
)
def test_plugin_policy_resolution(env, kwargs, expected):
    assert resolve_plugin_policy(env=env, **kwargs) == expected


def test_unreadable_boolean_env_var_names_the_variable():
    with pytest.raises(ConfigurationError, match="OPENCLAW_RUNTIME_STRICT_PLUGINS='maybe'"):
        resolve_plugin_policy(env={"OPENCLAW_RUNTIME_STRICT_PLUGINS": "maybe"})


@pytest.mark.parametrize(
    ("policy", "name", "admitted"),
    [
        (PluginPolicy(), "any", True),
        (PluginPolicy(allow=frozenset()), "any", False),
        (PluginPolicy(allow=frozenset({"a"})), "a", True),
        (PluginPolicy(allow=frozenset({"a"})), "b", False),
        (PluginPolicy(blocked=frozenset({"a"})), "a", False),
        (PluginPolicy(blocked=frozenset({"*"})), "a", False),
        (PluginPolicy(allow=frozenset({"a"}), blocked=frozenset({"a"})), "a", False),
    ],
)
def test_policy_admits(policy, name, admitted):
    assert policy.admits(name) is admitted


def test_manager_registers_builtins_then_explicit_plugins(plugin_manager):
    assert plugin_manager.records["builtin.core"].source == "builtin"
    assert plugin_manager.get_plugin("builtin.core") is not None

    class Explicit:
        @hookimpl
        def register_providers(self, register):
            register("x", object())

    pm = get_plugin_manager(plugins=[("explicit", Explicit())], load_entrypoints=False)
    names = list(pm.records)
    assert names[-1] == "explicit"
    assert all(name.startswith("builtin.") for name in names[:-1])
    impls = pm.hook.register_providers.get_hookimpls()
    # pluggy calls the last entry first: the explicit plugin answers before the trylast built-in
    assert impls[-1].plugin_name == "explicit"
    assert all(i.plugin_name.startswith("builtin.") and i.trylast for i in impls[:-1])


def test_unknown_hook_is_a_validation_error_naming_the_plugin():
    class Typo:
        @hookimpl
        def register_provider(self, register):  # missing "s"
            pass

    with pytest.raises(PluginValidationError, match="register_provider") as info:
        get_plugin_manager(plugins=[("typo", Typo())], load_entrypoints=False)
    assert info.value.plugin_name == "typo"


def test_argument_not_in_spec_is_a_validation_error():
    class WrongArgs:
        @hookimpl
        def register_models(self, register, extra):
            pass

    with pytest.raises(PluginValidationError, match="extra") as info:
        get_plugin_manager(plugins=[("wrong", WrongArgs())], load_entrypoints=False)
    assert info.value.plugin_name == "wrong"


def test_two_plugins_with_one_name_conflict():
    class A:
        pass

    with pytest.raises(PluginConflictError, match="two plugins are named 'same'"):
        get_plugin_manager(plugins=[("same", A()), ("same", A())], load_entrypoints=False)


def test_registration_hook_raising_in_strict_mode_is_a_hook_error(runtime_factory):
    class Broken:
        @hookimpl
        def register_context_engines(self, register):
            raise KeyError("no config")

    runtime = runtime_factory(plugins=[("broken", Broken())])
    with pytest.raises(
        HookError, match="plugin 'broken' raised in register_context_engines"
    ) as info:
        _ = runtime.components
    assert info.value.plugin_name == "broken"
    assert info.value.hook_name == "register_context_engines"
    assert isinstance(info.value.__cause__, KeyError)


def test_late_register_call_is_refused(runtime_factory):
    saved = []

    class Sneaky:
        @hookimpl
        def register_tool_call_formats(self, register):
            saved.append(register)

    runtime = runtime_factory(plugins=[("sneaky", Sneaky())])
    _ = runtime.components
    with pytest.raises(ConfigurationError, match="after the hook returned"):
        saved[0]("late", object())


def test_bad_register_arguments_are_reported(runtime_factory):
    class Wrong:
        @hookimpl
        def register_providers(self, register):
            register("only-a-name")

    with pytest.raises(ConfigurationError, match="plugin 'wrong' called register"):
        _ = runtime_factory(plugins=[("wrong", Wrong())]).components


def test_component_registry_errors_list_what_exists():
    registry: ComponentRegistry[int] = ComponentRegistry("widget")
    registry.add("b", 2, plugin="p")
    registry.add("a", 1, plugin="p", order=5)
    with pytest.raises(ComponentNotFoundError) as info:
        registry.get("c")
    assert str(info.value) == "unknown widget 'c'; registered: 'a', 'b'"
    assert isinstance(info.value, LookupError)
    with pytest.raises(ValueError, match="non-empty"):
        registry.add(" ", 3)
    # a clash is recorded and settled, never raised: the first registration stays
    clash = registry.add("a", 9, plugin="q")
    assert clash is not None and registry.clashes == [clash]
    assert clash.message().startswith("widget 'a' is registered by both plugin 'p'")
    assert registry.get("a") == 1
    assert [r.name for r in registry.ordered()] == ["a", "b"]


def test_trace_writes_hook_calls_to_stderr(capfd):
    runtime = Runtime(load_entrypoints=False, env={"OPENCLAW_RUNTIME_TRACE_PLUGINS": "1"})
    assert "echo" in runtime.components.providers
    err = capfd.readouterr().err
    assert "register_providers <- builtin.core" in err


def test_describe_plugins_reports_hook_errors(runtime_factory):
    class Crashing:
        @hookimpl
        def on_agent_event(self, event):
            raise RuntimeError("boom")

    runtime = runtime_factory(plugins=[("crashing", Crashing())])
    from openclaw_runtime.events import AgentStart

    runtime.hooks.on_agent_event(AgentStart(), None)
    described = {p["name"]: p for p in runtime.describe_plugins()}
    assert described["crashing"]["hook_errors"] == [
        {"hook": "on_agent_event", "error": "RuntimeError: boom"}
    ]
    assert described["builtin.core"]["distribution"] == "openclaw-runtime"
    assert described["builtin.core"]["hooks"] == ["register_models", "register_providers"]
