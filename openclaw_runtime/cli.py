"""The ``openclaw-runtime`` command line.

``run``, ``chat``, ``sessions``, ``compact``, ``doctor``, ``profiles``, ``plugins`` (and
``plugins new``), ``install`` and ``uninstall`` live in ``openclaw_runtime.commands`` (one
module per purpose); ``demo`` is here.

Errors are handled in one place (``commands._common.command_errors``): ``OpenClawRuntimeError``
subclasses print as one-line messages — exit 2 for usage and configuration errors, 1 for
failures (``plugins``, ``profiles`` and ``demo`` keep their original exit 1 for both); anything
re-raises when ``OPENCLAW_RUNTIME_RAISE_ERRORS=1``.
"""

from __future__ import annotations

from pathlib import Path

import click

from ._version import __version__
from .commands import chat, compact, doctor, run, sessions
from .commands._common import EXIT_FAILED, command_errors
from .commands.install import install, uninstall
from .commands.plugins import plugins
from .commands.profiles import profiles
from .commands.tools import tools

__all__ = ["cli", "main"]


@click.group()
@click.version_option(__version__, prog_name="openclaw-runtime")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Config file (default: ./openclaw-runtime.toml or $OPENCLAW_RUNTIME_CONFIG). "
    "$OPENCLAW_RUNTIME_STATE_DIR and $OPENCLAW_RUNTIME_MODEL override it.",
)
@click.pass_context
def cli(ctx: click.Context, config_path: str | None) -> None:
    """openclaw-runtime: an async agent runtime that recovers by itself.

    Start with `openclaw-runtime demo` (offline), then `openclaw-runtime doctor` and
    `openclaw-runtime run "Hello"`.
    """
    ctx.obj = {"config_path": config_path}


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print every event as a JSON line.")
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the demo writes its transcript and ledger (default: a new temp directory).",
)
@command_errors(usage_exit=EXIT_FAILED)
def demo(as_json: bool, state_dir: Path | None) -> None:
    """Watch the runtime save itself, offline, over real HTTP.

    A local fault-injecting OpenAI-compatible server rate-limits the first API key (the run
    rotates to the second), serves a tool call, and overflows its small context window (the
    run compacts the history and retries). Needs no network, no key, no test dependencies.
    """
    from .demo import run_demo  # lazy: start-up time (it loads the test server and pytest)

    run_demo(as_json=as_json, state_dir=state_dir)


for _command in (run, chat, sessions, compact, doctor, profiles, tools, plugins):
    cli.add_command(_command)
for _command in (install, uninstall):
    cli.add_command(_command)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="openclaw-runtime")


if __name__ == "__main__":  # pragma: no cover
    main()
