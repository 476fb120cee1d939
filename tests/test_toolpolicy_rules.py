"""Tool policy rules as tables (issue 12 §1): names and aliases, groups, ``*`` patterns,
deny-over-allow, every layer, the layer order, owner-only, profiles, ``also_allow``, and the
config errors that name the key."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

import pytest

from openclaw_runtime import ConfigurationError
from openclaw_runtime.agent import tool
from openclaw_runtime.config import RuntimeConfig
from openclaw_runtime.llm import Model
from openclaw_runtime.runner.request import RunRequest
from openclaw_runtime.runner.tool_policy import (
    offered_run_tool_summaries,
    offered_run_tools,
    run_tool_policy_input,
)
from openclaw_runtime.toolpolicy import (
    ToolPolicy,
    ToolPolicyConfig,
    ToolPolicyInput,
    agent_id_from_session_key,
    apply_owner_only_tool_policy,
    apply_tool_policy,
    decide_tools,
    expand_tool_groups,
    filter_tools_by_policy,
    format_tool_decisions,
    is_owner_only_tool,
    is_tool_allowed_by_policies,
    normalize_tool_name,
    offered_tools,
    pick_tool_policy,
    resolve_effective_tool_policy,
    resolve_provider_tool_policy,
    tool_policy_verdict,
)
from openclaw_runtime.toolpolicy.settings import GroupToolPolicySettings


@dataclass(frozen=True)
class FakeTool:
    name: str
    description: str = ""
    owner_only: bool = False


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("exec", "exec"),
        ("  Bash ", "exec"),
        ("BASH", "exec"),
        ("apply-patch", "apply_patch"),
        ("Apply-Patch", "apply_patch"),
        ("Read", "read"),
        ("my_tool", "my_tool"),
    ],
)
def test_normalize_tool_name(raw: str, expected: str) -> None:
    assert normalize_tool_name(raw) == expected


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (["group:fs"], ["read", "write", "edit", "apply_patch"]),
        (["group:runtime", "bash"], ["exec", "process"]),
        (["write", "group:fs"], ["write", "read", "edit", "apply_patch"]),
        (["GROUP:Automation"], ["cron", "gateway"]),
        (["group:nope"], ["group:nope"]),  # unknown group stays literal (matches nothing)
        (["web_*", "Web_*"], ["web_*"]),
    ],
)
def test_expand_tool_groups(entries: list[str], expected: list[str]) -> None:
    assert expand_tool_groups(entries) == expected


# --------------------------------------------------------------------------- one policy


@pytest.mark.parametrize(
    ("allow", "deny", "name", "allowed", "rule"),
    [
        (None, (), "exec", True, "no allow list"),
        ((), (), "exec", True, "no allow list"),
        (("",), (), "exec", True, "no allow list"),
        (("read",), (), "read", True, 'allow "read"'),
        (("read",), (), "write", False, "not in allow list"),
        (("Read",), (), "READ", True, 'allow "Read"'),
        (("read",), ("read",), "read", False, 'deny "read"'),
        (("*",), ("exec",), "exec", False, 'deny "exec"'),
        (("*",), ("exec",), "process", True, 'allow "*"'),
        (None, ("group:runtime",), "process", False, 'deny "group:runtime"'),
        (None, ("bash",), "exec", False, 'deny "bash"'),
        (("bash",), (), "exec", True, 'allow "bash"'),
        (("web_*",), (), "web_search", True, 'allow "web_*"'),
        (("web_*",), (), "web", False, "not in allow list"),
        (("web_*",), (), "my_web_search", False, "not in allow list"),  # anchored
        (("*_get",), (), "memory_get", True, 'allow "*_get"'),
        (("m*y_g*t",), (), "memory_get", True, 'allow "m*y_g*t"'),
        (("a.c",), (), "abc", False, "not in allow list"),  # regex metacharacters escaped
        (("exec",), (), "apply_patch", True, 'allow "exec" (apply_patch follows exec)'),
        (
            ("group:runtime",),
            (),
            "apply_patch",
            True,
            'allow "group:runtime" (apply_patch follows exec)',
        ),
        (("exec",), ("apply_patch",), "apply_patch", False, 'deny "apply_patch"'),
        (("group:fs",), ("write",), "write", False, 'deny "write"'),
        (("group:fs",), ("write",), "edit", True, 'allow "group:fs"'),
        (("*",), ("*",), "read", False, 'deny "*"'),
    ],
)
def test_tool_policy_verdict(
    allow: tuple[str, ...] | None, deny: tuple[str, ...], name: str, allowed: bool, rule: str
) -> None:
    verdict = tool_policy_verdict(ToolPolicy(allow=allow, deny=deny), name)
    assert (verdict.allowed, verdict.rule) == (allowed, rule)


def test_no_policy_allows_and_policies_combine_with_and() -> None:
    assert tool_policy_verdict(None, "exec").allowed
    read_only = ToolPolicy(allow=("read", "exec"))
    no_exec = ToolPolicy(deny=("exec",))
    assert is_tool_allowed_by_policies("read", [read_only, None, no_exec])
    assert not is_tool_allowed_by_policies("exec", [read_only, no_exec])
    assert not is_tool_allowed_by_policies("write", [read_only, no_exec])
    tools = [FakeTool("read"), FakeTool("write"), FakeTool("exec")]
    assert [t.name for t in filter_tools_by_policy(tools, read_only)] == ["read", "exec"]


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, None),
        ({"allow": ["read"]}, ToolPolicy(allow=("read",))),
        ({"deny": ["exec"]}, ToolPolicy(deny=("exec",))),
        ({"allow": ["read"], "also_allow": ["exec"]}, ToolPolicy(allow=("read", "exec"))),
        ({"alsoAllow": ["exec"]}, ToolPolicy(allow=("*", "exec"))),
        ({"also_allow": ["x"], "deny": ["y"]}, ToolPolicy(allow=("*", "x"), deny=("y",))),
        ({"allow": []}, ToolPolicy(allow=())),
    ],
)
def test_pick_tool_policy(settings: dict[str, Any], expected: ToolPolicy | None) -> None:
    assert pick_tool_policy(GroupToolPolicySettings.model_validate(settings)) == expected


# --------------------------------------------------------------------------- layers


def policy_config(**sections: Any) -> ToolPolicyConfig:
    return ToolPolicyConfig.from_config(RuntimeConfig.coerce(sections))


@pytest.mark.parametrize(
    ("keys", "provider", "model", "expected"),
    [
        (["openai", "openai/gpt-4o"], "openai", "gpt-4o", "openai/gpt-4o"),
        (["openai", "openai/gpt-4o"], "openai", "gpt-4o-mini", "openai"),
        (["openai"], "OpenAI", "gpt-4o", "openai"),
        ([" OpenAI/GPT-4o "], "openai", "gpt-4o", " OpenAI/GPT-4o "),
        (["openrouter/anthropic/claude"], "openrouter", "anthropic/claude", None),
        (["anthropic/claude"], "openrouter", "anthropic/claude", "anthropic/claude"),
        (["google"], "openai", "gpt-4o", None),
        (["openai"], None, "gpt-4o", None),
    ],
)
def test_resolve_provider_tool_policy(
    keys: list[str], provider: str | None, model: str | None, expected: str | None
) -> None:
    config = policy_config(tools={"by_provider": {k: {"deny": ["x"]} for k in keys}})
    found = resolve_provider_tool_policy(config.tools.by_provider, provider, model)
    assert (found[0] if found else None) == expected


LAYERED = {
    "tools": {
        "deny": ["group:automation"],
        "by_provider": {
            "mock": {"deny": ["browser"]},
            "mock/big": {"allow": ["group:fs", "group:runtime", "web_*", "browser"]},
        },
    },
    "agent": {"tools": {"deny": ["web_fetch"], "by_provider": {"mock": {"deny": ["edit"]}}}},
    "agents": {"ops": {"tools": {"allow": ["exec", "read", "process", "cron"]}}},
    "groups": {
        "family": {"tools": {"deny": ["group:runtime"]}},
        "*": {"tools": {"allow": ["read", "web_search"]}},
    },
}
CATALOGUE = [
    "read",
    "write",
    "edit",
    "apply_patch",
    "exec",
    "process",
    "web_search",
    "web_fetch",
    "browser",
    "cron",
    "gateway",
    "custom",
]


@pytest.mark.parametrize(
    ("inputs", "offered", "removed"),
    [
        pytest.param(
            ToolPolicyInput(provider="other", model="m"),
            [
                "read",
                "write",
                "edit",
                "apply_patch",
                "exec",
                "process",
                "web_search",
                "browser",
                "custom",
            ],
            {
                "web_fetch": ("agent", "[agent.tools]", 'deny "web_fetch"'),
                "cron": ("global", "[tools]", 'deny "group:automation"'),
                "gateway": ("global", "[tools]", 'deny "group:automation"'),
            },
            id="global-and-agent",
        ),
        pytest.param(
            ToolPolicyInput(provider="mock", model="small"),
            ["read", "write", "apply_patch", "exec", "process", "web_search", "custom"],
            {
                "browser": ("provider", '[tools.by_provider."mock"]', 'deny "browser"'),
                "edit": ("agent-provider", '[agent.tools.by_provider."mock"]', 'deny "edit"'),
            },
            id="provider-bare-key",
        ),
        pytest.param(
            ToolPolicyInput(provider="mock", model="big"),
            ["read", "write", "apply_patch", "exec", "process", "web_search", "browser"],
            {
                "custom": ("provider", '[tools.by_provider."mock/big"]', "not in allow list"),
                "cron": ("global", "[tools]", 'deny "group:automation"'),
            },
            id="provider-model-key-wins-no-merge",
        ),
        pytest.param(
            ToolPolicyInput(provider="other", model="m", agent_id="ops"),
            ["read", "apply_patch", "exec", "process"],
            {
                "cron": ("global", "[tools]", 'deny "group:automation"'),
                "write": ("agent", '[agents."ops".tools]', "not in allow list"),
                "web_fetch": ("agent", '[agents."ops".tools]', "not in allow list"),
            },
            id="named-agent-replaces-agent-tools",
        ),
        pytest.param(
            ToolPolicyInput(provider="other", model="m", session_key="agent:ops:telegram:group:1"),
            ["read", "apply_patch", "exec", "process"],
            {},
            id="agent-from-session-key",
        ),
        pytest.param(
            ToolPolicyInput(provider="other", model="m", group_id="family"),
            ["read", "write", "edit", "apply_patch", "web_search", "browser", "custom"],
            {
                "exec": ("group", '[groups."family".tools]', 'deny "group:runtime"'),
                "process": ("group", '[groups."family".tools]', 'deny "group:runtime"'),
            },
            id="group",
        ),
        pytest.param(
            ToolPolicyInput(provider="other", model="m", group_id="strangers"),
            ["read", "web_search"],
            {"custom": ("group", '[groups."*".tools]', "not in allow list")},
            id="unknown-group-gets-the-star-group",
        ),
        pytest.param(
            ToolPolicyInput(provider="other", model="m", sender_is_owner=True, trigger="memory"),
            ["read", "write"],
            {
                "exec": (
                    "memory-flush",
                    "trigger=memory",
                    "memory-flush runs keep only read and write",
                )
            },
            id="memory-flush",
        ),
    ],
)
def test_layers_narrow_in_order(
    inputs: ToolPolicyInput, offered: list[str], removed: dict[str, tuple[str, str, str]]
) -> None:
    config = policy_config(**LAYERED)
    tools = [FakeTool(name) for name in CATALOGUE]
    inputs = dataclasses.replace(inputs, sender_is_owner=True)  # owner-only has its own table
    decisions = {d.name: d for d in decide_tools(tools, config, inputs)}
    assert [n for n in CATALOGUE if decisions[n].offered] == offered
    for name, (layer, source, rule) in removed.items():
        d = decisions[name]
        assert (d.offered, d.layer, d.source, d.rule) == (False, layer, source, rule), name


def test_deny_in_any_layer_beats_allow_in_every_other() -> None:
    config = policy_config(
        tools={"allow": ["exec"]},
        agent={"tools": {"allow": ["exec"]}},
        groups={"g": {"tools": {"allow": ["exec"], "deny": ["Bash"]}}},
    )
    inputs = ToolPolicyInput(provider="p", model="m", group_id="g", sender_is_owner=True)
    (decision,) = decide_tools([FakeTool("exec")], config, inputs)
    assert (decision.offered, decision.layer, decision.rule) == (False, "group", 'deny "Bash"')
    assert apply_tool_policy([FakeTool("exec")], config, ToolPolicyInput()) != []


def test_profiles_and_also_allow() -> None:
    config = policy_config(tools={"profile": "coding", "also_allow": ["custom"]})
    tools = [FakeTool(n) for n in ("read", "exec", "sessions_list", "browser", "custom", "message")]
    offered = [t.name for t in apply_tool_policy(tools, config, ToolPolicyInput())]
    assert offered == ["read", "exec", "sessions_list", "custom"]
    (browser,) = [d for d in decide_tools(tools, config, ToolPolicyInput()) if d.name == "browser"]
    assert (browser.layer, browser.source) == ("profile", "[tools] profile 'coding'")
    # the agent's profile replaces the global one; a provider profile narrows further
    config = policy_config(
        tools={"profile": "coding", "by_provider": {"p": {"profile": "minimal"}}},
        agent={"tools": {"profile": "messaging"}},
    )
    assert [t.name for t in apply_tool_policy(tools, config, ToolPolicyInput())] == [
        "sessions_list",
        "message",
    ]
    narrowed = apply_tool_policy(tools, config, ToolPolicyInput(provider="p", model="m"))
    assert narrowed == []
    full = policy_config(tools={"profile": "full"})
    assert len(apply_tool_policy(tools, full, ToolPolicyInput())) == len(tools)


def test_no_group_id_means_no_group_layer_and_star_only_applies_to_groups() -> None:
    config = policy_config(groups={"*": {"tools": {"deny": ["exec"]}}})
    assert resolve_effective_tool_policy(config) == []
    (step,) = resolve_effective_tool_policy(config, group_id="any")
    assert (step.layer, step.source) == ("group", '[groups."*".tools]')


@pytest.mark.parametrize(
    ("key", "agent"),
    [
        ("agent:ops:main", "ops"),
        ("agent:OPS:telegram:group:1", "ops"),
        ("agent::x", None),
        ("agent:ops", None),
        ("telegram:group:1", None),
        (None, None),
    ],
)
def test_agent_id_from_session_key(key: str | None, agent: str | None) -> None:
    assert agent_id_from_session_key(key) == agent


# --------------------------------------------------------------------------- owner-only


def test_owner_only_by_flag_and_by_name() -> None:
    @tool(owner_only=True)
    def deploy(target: str) -> str:
        """Deploy the service."""
        return target

    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        return q

    assert deploy.owner_only and not lookup.owner_only
    assert is_owner_only_tool(deploy)
    assert is_owner_only_tool(FakeTool("Gateway")) and is_owner_only_tool(FakeTool("cron"))
    assert is_owner_only_tool(FakeTool("whatsapp_login"))
    assert not is_owner_only_tool(FakeTool("exec"))  # not by name (OpenClaw's set)
    tools = [deploy, lookup, FakeTool("cron")]
    assert apply_owner_only_tool_policy(tools, True) == tools
    for not_owner in (False, None):
        assert apply_owner_only_tool_policy(tools, not_owner) == [lookup]
    config = policy_config(tools={"allow": ["*"]})
    decisions = decide_tools(tools, config, ToolPolicyInput(sender_is_owner=False))
    assert [(d.name, d.offered, d.layer) for d in decisions] == [
        ("deploy", False, "owner-only"),
        ("lookup", True, None),
        ("cron", False, "owner-only"),
    ]
    assert offered_tools(tools, config, ToolPolicyInput(sender_is_owner=True)) == [
        ("deploy", "Deploy the service."),
        ("lookup", "Look something up."),
        ("cron", ""),
    ]


@pytest.mark.parametrize(
    ("options", "owner"),
    [
        ({}, True),
        ({"sender_id": "u1"}, False),
        ({"sender_id": "u1", "sender_is_owner": True}, True),
        ({"sender_is_owner": False}, False),
        ({"group_id": "family"}, False),  # a group run is never the local user by default
        ({"group_id": "family", "sender_is_owner": True}, True),
    ],
)
def test_run_request_sender_is_owner_default(options: dict[str, Any], owner: bool) -> None:
    assert RunRequest(prompt="hi", **options).sender_is_owner is owner


def test_run_request_rejects_a_non_bool_owner_flag() -> None:
    with pytest.raises(TypeError, match="sender_is_owner"):
        RunRequest(prompt="hi", sender_is_owner="yes")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        (
            {"tools": {"deny": ["group:runtme"]}},
            "tools.deny: Value error, unknown tool group 'group:runtme'",
        ),
        ({"tools": {"allow": ["read", "  "]}}, "tools.allow: Value error, entry 1 is empty"),
        (
            {"tools": {"profile": "admin"}},
            "tools.profile: Value error, unknown tool profile 'admin'",
        ),
        ({"tools": {"alow": ["read"]}}, "tools.alow: Extra inputs are not permitted"),
        (
            {"tools": {"by_provider": {"OpenAI": {}, "openai ": {}}}},
            "tools.by_provider: Value error, provider keys 'OpenAI' and 'openai ' are the same",
        ),
        (
            {"tools": {"by_provider": {"openai": {"by_provider": {}}}}},
            "tools.by_provider.openai.by_provider: Extra inputs are not permitted",
        ),
        ({"agent": {"tools": {"deny": "exec"}}}, "agent.tools.deny: Input should be a valid list"),
        (
            {"groups": {"g1": {"tools": {"profile": "coding"}}}},
            "groups.g1.tools.profile: Extra inputs",
        ),
        ({"groups": {"g1": {"tool": {}}}}, "groups.g1.tool: Extra inputs are not permitted"),
        (
            {"agents": {"ops": {"tools": {"deny": [3]}}}},
            "agents.ops.tools.deny.0: Input should be a valid string",
        ),
    ],
)
def test_bad_config_names_the_key(config: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        RuntimeConfig.coerce(config)
    assert fragment in str(caught.value)


def test_config_from_toml(tmp_path: Any) -> None:
    path = tmp_path / "openclaw-runtime.toml"
    path.write_text(
        '[tools]\ndeny = ["group:automation"]\nalsoAllow = ["x"]\n'
        '[tools.by_provider."openai/gpt-4o"]\nallow = ["read"]\n'
        '[agent.tools]\ndeny = ["exec"]\n'
        '[groups."*".tools]\ndeny = ["write"]\n',
        encoding="utf-8",
    )
    config = ToolPolicyConfig.from_config(RuntimeConfig.load(path))
    steps = resolve_effective_tool_policy(config, provider="openai", model="gpt-4o", group_id="g")
    assert [(s.layer, s.policy) for s in steps] == [
        ("global", ToolPolicy(allow=("*", "x"), deny=("group:automation",))),
        ("provider", ToolPolicy(allow=("read",))),
        ("agent", ToolPolicy(deny=("exec",))),
        ("group", ToolPolicy(deny=("write",))),
    ]


def test_unknown_entries_are_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    config = policy_config(tools={"allow": ["read", "raed"]})
    with caplog.at_level(logging.WARNING, logger="openclaw_runtime.toolpolicy"):
        offered = apply_tool_policy(
            [FakeTool("read"), FakeTool("write")], config, ToolPolicyInput()
        )
    assert [t.name for t in offered] == ["read"]  # fails closed: nothing is widened
    assert "[tools] names unknown tools (raed)" in caplog.text
    caplog.clear()
    config = policy_config(groups={"g": {"tools": {"allow": []}}})
    with caplog.at_level(logging.WARNING, logger="openclaw_runtime.toolpolicy"):
        offered = apply_tool_policy([FakeTool("exec")], config, ToolPolicyInput(group_id="g"))
    assert [t.name for t in offered] == ["exec"]  # as OpenClaw: an empty allow list is no list
    assert '[groups."g".tools] has an empty allow list; it restricts nothing' in caplog.text


def test_format_tool_decisions() -> None:
    config = policy_config(tools={"deny": ["exec"]})
    tools = [FakeTool("read", "Read a file.\nMore."), FakeTool("exec"), FakeTool("cron")]
    text = format_tool_decisions(
        decide_tools(tools, config, ToolPolicyInput(sender_is_owner=False))
    )
    assert text.splitlines() == [
        "offered (1):",
        "  read — Read a file.",
        "removed (2):",
        '  exec: removed by the global layer ([tools]): deny "exec"',
        "  cron: removed by the owner-only layer (sender_is_owner=False): the tool is owner-only",
    ]


def test_the_runner_helpers_read_the_request_and_the_model() -> None:
    @tool
    def read(path: str) -> str:
        """Read a file.

        Long description."""
        return path

    @tool(name="exec")
    def exec_(command: str) -> str:
        """Run a command."""
        return command

    config = RuntimeConfig.coerce(
        {
            "tools": {"by_provider": {"mock/big": {"deny": ["exec"]}}},
            "agents": {"ops": {"tools": {"deny": ["read"]}}},
        }
    )
    big = Model(id="big", api="openai-completions", provider="mock")
    small = Model(id="small", api="openai-completions", provider="mock")
    request = RunRequest(prompt="hi", tools=[read, exec_], sender_id="u1", group_id="g")
    assert run_tool_policy_input(request, big) == ToolPolicyInput(
        provider="mock", model="big", group_id="g", sender_is_owner=False, trigger="user"
    )
    assert offered_run_tools(config, request, big) == [read]
    assert offered_run_tool_summaries(config, request, small) == [
        ("read", "Read a file."),
        ("exec", "Run a command."),
    ]
    ops = RunRequest(prompt="hi", tools=[read, exec_], session_key="agent:ops:main")
    assert offered_run_tools(config, ops, small) == [exec_]
