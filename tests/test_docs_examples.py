"""The python examples of the plugin docs run, and do what the docs say.

Every ```python block of docs/plugin-hooks.md, docs/writing-plugins.md and
docs/context-engines.md is executed as a plugin module and loaded into a real ``Runtime``
(a turn runs through the whole pipeline with it, and no plugin fault may be recorded). Beyond
that, each example's documented behaviour is checked: the context engines are accepted by
the host (not quarantined) and used, the stream repairer and the engines pass their contract
suites, the hello plugin answers and refuses, the vetoes veto. docs/failover.md's yes/no
columns are checked against the decision functions.
"""

from __future__ import annotations

import re
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime import RunBlockedError, Runtime
from openclaw_runtime.auth.recording import resolve_auth_profile_failure_reason
from openclaw_runtime.failover.policy import (
    PromptDecisionInput,
    RetryLimitDecisionInput,
    resolve_run_failover_decision,
    should_escalate_retry_limit,
)
from openclaw_runtime.failover.reasons import FAILOVER_REASONS
from openclaw_runtime.testing import ContextEngineContract, StreamRepairerContract
from tests.run_support import ProbeProvider, probe_config

DOCS = Path(__file__).resolve().parent.parent / "docs"
EXAMPLE_DOCS = ("plugin-hooks.md", "writing-plugins.md", "context-engines.md")
#: The package a docs example pretends to live in (for its relative imports).
PACKAGE_OF = {"writing-plugins.md": "openclaw_runtime_hello"}


def python_blocks(doc: str) -> list[tuple[int, str]]:
    """``(line, code)`` of every ```python block of ``docs/<doc>``."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 1, textwrap.dedent(match.group(1)))
        for match in re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S)
    ]


def hook_section_block(hook: str) -> str:
    """The example of the ``### <hook>(...)`` section of docs/plugin-hooks.md."""
    text = (DOCS / "plugin-hooks.md").read_text(encoding="utf-8")
    section = re.search(rf"^### {hook}\(.*?\n(.*?)(?=^### |\Z)", text, re.M | re.S)
    assert section, hook
    block = re.search(r"^```python\n(.*?)^```", section.group(1), re.M | re.S)
    assert block, hook
    return textwrap.dedent(block.group(1))


def load_example(code: str, name: str, package: str | None = None) -> types.ModuleType:
    """Execute ``code`` as module ``name`` (inside ``package`` when given)."""
    full = f"{package}.{name}" if package else name
    module = types.ModuleType(full)
    module.__package__ = package or ""
    sys.modules[full] = module  # dataclasses and pickling look modules up by name
    exec(compile(code, f"<docs:{name}>", "exec"), module.__dict__)
    return module


ALL_BLOCKS = [
    pytest.param(doc, line, code, id=f"{doc}:{line}")
    for doc in EXAMPLE_DOCS
    for line, code in python_blocks(doc)
]


def test_the_example_docs_have_examples() -> None:
    assert {doc for doc in EXAMPLE_DOCS if python_blocks(doc)} == set(EXAMPLE_DOCS)


