"""``openclaw-runtime tools``: offered tools, and for each removed one the layer, config key and
rule that removed it, for a given provider/model/agent/group/sender (text and ``--json``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from openclaw_runtime.cli import cli

CONFIG = """\
[agent]
model = "openai/gpt-4o"

[agent.tools]
deny = ["browser"]

[agents.ops.tools]
allow = ["group:runtime", "read"]

[tools]
deny = ["group:automation"]

[tools.by_provider."openai/gpt-4o"]
allow = ["group:fs", "group:runtime", "web_*", "message", "lookup"]

[tools.by_provider.google]
deny = ["exec"]

[groups.family.tools]
deny = ["exec"]
"""


@pytest.fixture(autouse=True)
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    monkeypatch.delenv("OPENCLAW_RUNTIME_MODEL", raising=False)
    monkeypatch.delenv("OPENCLAW_RUNTIME_CONFIG", raising=False)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "openclaw-runtime.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def invoke(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--config", str(config), "tools", *args])


def as_json(config: Path, *args: str) -> dict[str, object]:
    result = invoke(config, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


def test_text_output_names_layer_key_and_rule(config: Path) -> None:
    result = invoke(config, "--group", "family", "--sender", "bob", "--tool", "lookup")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == (
        "tools for openai/gpt-4o, agent (default), group family, sender bob (not owner)"
    )
    offered = lines[lines.index("offered (9):") + 1 : lines.index("removed (15):")]
    assert [line.split()[0] for line in offered] == [
        "apply_patch", "edit", "message", "process", "read", "web_fetch", "web_search", "write",
        "lookup",
    ]  # fmt: skip
    assert '  exec: removed by the group layer ([groups."family".tools]): deny "exec"' in lines
    assert (
        "  cron: removed by the owner-only layer (sender_is_owner=False): the tool is owner-only"
        in lines
    )
    assert (
        '  nodes: removed by the provider layer ([tools.by_provider."openai/gpt-4o"]): '
        "not in allow list" in lines
    )


@pytest.mark.parametrize(
    ("args", "offered", "removed"),
    [
        (
            ("--owner",),
            ["apply_patch", "edit", "exec", "message", "process", "read", "web_fetch",
             "web_search", "write"],
            {"gateway": ("global", "[tools]", 'deny "group:automation"')},
        ),
        (
            ("--model", "google/gemini-2.5-pro", "--not-owner"),
            ["agents_list", "apply_patch", "canvas", "edit", "image", "memory_get",
             "memory_search", "message", "nodes", "process", "read", "session_status",
             "sessions_history", "sessions_list", "sessions_send", "sessions_spawn",
             "web_fetch", "web_search", "write"],
            {
                "exec": ("provider", '[tools.by_provider."google"]', 'deny "exec"'),
                "browser": ("agent", "[agent.tools]", 'deny "browser"'),
                "gateway": ("owner-only", "sender_is_owner=False", "the tool is owner-only"),
            },
        ),
        (
            ("--agent", "ops", "--provider", "other"),
            ["apply_patch", "exec", "process", "read"],
            {"write": ("agent", '[agents."ops".tools]', "not in allow list")},
        ),
        (
            ("--trigger", "memory"),
            ["read", "write"],
            {"exec": ("memory-flush", "trigger=memory", "memory-flush runs keep only read and write")},
        ),
    ],
)  # fmt: skip
def test_json_output(
    config: Path,
    args: tuple[str, ...],
    offered: list[str],
    removed: dict[str, tuple[str, str, str]],
) -> None:
    report = as_json(config, *args)
    assert report["offered"] == offered
    tools = {t["name"]: t for t in report["tools"]}  # type: ignore[attr-defined]
    for name, (layer, source, rule) in removed.items():
        assert (tools[name]["layer"], tools[name]["source"], tools[name]["rule"]) == (
            layer,
            source,
            rule,
        )


def test_a_bad_policy_is_a_usage_error_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[groups.family.tools]\ndeny = ["group:runtme"]\n', encoding="utf-8")
    result = CliRunner().invoke(cli, ["--config", str(path), "tools"])
    assert result.exit_code == 2
    assert "groups.family.tools.deny" in result.output
    assert "unknown tool group 'group:runtme'" in result.output


def test_the_worked_example_in_the_docs_is_real_output(tmp_path: Path) -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "tools.md").read_text("utf-8")
    example = docs[docs.index("## A worked example") :]
    toml = re.search(r"```toml\n(.*?)```", example, re.DOTALL)
    shown = re.search(r"```text\n\$ openclaw-runtime tools (.*?)\n(.*?)```", example, re.DOTALL)
    assert toml is not None and shown is not None
    path = tmp_path / "example.toml"
    path.write_text(toml.group(1), encoding="utf-8")
    result = invoke(path, *shown.group(1).split())
    assert result.exit_code == 0, result.output
    assert result.output == shown.group(2)


def test_a_group_alone_is_not_the_owner_unless_told(config: Path) -> None:
    group = as_json(config, "--group", "family")
    assert group["senderIsOwner"] is False and "cron" not in group["offered"]
    owner = as_json(config, "--group", "family", "--owner", "--tool", "cron")
    assert owner["senderIsOwner"] is True
    tools = {t["name"]: t for t in owner["tools"]}  # type: ignore[attr-defined]
    assert tools["cron"]["layer"] == "global"  # no longer owner-only: [tools] denies it


def test_without_a_configured_model_it_explains_the_model_a_run_would_use(tmp_path: Path) -> None:
    path = tmp_path / "bare.toml"
    path.write_text('[tools]\ndeny = ["exec"]\n', encoding="utf-8")
    data = as_json(path)
    assert (data["provider"], data["model"]) == ("echo", "echo")
    assert invoke(path).output.splitlines()[0].startswith("tools for echo/echo,")
