"""One ``test_hook_<name>`` per hookspec, exercised through the plugin manager."""

from __future__ import annotations

from typing import Any

import pluggy
import pytest

from openclaw_runtime import (
    ConfigurationError,
    Model,
    OpenClawRuntimeWarning,
    RunBlock,
    RunBlockedError,
    UnknownContextEngineError,
    hookimpl,
)
from openclaw_runtime.failover import FailoverClassification, FailoverReason, FailoverSignal
from openclaw_runtime.testing import FakeProvider, fake_model
from openclaw_runtime.transcript import TranscriptPolicy


class Recording:
    def __init__(self):
        self.calls = []


def test_hook_runtime_add_hookspecs(runtime_factory):
    class Specs:
        @staticmethod
        def acme_double(value):
            """Double a value."""

    pluggy.HookspecMarker("openclaw_runtime")(Specs.acme_double)

    class SpecPlugin:
        @hookimpl
        def runtime_add_hookspecs(self, pm):
            pm.add_hookspecs(Specs)

    class ImplPlugin:
        @hookimpl
        def acme_double(self, value):
            return value * 2

    # the implementing plugin is registered after the spec arrives through the historic hook
    runtime = runtime_factory(plugins=[("specs", SpecPlugin()), ("impl", ImplPlugin())])
    assert runtime.plugin_manager.hook.acme_double(value=21) == [42]


def test_hook_runtime_configured(runtime_factory):
    seen = []

    class Plugin:
        @hookimpl
        def runtime_configured(self, runtime):
            seen.append(runtime)

    runtime = runtime_factory(plugins=[("configured", Plugin())])
    assert seen == [runtime]


def test_hook_runtime_shutdown(runtime_factory):
    seen = []

    class Plugin:
        @hookimpl
        def runtime_shutdown(self, runtime):
            seen.append(runtime)

    class Broken:
        @hookimpl
        def runtime_shutdown(self, runtime):
            raise RuntimeError("cannot close")

    runtime = runtime_factory(plugins=[("closer", Plugin()), ("broken", Broken())])
    runtime.close()
    runtime.close()
    assert seen == [runtime]  # once, even though another plugin raised
    assert [f.plugin for f in runtime.hooks.faults] == ["broken"]


@pytest.mark.anyio
async def test_hook_before_agent_run(runtime_factory, hook_recorder):
    class Gate:
        @hookimpl
        def before_agent_run(self, prompt, trigger):
            return RunBlock("no cron deletes") if trigger == "cron" and "delete" in prompt else None

    class Crashing:
        @hookimpl
        def before_agent_run(self):
            raise RuntimeError("policy service down")

    runtime = runtime_factory(plugins=[("gate", Gate()), ("crashing", Crashing())])
    agent = runtime.create_agent(model="echo", session_id="s1", session_key="k1", trigger="cron")
    with pytest.raises(RunBlockedError, match="no cron deletes") as info:
        await agent.prompt("delete everything")
    assert info.value.plugin_name == "gate"
    assert agent.state.messages == []

    await agent.prompt("say hi")  # allowed; the crashing plugin is skipped, not fatal
    assert agent.state.messages[-1].text() == "echo: say hi"
    call = hook_recorder.assert_called("before_agent_run", prompt="say hi")
    assert dict(call.kwargs) == {
        "session_id": "s1",
        "session_key": "k1",
        "prompt": "say hi",
        "provider": "echo",
        "model": "echo",
        "trigger": "cron",
    }
    assert {f.plugin for f in runtime.hooks.faults} == {"crashing"}


@pytest.mark.anyio
async def test_hook_on_agent_event(runtime_factory):
    seen = []

    class Observer:
        @hookimpl
        def on_agent_event(self, event, session_id):
            seen.append((event.type, session_id))

    class Crashing:
        @hookimpl
        def on_agent_event(self, event):
            raise ValueError("metrics backend down")

    assert runtime_factory().hooks.observes_events is False
    runtime = runtime_factory(plugins=[("observer", Observer()), ("crashing", Crashing())])
    agent = runtime.create_agent(model="echo", session_id="abc")
    await agent.prompt("hi")
    types = [t for t, _ in seen]
    assert types[0] == "agent_start"
    assert types[-1] == "agent_end"
    assert "message_update" in types
    assert {sid for _, sid in seen} == {"abc"}
    assert agent.state.messages[-1].text() == "echo: hi"
    assert runtime.hooks.faults
    assert all(f.plugin == "crashing" for f in runtime.hooks.faults)