def echo_config(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {"state_dir": str(tmp_path / "state"), "agent": {"model": "echo/echo"}, **extra}


#: Config an example needs to be used at all (the engine or backend it registers selected).
CONFIG_FOR: dict[str, dict[str, Any]] = {
    "context-engines.md": {"context_engine": "recent_turns"},
    "register_context_engines": {"context_engine": "keep_everything"},
    "register_backends": {"backends": {"lanes": "memory"}},
}


def config_key(doc: str, code: str) -> str:
    if doc == "plugin-hooks.md":
        hook = re.search(r"@hookimpl\s*\ndef (\w+)", code)
        return hook.group(1) if hook else ""
    return doc


@pytest.mark.anyio
@pytest.mark.parametrize(("doc", "line", "code"), ALL_BLOCKS)
async def test_every_example_runs_as_a_plugin_of_a_real_runtime(
    doc: str, line: int, code: str, tmp_path: Path
) -> None:
    module = load_example(code, f"docs_example_{line}", PACKAGE_OF.get(doc))
    config = echo_config(tmp_path, **CONFIG_FOR.get(config_key(doc, code), {}))
    async with Runtime(config, plugins=[module], load_entrypoints=False) as runtime:
        assert runtime.plugin_manager.get_hookcallers(module), "the example implements no hook"
        runtime.registrations()  # every registration hook runs
        result = await runtime.run("hello docs", session_key="docs")
        assert result.ok, result.error
        assert result.faults == []
        assert runtime.hooks.faults == []
        assert runtime.context_engines.list_quarantines() == []


# --------------------------------------------------------------------------- behaviour


@pytest.mark.anyio
async def test_the_tutorial_plugin_greets_and_refuses(tmp_path: Path) -> None:
    ((_, code),) = python_blocks("writing-plugins.md")
    module = load_example(code, "docs_tutorial", "openclaw_runtime_hello")
    config = echo_config(tmp_path, agent={"model": "hello/greeter"})
    async with Runtime(config, plugins=[module], load_entrypoints=False) as runtime:
        result = await runtime.run("Ada", session_key="hello")
        assert result.ok and result.model == "greeter", result.error
        assert runtime.resolve_model("greeter-latest").id == "greeter"
        refused = await runtime.run("something forbidden", session_key="hello")
        assert refused.error is not None and refused.error.kind == "blocked"
        assert "does not greet 'forbidden' things" in refused.error.message
        assert refused.attempts == 0


@pytest.mark.anyio
async def test_the_before_agent_run_example_vetoes_destructive_cron_runs(tmp_path: Path) -> None:
    module = load_example(hook_section_block("before_agent_run"), "docs_veto")
    async with Runtime(echo_config(tmp_path), plugins=[module], load_entrypoints=False) as rt:
        assert (await rt.run("rm -rf /tmp/x", trigger="user")).ok
        refused = await rt.run("rm -rf /tmp/x", trigger="cron")
        assert refused.error is not None and refused.error.kind == "blocked"
        assert "docs_veto" in refused.error.message
        assert [p.text for p in refused.payloads] == ["scheduled runs may not delete files"]
        agent = rt.create_agent(trigger="cron")
        with pytest.raises(RunBlockedError, match="scheduled runs may not delete files") as info:
            await agent.prompt("rm -rf /tmp/x")
        assert info.value.plugin_name == "docs_veto"


@pytest.mark.anyio
async def test_the_engine_examples_are_accepted_and_used(tmp_path: Path) -> None:
    keep = load_example(hook_section_block("register_context_engines"), "docs_keep")
    config = echo_config(tmp_path, context_engine="keep_everything")
    async with Runtime(config, plugins=[keep], load_entrypoints=False) as runtime:
        engine = await runtime.resolve_context_engine()
        assert engine.info.id == "keep_everything"
        assert (await runtime.run("hi", session_key="keep")).ok
        compacted = await runtime.compact_session(session_key="keep")
        assert (compacted.ok, compacted.reason) == (True, "keeps everything")
        assert runtime.context_engines.list_quarantines() == []


@pytest.mark.anyio
async def test_the_recent_turns_engine_sends_the_last_turn_and_the_prompt(tmp_path: Path) -> None:
    ((_, code),) = python_blocks("context-engines.md")
    module = load_example(code, "docs_recent_turns")
    probe = ProbeProvider()
    config = {**probe_config(tmp_path / "state"), "context_engine": "recent_turns"}
    async with Runtime(config, plugins=[module, probe.plugin()], load_entrypoints=False) as rt:
        for prompt in ("first", "second", "third"):
            assert (await rt.run(prompt, session_key="recent")).ok
        assert rt.context_engines.list_quarantines() == []
    sent = [[text for role, text in call.context_texts if role == "user"] for call in probe.calls]
    assert sent == [["first"], ["first", "second"], ["second", "third"]]
    system_prompts = [request.context.system_prompt for request in probe.fake.history]
    assert "earlier messages are not shown" not in system_prompts[1]
    assert "2 earlier messages are not shown." in system_prompts[2]


@pytest.mark.anyio
async def test_the_on_agent_event_example_counts_events(tmp_path: Path) -> None:
    module = load_example(hook_section_block("on_agent_event"), "docs_counts")
    async with Runtime(echo_config(tmp_path), plugins=[module], load_entrypoints=False) as rt:
        agent = rt.create_agent()
        await agent.prompt("hello")
        await agent.wait_for_idle()
    assert module.COUNTS["agent_end"] == 1
    assert module.COUNTS["message_end"] >= 2


@pytest.mark.anyio
async def test_the_provider_and_model_examples_work_together(tmp_path: Path) -> None:
    providers = load_example(hook_section_block("register_providers"), "docs_providers")
    models = load_example(hook_section_block("register_models"), "docs_models")
    config = echo_config(tmp_path, agent={"model": "acme"})
    async with Runtime(config, plugins=[providers, models], load_entrypoints=False) as rt:
        result = await rt.run("ping", session_key="acme")
        assert result.ok and (result.provider, result.model) == ("acme", "acme-1"), result.error
        assert "ping" in result.text


def test_the_hookspec_example_adds_its_hook(tmp_path: Path) -> None:
    module = load_example(hook_section_block("runtime_add_hookspecs"), "docs_specs")
    runtime = Runtime(echo_config(tmp_path), plugins=[module], load_entrypoints=False)
    assert hasattr(runtime.plugin_manager.hook, "hello_before_greeting")
    runtime.close()


@pytest.fixture
def docs_keep_everything_engine() -> Any:
    module = load_example(hook_section_block("register_context_engines"), "docs_keep_c")
    return module.KeepEverythingEngine()


class TestKeepEverythingEngineContract(ContextEngineContract):
    @pytest.fixture
    def context_engine(self, docs_keep_everything_engine: Any) -> Any:
        return docs_keep_everything_engine


class TestRecentTurnsEngineContract(ContextEngineContract):
    @pytest.fixture
    def context_engine(self) -> Any:
        ((_, code),) = python_blocks("context-engines.md")
        return load_example(code, "docs_recent_c").RecentTurnsEngine()


class TestDocsStreamRepairerContract(StreamRepairerContract):
    @pytest.fixture
    def stream_repairer(self) -> Any:
        return load_example(hook_section_block("register_stream_repairers"), "docs_rep").passthrough


# --------------------------------------------------------------------------- failover.md


def failover_rows() -> dict[str, list[str]]:
    text = (DOCS / "failover.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells[1:5]
    return rows


def test_failover_md_lists_the_16_reasons_in_order() -> None:
    assert list(failover_rows()) == [str(reason) for reason in FAILOVER_REASONS]
    assert len(FAILOVER_REASONS) == 16


@pytest.mark.parametrize("reason", [str(r) for r in FAILOVER_REASONS])
def test_failover_md_says_what_the_code_does(reason: str) -> None:
    ledger, rotates, falls_back, retry_limit = failover_rows()[reason]
    started = resolve_auth_profile_failure_reason(reason, provider_started=True) is not None
    unstarted = resolve_auth_profile_failure_reason(reason, provider_started=False) is not None
    expected_ledger = "yes" if unstarted else ("if the provider had started" if started else "no")
    assert ledger == expected_ledger
    prompt = {
        "external_abort": False,
        "fallback_configured": True,
        "failover_failure": True,
        "failover_reason": reason,
    }
    first = resolve_run_failover_decision(PromptDecisionInput(**prompt, profile_rotated=False))
    after = resolve_run_failover_decision(PromptDecisionInput(**prompt, profile_rotated=True))
    assert rotates == ("yes" if first.action == "rotate_profile" else "no")
    assert falls_back == ("yes" if after.action == "fallback_model" else "no")
    limit = RetryLimitDecisionInput(
        fallback_configured=True, failover_reason=prompt["failover_reason"]
    )
    assert retry_limit == ("yes" if should_escalate_retry_limit(limit) else "no")
    assert (resolve_run_failover_decision(limit).action == "fallback_model") == (
        retry_limit == "yes"
    )


def test_anyio_is_importable() -> None:  # the examples' async tests need it
    assert anyio.__name__ == "anyio"
