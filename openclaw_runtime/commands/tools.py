"""``openclaw-runtime tools``: which tools a run would be offered, and why the others are not.

The CLI has no tool objects of its own (tools are what a caller passes to ``Runtime.run``), so
it explains the policy over OpenClaw's known tool names (every ``group:*`` member) plus any
``--tool NAME`` given; owner-only marks come from the names OpenClaw treats as owner-only.
For a run's real tool list use ``openclaw_runtime.toolpolicy.decide_tools`` from Python.
"""

from __future__ import annotations

from types import SimpleNamespace

import click

from ..config import RuntimeConfig
from ..runner import BUILTIN_DEFAULT_MODEL
from ..toolpolicy import (
    ToolPolicyConfig,
    ToolPolicyInput,
    decide_tools,
    format_tool_decisions,
    known_tool_names,
    normalize_tool_name,
)
from ._common import command_errors, load_config, safe_json

__all__ = ["resolve_provider_model", "tools"]


def resolve_provider_model(
    config: RuntimeConfig, model: str | None, provider: str | None
) -> tuple[str | None, str | None]:
    """``(provider, model id)`` for ``--model`` (``provider/model``, an alias or a catalog id;
    default ``[agent] model``, else the built-in default a run would use), ``--provider``
    overriding the provider."""
    ref = model or config.agent.model or BUILTIN_DEFAULT_MODEL
    if ref:
        ref = config.agent.model_aliases.get(ref, ref)
    model_id: str | None = ref
    found_provider: str | None = None
    if ref and "/" in ref:
        found_provider, model_id = ref.split("/", 1)
    elif ref:
        entry = next((m for m in config.models if m.id == ref), None)
        found_provider = entry.provider if entry is not None else None
    return (provider or found_provider), model_id


@click.command()
@click.option("--provider", default=None, help="Provider of the run (default: the model's).")
@click.option(
    "--model", default=None, help="Model (provider/model, alias or id; default [agent] model)."
)
@click.option("--agent", "agent_id", default=None, help="Agent id ([agents.<id>.tools]).")
@click.option("--group", "group_id", default=None, help="Group id ([groups.<id>.tools]).")
@click.option(
    "--sender", "sender_id", default=None, help="Sender id (not the owner unless --owner)."
)
@click.option(
    "--owner/--not-owner",
    "owner",
    default=None,
    help="Whether the sender is the owner (default: owner unless --sender or --group).",
)
@click.option(
    "--tool", "extra_tools", multiple=True, help="Also explain this tool name (repeatable)."
)
@click.option(
    "--trigger", default="user", show_default=True, help="Run trigger (memory: flush run)."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@command_errors
def tools(
    ctx: click.Context,
    provider: str | None,
    model: str | None,
    agent_id: str | None,
    group_id: str | None,
    sender_id: str | None,
    owner: bool | None,
    extra_tools: tuple[str, ...],
    trigger: str,
    as_json: bool,
) -> None:
    """Explain the tool policy: the tools offered, and for each other one the layer and
    rule that removed it."""
    config = load_config(ctx)
    run_provider, model_id = resolve_provider_model(config, model, provider)
    sender_is_owner = owner if owner is not None else sender_id is None and group_id is None
    inputs = ToolPolicyInput(
        provider=run_provider,
        model=model_id,
        agent_id=agent_id,
        group_id=group_id,
        sender_is_owner=sender_is_owner,
        trigger=trigger,
    )
    names = [*known_tool_names()]
    for extra in extra_tools:
        if normalize_tool_name(extra) not in names:
            names.append(extra.strip())
    catalogue = [SimpleNamespace(name=name, description="") for name in names]
    decisions = decide_tools(catalogue, ToolPolicyConfig.from_config(config), inputs)
    if as_json:
        click.echo(
            safe_json(
                {
                    "provider": run_provider,
                    "model": model_id,
                    "agent": agent_id,
                    "group": group_id,
                    "sender": sender_id,
                    "senderIsOwner": sender_is_owner,
                    "offered": [d.name for d in decisions if d.offered],
                    "tools": [d.to_dict() for d in decisions],
                },
                indent=2,
            )
        )
        return
    who = f"sender {sender_id}" if sender_id else "local user"
    heading = (
        f"tools for {run_provider or '?'}/{model_id or '?'}, agent {agent_id or '(default)'}, "
        f"group {group_id or '(none)'}, {who} ({'owner' if sender_is_owner else 'not owner'})"
    )
    click.echo(format_tool_decisions(decisions, heading=heading))
