"""The ``openclaw-runtime`` command line.

``run``, ``chat``, ``sessions``, ``compact``, ``doctor``, ``profiles``, ``tools``, ``models``,
``plugins`` (and ``plugins new``), ``install``, ``uninstall`` and ``demo`` live in
``openclaw_runtime.commands`` (one module per purpose).

Errors are handled in one place (``commands._common.command_errors``): ``OpenClawRuntimeError``
subclasses print as one-line messages — exit 2 for usage and configuration errors, 1 for
failures (``plugins``, ``profiles`` and ``demo`` keep their original exit 1 for both); anything
re-raises when ``OPENCLAW_RUNTIME_RAISE_ERRORS=1``.

Start-up stays cheap: this module imports only click and the version. Each subcommand's
module (and with it the runtime, httpx, the plugins) is imported when that subcommand runs;
``--help`` and ``--version`` import none of them (the command list's one-line help comes from
``COMMANDS``, which a test keeps equal to each command's own).
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from ._version import __version__

__all__ = ["COMMANDS", "LazyGroup", "cli", "main"]

#: name -> (module, attribute, the one-line help ``--help`` lists for it)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "chat": (
        "chat",
        "chat",
        "Chat on one session: type a message, get a streamed answer...",
    ),
    "compact": (
        "sessions",
        "compact",
        "Summarize a session's older history now (by id or key);...",
    ),
    "demo": (
        "demo",
        "demo",
        "Watch the runtime save itself, offline, over real HTTP.",
    ),
    "doctor": (
        "doctor",
        "doctor",
        "Check the setup: config, state dir, plugins, models, context...",
    ),
    "install": (
        "install",
        "install",
        "Install plugins into the runtime's own environment (pip,...",
    ),
    "models": (
        "models",
        "models",
        "List the model catalog: id, context window, output cap,...",
    ),
    "plugins": (
        "plugins",
        "plugins",
        "List plugins as JSON: name, distribution, version, hooks,...",
    ),
    "profiles": (
        "profiles",
        "profiles",
        "Show each auth profile's health: healthy, cooling down or...",
    ),
    "run": (
        "run",
        "run",
        'Run one turn and stream the answer (PROMPT "-" reads it from...',
    ),
    "sessions": (
        "sessions",
        "sessions",
        "List stored sessions and show their transcripts.",
    ),
    "tools": (
        "tools",
        "tools",
        "Explain the tool policy: the tools offered, and for each...",
    ),
    "uninstall": (
        "install",
        "uninstall",
        "Uninstall plugins from the runtime's own environment (pip...",
    ),
}


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when that subcommand is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            module, attribute, _ = COMMANDS[cmd_name]
            loaded = importlib.import_module(f"{__package__}.commands.{module}")
            self.add_command(getattr(loaded, attribute), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        limit = formatter.width - 6 - max(len(name) for name in self.list_commands(ctx))
        rows = []
        for name in self.list_commands(ctx):
            if name in COMMANDS:
                rows.append((name, COMMANDS[name][2]))
            elif not self.commands[name].hidden:  # added with add_command: already loaded
                rows.append((name, self.commands[name].get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup)
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


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="openclaw-runtime")


if __name__ == "__main__":  # pragma: no cover
    main()