def test_hook_register_context_engines(runtime_factory):
    class EngineA:
        pass

    class PluginA:
        @hookimpl
        def register_context_engines(self, register):
            register("sliding_window", EngineA)

    runtime = runtime_factory(plugins=[("plugin-a", PluginA())])
    registration = runtime.components.context_engines.registration("sliding_window")
    assert (registration.component, registration.plugin) == (EngineA, "plugin-a")
    with pytest.raises(
        UnknownContextEngineError, match=r"'nope'; registered: 'legacy', 'sliding_window'"
    ):
        runtime.components.context_engines.get("nope")

    class PluginB:
        @hookimpl
        def register_context_engines(self, register):
            register("sliding_window", object)

    # a name clash is settled (the plugin loaded first wins), reported, and never raises
    clash = runtime_factory(plugins=[("plugin-a", PluginA()), ("plugin-b", PluginB())])
    with pytest.warns(OpenClawRuntimeWarning, match=r"'sliding_window' is registered by both"):
        registration = clash.components.context_engines.registration("sliding_window")
    assert (registration.component, registration.plugin) == (EngineA, "plugin-a")
    (found,) = clash.component_clashes()
    assert (found.name, found.kept, found.dropped, found.rule) == (
        "sliding_window",
        "plugin-a",
        "plugin-b",
        "first",
    )


def test_hook_classify_failover(runtime_factory):
    class Acme:
        @hookimpl
        def classify_failover(self, provider, message):
            if provider != "acme":
                return None
            return FailoverClassification.of("billing") if "melted" in message else None

    class Crashing:
        @hookimpl(tryfirst=True)
        def classify_failover(self, signal):
            raise RuntimeError("classifier bug")

    class Generic:
        @hookimpl(trylast=True)
        def classify_failover(self, status):
            return FailoverClassification.of("rate_limit") if status == 418 else None

    runtime = runtime_factory(
        plugins=[("generic", Generic()), ("acme", Acme()), ("crashing", Crashing())]
    )
    hooks = runtime.hooks
    result, plugin = hooks.classify_failover(
        FailoverSignal(provider="acme", message="quota melted")
    )
    assert (result.reason, plugin) == (FailoverReason.BILLING, "acme")
    # the built-in classifier has no opinion on 418, so the test's own trylast plugin answers
    result, plugin = hooks.classify_failover(FailoverSignal(provider="other", status=418))
    assert (result.reason, plugin) == (FailoverReason.RATE_LIMIT, "generic")
    result, plugin = hooks.classify_failover(FailoverSignal(provider="other", status=429))
    assert (result.reason, plugin) == (FailoverReason.RATE_LIMIT, "builtin.failover")
    assert hooks.classify_failover(FailoverSignal(provider="other", status=200)) == (None, None)
    assert {f.plugin for f in hooks.faults} == {"crashing"}
    assert "classifier bug" in hooks.faults[0].error


def test_hook_register_transcript_sanitizers(runtime_factory):
    def first(messages, policy):
        return messages

    class Plugin:
        @hookimpl
        def register_transcript_sanitizers(self, register):
            register("zeta", first, order=10)
            register("alpha", first)
            register("beta", first, order=10)

    runtime = runtime_factory(plugins=[("sanitizers", Plugin())])
    ordered = [
        r for r in runtime.components.transcript_sanitizers.ordered() if r.plugin == "sanitizers"
    ]
    assert [(r.name, r.order) for r in ordered] == [("beta", 10), ("zeta", 10), ("alpha", 100)]


def test_hook_validate_replay_turns(runtime_factory):
    class Anthropic:
        @hookimpl
        def validate_replay_turns(self, messages, policy):
            return ["anthropic-validated"] if policy.provider == "anthropic" else None

    class Generic:
        @hookimpl(trylast=True)
        def validate_replay_turns(self, messages):
            return list(messages)

    runtime = runtime_factory(plugins=[("generic", Generic()), ("anthropic", Anthropic())])
    anthropic = TranscriptPolicy(api="anthropic-messages", provider="anthropic", model_id="m")
    other = TranscriptPolicy(api="openai-completions", provider="openai", model_id="m")
    assert runtime.hooks.validate_replay_turns(["x"], anthropic) == (
        ["anthropic-validated"],
        "anthropic",
    )
    assert runtime.hooks.validate_replay_turns(["x"], other) == (["x"], "generic")


