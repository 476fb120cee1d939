"""``openclaw-runtime plugins``: what is installed and what each plugin registered; ``plugins
new`` scaffolds a plugin.

The listing is JSON (as it always was): one row per plugin with its load status, hooks,
``components`` (per kind: providers, models, engines, sanitizers, repairers, formats,
prompt sections, backends, classifiers), ``registration_errors``, ``settings`` (masked),
faults, quarantines and clashes. ``--kind engine`` keeps the plugins that registered that
kind (and shows only it); ``plugins NAME`` (or ``--name``) keeps one plugin. The row
filters are pure functions.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import click

from .._exceptions import OpenClawRuntimeError
from .._plugin_components import components_by_plugin, normalize_kind
from .._runtime import Runtime
from ._common import EXIT_FAILED, command_errors, fail, load_config, safe_json
from .invocation import current_program_command
from .scaffold import PLUGIN_KINDS, plugin_names, render_plugin, write_plugin

__all__ = ["add_components", "filter_rows", "plugins"]

_NAMED_PLUGIN = re.compile(r"plugin '([^']+)'")


def add_components(
    rows: list[dict[str, Any]],
    by_plugin: Mapping[str | None, Mapping[str, list[str]]],
    collect_error: str | None = None,
) -> list[dict[str, Any]]:
    """Each row with its ``components`` and ``registration_errors`` (the faults of its
    ``register_*`` hooks; ``collect_error``, when collecting failed outright, goes to the
    plugin it names)."""
    blamed = _NAMED_PLUGIN.findall(collect_error or "")
    out = []
    for row in rows:
        errors = [e for e in row["hook_errors"] if str(e["hook"]).startswith("register_")]
        if collect_error is not None and row["name"] in blamed:
            errors.append({"hook": "register", "error": collect_error})
        out.append(
            {
                **row,
                "components": dict(by_plugin.get(row["name"], {})),
                "registration_errors": errors,
            }
        )
    return out


def filter_rows(
    rows: Iterable[dict[str, Any]], *, kind: str | None = None, name: str | None = None
) -> list[dict[str, Any]]:
    """Rows of plugin ``name`` (its plugin or distribution name) and/or of plugins that
    registered components of ``kind`` (whose ``components`` then show only that kind)."""
    wanted = normalize_kind(kind) if kind is not None else None
    out = []
    for row in rows:
        if name is not None and name not in (row["name"], row.get("distribution")):
            continue
        if wanted is not None:
            if wanted not in row["components"]:
                continue
            row = {**row, "components": {wanted: row["components"][wanted]}}
        out.append(row)
    return out


def _hooks_by_plugin(rows: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    return {row["name"]: list(row["hooks"]) for row in rows}


def describe_with_components(runtime: Runtime) -> list[dict[str, Any]]:
    """``runtime.describe_plugins()`` with each plugin's components, registration errors and
    validated settings."""
    rows = runtime.describe_plugins()  # collects the components (faults land in the rows)
    try:
        by_plugin = components_by_plugin(runtime.components, _hooks_by_plugin(rows))
    except OpenClawRuntimeError as exc:  # a plugin registered nonsense: name it, list the rest
        rows = add_components(rows, {}, str(exc))
    else:
        rows = add_components(rows, by_plugin)
    settings = runtime.describe_plugin_settings()
    for row in rows:  # [plugins.settings.*] tables the plugin declared, credentials masked
        row["settings"] = {
            name: entry["values"]
            for name, entry in settings.items()
            if entry["plugin"] == row["name"]
        }
    return rows


class _PluginsGroup(click.Group):
    """``plugins [NAME]`` lists; ``plugins new ...`` scaffolds: a first word that is not a
    subcommand is the name filter."""

    _VALUE_OPTIONS = frozenset({"--kind", "--name"})

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        index = 0
        while index < len(args):
            arg = args[index]
            if arg in self._VALUE_OPTIONS:
                index += 2
                continue
            if arg.startswith("-"):
                index += 1
                continue
            if arg not in self.commands:
                args = [*args[:index], "--name", arg, *args[index + 1 :]]
            break
        return super().parse_args(ctx, args)


@click.group(cls=_PluginsGroup, invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output).")
@click.option("--kind", default=None, help="Only plugins that registered this kind (engine...).")
@click.option("--name", default=None, help="Only this plugin (also: plugins NAME).")
@click.option(
    "--clear-faults",
    is_flag=True,
    help="Forget the recorded plugin faults and quarantines (<state_dir>/plugins/faults.json).",
)
@click.pass_context
@command_errors(usage_exit=EXIT_FAILED)
def plugins(
    ctx: click.Context, as_json: bool, kind: str | None, name: str | None, clear_faults: bool
) -> None:
    """List plugins as JSON: name, distribution, version, hooks, components per kind,
    registration and load errors, recorded faults and quarantines (from every process,
    until --clear-faults), name clashes. `plugins NAME` and `--kind KIND` filter;
    `plugins new NAME` writes a new plugin."""
    if ctx.invoked_subcommand is not None:
        return
    if kind is not None:
        try:
            normalize_kind(kind)
        except ValueError as exc:
            fail(str(exc))
    runtime = Runtime(load_config(ctx))
    try:
        if clear_faults:
            try:
                removed = runtime.clear_plugin_faults(name)
            except OSError as exc:  # an unwritable state dir; filelock.Timeout is one too
                fail(f"cannot clear the plugin fault record {runtime.fault_record.path}: {exc}")
                return
            click.echo(f"cleared {removed} plugin fault record(s) in {runtime.fault_record.path}")
            return
        rows = describe_with_components(runtime)
        shown = filter_rows(rows, kind=kind, name=name)
        if name is not None and not shown:
            known = ", ".join(sorted(str(r["name"]) for r in rows))
            fail(f"no plugin named {name!r}{' with ' + kind if kind else ''}; plugins: {known}")
        click.echo(safe_json(shown, indent=2))
    finally:
        runtime.close()


@plugins.command("new")
@click.argument("name")
@click.option(
    "--kind",
    type=click.Choice(PLUGIN_KINDS),
    default="engine",
    show_default=True,
    help="What the plugin registers.",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to write it (default: ./openclaw-runtime-NAME); must not exist or be empty.",
)
@command_errors(usage_exit=EXIT_FAILED)
def new(name: str, kind: str, directory: Path | None) -> None:
    """Write a working plugin distribution: pyproject with the entry point, plugin.py
    registering a small component of KIND, tests through the real entry point plus the
    kind's contract suite, tox.ini and a README."""
    names = plugin_names(name)
    target = directory if directory is not None else Path(names.distribution)
    written = write_plugin(target, render_plugin(name, kind))
    click.echo(f"wrote {len(written)} files to {target}/ ({kind} plugin {name!r})")
    program = current_program_command()  # the hint works without an activated venv
    click.echo("next:")
    click.echo(f"  {program} install -e {target}")
    click.echo(f"  {program} plugins {name}")
    click.echo(f"  cd {target} && {sys.executable} -m pytest")
