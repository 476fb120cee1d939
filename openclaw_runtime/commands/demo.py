"""``openclaw-runtime demo``: the offline demonstration, over real HTTP to a local server."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import EXIT_FAILED, command_errors

__all__ = ["demo"]


@click.command()
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
    from ..demo import run_demo  # lazy: start-up time (it loads the test server and pytest)

    run_demo(as_json=as_json, state_dir=state_dir)