def test_hook_register_stream_repairers(runtime_factory):
    async def repair(events, context):
        async for event in events:
            yield event

    class Plugin:
        @hookimpl
        def register_stream_repairers(self, register):
            register("late", repair, order=200)
            register("early", repair, order=1)

    runtime = runtime_factory(plugins=[("repairers", Plugin())])
    ordered = runtime.components.stream_repairers.ordered()
    assert [r.name for r in ordered if r.plugin == "repairers"] == ["early", "late"]


def test_hook_register_tool_call_formats(runtime_factory):
    def parse(text):
        return []

    class Plugin:
        @hookimpl
        def register_tool_call_formats(self, register):
            register("acme", parse)

    class Broken:
        @hookimpl
        def register_tool_call_formats(self, register):
            register("half", parse)
            raise RuntimeError("broke after registering one")

    runtime = runtime_factory(
        plugins=[("formats", Plugin()), ("broken", Broken())], on_load_failure="warn"
    )
    formats = runtime.components.tool_call_formats
    assert formats.get("acme") is parse
    assert "half" not in formats  # a plugin that raised leaves nothing half-registered
    assert [f.plugin for f in runtime.hooks.faults] == ["broken"]


@pytest.mark.anyio
async def test_hook_register_prompt_sections(runtime_factory):
    provider = FakeProvider(api="acme-api")
    provider.reply("ok")

    class Plugin:
        @hookimpl
        def register_providers(self, register):
            register("acme-api", provider.stream_fn)

        @hookimpl
        def register_models(self, register):
            register(fake_model(id="acme-1", api="acme-api", provider="acme"))

        @hookimpl
        def register_prompt_sections(self, register):
            register("safety", lambda context: ["## Safety", "House safety rules."])
            register(
                "house_rules", lambda context: f"## House Rules\nAgent {context.runtime.agent_id}."
            )

    class Broken:
        @hookimpl
        def register_prompt_sections(self, register):
            def render(context):
                raise RuntimeError("section service down")

            register("broken_section", render)

    runtime = runtime_factory(
        {"agent": {"model": "acme/acme-1", "agent_id": "ops"}},
        plugins=[("sections", Plugin()), ("broken", Broken())],
    )
    result = await runtime.run("hi")
    assert result.ok, result.error
    system = provider.history[0].context.system_prompt
    assert "## Safety\nHouse safety rules.\n" in system
    assert "You have no independent goals" not in system  # replaced, not added twice
    assert "## House Rules\nAgent ops.\n## Current Date & Time" in system
    registration = runtime.components.prompt_sections.registration("house_rules")
    assert registration.plugin == "sections"
    # the broken section is left out and its plugin reported on the run, not fatal
    assert [(f.plugin, f.hook) for f in result.faults] == [("broken", "register_prompt_sections")]


@pytest.mark.anyio
async def test_hook_register_providers(runtime_factory):
    provider = FakeProvider(api="acme-api")
    provider.reply("from acme")

    class Plugin:
        @hookimpl
        def register_providers(self, register):
            register("acme-api", provider.stream_fn)

        @hookimpl
        def register_models(self, register):
            register(fake_model(id="acme-1", api="acme-api", provider="acme"))

    runtime = runtime_factory(plugins=[("acme", Plugin())])
    agent = runtime.create_agent(model="acme/acme-1")
    await agent.prompt("hi")
    assert agent.state.messages[-1].text() == "from acme"
    assert provider.history[0].model.ref == "acme/acme-1"
    assert runtime.components.providers.registration("acme-api").plugin == "acme"


def test_hook_register_models(runtime_factory):
    class Plugin:
        @hookimpl
        def register_models(self, register):
            register(Model(id="m1", api="x", provider="p1"), aliases=("fast",))
            register(Model(id="shared", api="x", provider="p1"))
            register(Model(id="shared", api="x", provider="p2"))

    runtime = runtime_factory(
        {"models": [{"id": "local", "api": "x", "provider": "mine", "contextWindow": 4096}]},
        plugins=[("models", Plugin())],
    )
    assert runtime.resolve_model("fast").ref == "p1/m1"
    assert runtime.resolve_model("m1").ref == "p1/m1"
    assert runtime.resolve_model("p2/shared").provider == "p2"
    assert runtime.resolve_model("local").context_window == 4096
    assert runtime.models.owner("p1/m1") == "models"
    with pytest.raises(LookupError, match="ambiguous: p1/shared, p2/shared"):
        runtime.resolve_model("shared")
    with pytest.raises(LookupError, match="unknown model 'nope'"):
        runtime.resolve_model("nope")


