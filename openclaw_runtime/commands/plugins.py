"""``openclaw-runtime plugins``: list the plugins as JSON, or forget their recorded faults."""

from __future__ import annotations

import click

from .._runtime import Runtime
from ._common import EXIT_FAILED, command_errors, fail, load_config, safe_json

__all__ = ["plugins"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output).")
@click.option(
    "--clear-faults",
    is_flag=True,
    help="Forget the recorded plugin faults and quarantines (<state_dir>/plugins/faults.json).",
)
@click.pass_context
@command_errors(usage_exit=EXIT_FAILED)
def plugins(ctx: click.Context, as_json: bool, clear_faults: bool) -> None:
    """List plugins as JSON: name, distribution, version, hooks, load errors, recorded
    faults and quarantines (from every process, until --clear-faults), name clashes."""
    runtime = Runtime(load_config(ctx))
    try:
        if clear_faults:
            try:
                removed = runtime.clear_plugin_faults()
            except OSError as exc:  # an unwritable state dir; filelock.Timeout is one too
                fail(f"cannot clear the plugin fault record {runtime.fault_record.path}: {exc}")
                return
            click.echo(f"cleared {removed} plugin fault record(s) in {runtime.fault_record.path}")
            return
        click.echo(safe_json(runtime.describe_plugins(), indent=2))
    finally:
        runtime.close()
