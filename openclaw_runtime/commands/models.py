"""``openclaw-runtime models``: the model catalog this setup can run, and who contributed it.

One row per model: ``provider/id``, context window, max output tokens, reasoning, input kinds,
prices per million tokens, and the source (the plugin that registered it, or ``config`` for a
``[[models]]`` entry). Below the table, the first-party providers whose plugin is not loaded
(so their catalog rows are missing) with the line that installs them. ``--json`` prints the
same as JSON; ``--provider NAME`` keeps one provider.
"""

from __future__ import annotations

from typing import Any

import click

from .._runtime import Runtime
from ..llm import Model
from ..providers.catalog import CATALOG_PROVIDERS
from ._common import command_errors, load_config, safe_json

__all__ = ["model_rows", "models"]


def model_rows(runtime: Runtime, provider: str | None = None) -> list[dict[str, Any]]:
    """The catalog as plain rows (what ``--json`` prints)."""
    aliases: dict[str, list[str]] = {}
    for alias, ref in runtime.models.aliases().items():
        aliases.setdefault(ref, []).append(alias)
    rows = []
    for model in runtime.models:
        if provider is not None and model.provider != provider:
            continue
        rows.append(
            _row(model, runtime.models.owner(model.ref), sorted(aliases.get(model.ref, [])))
        )
    return rows


def _row(model: Model, owner: str | None, aliases: list[str]) -> dict[str, Any]:
    return {
        "ref": model.ref,
        "provider": model.provider,
        "id": model.id,
        "api": model.api,
        "context_window": model.context_window,
        "max_tokens": model.max_tokens,
        "reasoning": model.reasoning,
        "input": list(model.input),
        "cost": model.cost.model_dump(),
        "source": owner if owner is not None else "config",
        "aliases": aliases,
    }


def _missing(runtime: Runtime) -> list[dict[str, str]]:
    apis = set(runtime.components.providers.names())
    return [
        {"provider": spec.name, "distribution": spec.distribution}
        for spec in CATALOG_PROVIDERS.values()
        if spec.distribution is not None and spec.api not in apis
    ]


def _price(value: float) -> str:
    return f"{value:g}" if value else "-"


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON: models and missing plugins.")
@click.option("--provider", default=None, help="Only this provider's models.")
@click.pass_context
@command_errors
def models(ctx: click.Context, as_json: bool, provider: str | None) -> None:
    """List the model catalog: id, context window, output cap, prices, source plugin."""
    runtime = Runtime(load_config(ctx))
    try:
        rows = model_rows(runtime, provider)
        missing = _missing(runtime)
    finally:
        runtime.close()
    if as_json:
        click.echo(safe_json({"models": rows, "missing_plugins": missing}, indent=2))
        return
    header = ("MODEL", "CONTEXT", "MAX OUT", "REASONING", "INPUT", "$/M IN", "$/M OUT", "SOURCE")
    table = [header] + [
        (
            row["ref"],
            str(row["context_window"]),
            str(row["max_tokens"]),
            "yes" if row["reasoning"] else "no",
            "+".join(row["input"]),
            _price(row["cost"]["input"]),
            _price(row["cost"]["output"]),
            row["source"],
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        click.echo(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        )
    for entry in missing:
        click.echo(
            f"{entry['provider']}: models need the plugin {entry['distribution']} "
            f"(pip install {entry['distribution']})"
        )