def test_hook_register_backends(runtime_factory):
    def lanes_factory(config):
        return "lanes"

    class Plugin:
        @hookimpl
        def register_backends(self, register):
            register("lanes", "memory", lanes_factory)

    runtime = runtime_factory(plugins=[("backends", Plugin())])
    assert runtime.components.backends["lanes"].get("memory") is lanes_factory

    class Wrong:
        @hookimpl
        def register_backends(self, register):
            register("queues", "memory", lanes_factory)

    with pytest.raises(ConfigurationError, match="unknown kind 'queues'"):
        _ = runtime_factory(plugins=[("wrong", Wrong())]).components


# --------------------------------------------------------------------------- before_agent_finalize


def _finalize_config(server: Any, provider: str = "mock") -> dict[str, Any]:
    """One model served by the fault-injecting server, one key."""
    return {
        "models": [
            {
                "id": "main",
                "api": "openai-completions",
                "provider": provider,
                "baseUrl": server.base_url,
                "contextWindow": 64_000,
                "maxTokens": 1024,
            }
        ],
        "agent": {"model": f"{provider}/main", "timeout_seconds": 20},
        "auth": {
            "profiles": [
                {
                    "id": f"{provider}:0",
                    "provider": provider,
                    "mode": "api_key",
                    "credential": {"value": "key-a"},
                }
            ]
        },
    }


def _chat_requests(server: Any) -> list[Any]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


@pytest.mark.anyio
async def test_hook_before_agent_finalize_asks_for_one_revision_over_http(runtime_factory):
    from openclaw_runtime.runner.finalize import (
        BEFORE_AGENT_FINALIZE_RETRY_PROMPT_PREFIX,
        FinalizeDecision,
    )
    from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply

    seen: list[tuple[int, str, str]] = []

    class Verifier:
        @hookimpl
        def before_agent_finalize(self, last_assistant_message, revision, messages, provider):
            seen.append((revision, last_assistant_message, messages[-1].role))
            assert provider == "mock"
            if "source:" not in last_assistant_message:
                return FinalizeDecision("revise", "Name your source as 'source: <name>'.")
            return None

    events: list[Any] = []
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as server:
        server.enqueue(
            Reply(text="Lisbon is sunny.", model="main"),
            Reply(text="Lisbon is sunny. source: IPMA", model="main"),
        )
        runtime = runtime_factory(_finalize_config(server), plugins=[("verifier", Verifier())])
        result = await runtime.run("Weather in Lisbon?", on_event=events.append)
        await runtime.aclose()
        requests = _chat_requests(server)

    assert result.ok, result.error
    assert result.text == "Lisbon is sunny. source: IPMA"  # the revised answer, not the draft
    assert seen == [
        (0, "Lisbon is sunny.", "assistant"),
        (1, "Lisbon is sunny. source: IPMA", "assistant"),
    ]
    assert len(requests) == 2
    sent = requests[1].body["messages"]
    assert [m["role"] for m in sent[-3:]] == ["user", "assistant", "user"]
    assert sent[-2]["content"] == "Lisbon is sunny."
    revision = sent[-1]["content"]
    assert revision.startswith(BEFORE_AGENT_FINALIZE_RETRY_PROMPT_PREFIX)
    assert revision.endswith("Name your source as 'source: <name>'.")
    assert "Weather in Lisbon?" not in revision  # the request stands alone, no re-sent prompt
    scheduled = [e for e in events if e.type == "retry_scheduled"]
    assert [(e.kind, e.count, e.limit) for e in scheduled] == [("before_agent_finalize", 1, 3)]
    roles = [m.role for m in result.messages]
    assert roles == ["user", "assistant", "user", "assistant"]


@pytest.mark.anyio
async def test_hook_before_agent_finalize_budget_stops_an_always_revising_plugin(
    runtime_factory,
):
    from openclaw_runtime.runner.finalize import MAX_BEFORE_AGENT_FINALIZE_REVISIONS
    from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply

    calls: list[int] = []

    class Never:
        @hookimpl
        def before_agent_finalize(self, revision):
            calls.append(revision)
            return {"action": "revise", "reason": "Try again."}

    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as server:
        server.enqueue(*(Reply(text=f"answer {n}", model="main") for n in range(6)))
        runtime = runtime_factory(_finalize_config(server), plugins=[("never", Never())])
        result = await runtime.run("hi")
        await runtime.aclose()
        requests = _chat_requests(server)

    assert result.ok, result.error
    assert calls == list(range(MAX_BEFORE_AGENT_FINALIZE_REVISIONS))
    assert len(requests) == MAX_BEFORE_AGENT_FINALIZE_REVISIONS + 1
    assert result.text == f"answer {MAX_BEFORE_AGENT_FINALIZE_REVISIONS}"


