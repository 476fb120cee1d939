"""The ``openclaw-runtime`` command line.

Errors are handled in one place: ``OpenClawRuntimeError`` subclasses print as one-line
messages (exit 1); anything else re-raises when ``OPENCLAW_RUNTIME_RAISE_ERRORS=1``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import anyio
import click

from . import __version__
from ._exceptions import OpenClawRuntimeError
from ._plugins import parse_bool_env
from ._runtime import Runtime
from .config import RuntimeConfig

__all__ = ["main"]

F = TypeVar("F", bound=Callable[..., Any])
ENV_RAISE = "OPENCLAW_RUNTIME_RAISE_ERRORS"


def _handle_errors(fn: F) -> F:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except OpenClawRuntimeError as exc:
            if parse_bool_env(ENV_RAISE, os.environ.get(ENV_RAISE, "")):
                raise
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


@click.group()
@click.version_option(__version__, prog_name="openclaw-runtime")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Config file (default: ./openclaw-runtime.toml or $OPENCLAW_RUNTIME_CONFIG).",
)
@click.pass_context
def cli(ctx: click.Context, config_path: str | None) -> None:
    """openclaw-runtime: an async agent runtime that recovers by itself."""
    ctx.obj = {"config_path": config_path}


def _runtime(ctx: click.Context) -> Runtime:
    return Runtime(RuntimeConfig.load(ctx.obj["config_path"]))


@cli.command()
@click.pass_context
@_handle_errors
def plugins(ctx: click.Context) -> None:
    """List plugins as JSON: name, distribution, version, hooks, load errors."""
    runtime = _runtime(ctx)
    click.echo(json.dumps(runtime.describe_plugins(), indent=2))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print every event as a JSON line.")
@_handle_errors
def demo(as_json: bool) -> None:
    """Run the kernel end to end on the built-in scripted provider (offline).

    A scripted model calls a weather tool for two cities in parallel, is steered mid-run
    while the tools execute, and streams an answer built from the tool results.
    """
    from .demo import run_demo

    anyio.run(run_demo, as_json)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="openclaw-runtime")


if __name__ == "__main__":  # pragma: no cover
    main()