@pytest.mark.anyio
async def test_hook_before_agent_finalize_finalize_wins_and_a_raising_plugin_is_contained(
    runtime_factory,
):
    from openclaw_runtime.runner.finalize import FinalizeDecision
    from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply

    class Reviser:
        @hookimpl
        def before_agent_finalize(self):
            return "More detail, please."

    class Gate:
        @hookimpl
        def before_agent_finalize(self):
            return FinalizeDecision("finalize")

    class Broken:
        @hookimpl
        def before_agent_finalize(self):
            raise RuntimeError("verifier down")

    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as server:
        server.enqueue(Reply(text="short", model="main"))
        runtime = runtime_factory(
            _finalize_config(server),
            plugins=[("reviser", Reviser()), ("gate", Gate()), ("broken", Broken())],
        )
        result = await runtime.run("hi")
        await runtime.aclose()
        requests = _chat_requests(server)

    assert result.ok and result.text == "short"
    assert len(requests) == 1
    assert ("broken", "before_agent_finalize") in [(f.plugin, f.hook) for f in result.faults]


# --------------------------------------------------------------------------- before_agent_reply


@pytest.mark.anyio
async def test_hook_before_agent_reply_answers_a_cron_run_without_the_model(runtime_factory):
    from openclaw_runtime.runner.cron_reply import ReplyClaim
    from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply

    seen: list[tuple[str, str]] = []

    class Digest:
        @hookimpl
        def before_agent_reply(self, prompt, trigger):
            seen.append((prompt, trigger))
            if prompt == "silent check":
                return {"handled": True, "reply": {"text": ""}}
            return ReplyClaim("Nothing new since yesterday.") if prompt == "daily digest" else None

    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as server:
        server.enqueue(Reply(text="from the model", model="main"))
        runtime = runtime_factory(_finalize_config(server), plugins=[("digest", Digest())])
        claimed = await runtime.run("daily digest", trigger="cron", session_key="cron:digest")
        silent = await runtime.run("silent check", trigger="cron")
        unclaimed = await runtime.run("something else", trigger="cron")
        interactive = await runtime.run("daily digest")  # a user turn is never offered
        await runtime.aclose()
        chat = _chat_requests(server)

    assert claimed.ok and claimed.text == "Nothing new since yesterday."
    assert claimed.outcome.stop_reason == "hook_reply" and claimed.attempts == 0
    assert silent.ok and silent.text == "" and silent.payloads == []
    assert unclaimed.ok and unclaimed.text == "from the model"
    assert interactive.ok
    assert len(chat) == 2  # only the unclaimed cron run and the user turn called the model
    assert seen == [
        ("daily digest", "cron"),
        ("silent check", "cron"),
        ("something else", "cron"),
    ]


@pytest.mark.anyio
async def test_hook_before_agent_reply_raising_plugin_does_not_claim(runtime_factory):
    from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply

    class Broken:
        @hookimpl
        def before_agent_reply(self):
            raise RuntimeError("digest store down")

    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as server:
        server.enqueue(Reply(text="the model answered", model="main"))
        runtime = runtime_factory(_finalize_config(server), plugins=[("broken", Broken())])
        result = await runtime.run("daily digest", trigger="cron")
        await runtime.aclose()

    assert result.ok and result.text == "the model answered"
    assert ("broken", "before_agent_reply") in [(f.plugin, f.hook) for f in result.faults]


def test_hook_register_plugin_settings(runtime_factory):
    from pydantic import BaseModel

    class GreeterSettings(BaseModel):
        greeting: str = "Hello"
        retries: int = 2

    seen = []

    class Plugin:
        @hookimpl
        def register_plugin_settings(self, register):
            register("greeter", GreeterSettings)

        @hookimpl
        def runtime_configured(self, runtime):
            seen.append(runtime.plugin_settings("greeter", GreeterSettings))

    config = {"plugins": {"settings": {"greeter": {"greeting": "Hi"}}}}
    runtime = runtime_factory(config, plugins=[("greeter", Plugin())])
    assert seen == [GreeterSettings(greeting="Hi", retries=2)]  # ready before runtime_configured
    assert runtime.plugin_settings("greeter").greeting == "Hi"
    bad = {"plugins": {"settings": {"greeter": {"retries": "many"}}}}
    with pytest.raises(ConfigurationError, match=r"settings\.greeter\] retries: .*'greeter'"):
        runtime_factory(bad, plugins=[("greeter", Plugin())])
