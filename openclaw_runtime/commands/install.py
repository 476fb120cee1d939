"""``openclaw-runtime install`` / ``uninstall``: pip, into the runtime's own environment.

Like ``llm install``: a user who installed the CLI with pipx or into some venv should not have
to find that environment to add a plugin. The command runs ``sys.executable -m pip`` (the
interpreter running the CLI), so the plugin lands where the runtime will look for its entry
point. First-party short names map to their distributions (``anthropic`` →
``openclaw-runtime-anthropic``). ``$OPENCLAW_RUNTIME_PIP`` replaces the pip command (a shell
word list), for tests and for environments managed by another tool (``uv pip``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence

import click

from .._exceptions import ConfigurationError
from ._common import EXIT_FAILED, command_errors

__all__ = [
    "FIRST_PARTY",
    "distribution_for",
    "install",
    "pip_command",
    "pip_install_args",
    "pip_uninstall_args",
    "uninstall",
]

ENV_PIP = "OPENCLAW_RUNTIME_PIP"
CORE_DISTRIBUTION = "openclaw-runtime"
#: Short name → distribution, for the plugins of this repository.
FIRST_PARTY: dict[str, str] = {
    "anthropic": "openclaw-runtime-anthropic",
    "google": "openclaw-runtime-google",
    "openai": "openclaw-runtime-openai",
    "redis": "openclaw-runtime-redis",
    "hello": "openclaw-runtime-hello",
    "sliding_window": "openclaw-runtime-sliding-window",
    "sliding-window": "openclaw-runtime-sliding-window",
}
# a requirement's leading project name (PEP 508), e.g. "anthropic" of "anthropic[x]>=0.2"
_PROJECT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(.*)$", re.S)


def _is_path_or_url(spec: str) -> bool:
    return (
        "/" in spec
        or "\\" in spec
        or spec.startswith(".")
        or spec.endswith((".whl", ".tar.gz", ".zip"))
        or "://" in spec
    )


def distribution_for(spec: str) -> str:
    """A first-party short name (with any extras or version) → its distribution; paths,
    URLs and other names unchanged."""
    if _is_path_or_url(spec):
        return spec
    match = _PROJECT.match(spec)
    if match is None:
        return spec
    name, rest = match.groups()
    return FIRST_PARTY.get(name.lower(), name) + rest


def _project(spec: str) -> str:
    match = _PROJECT.match(spec)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else spec


def pip_install_args(
    names: Sequence[str], *, editable: Sequence[str] = (), upgrade: bool = False
) -> list[str]:
    """The arguments after ``pip``: ``install [--upgrade] NAMES... [-e PATH]...``."""
    if not names and not editable:
        raise ConfigurationError("name at least one plugin to install (or -e PATH)")
    args = ["install"]
    if upgrade:
        args.append("--upgrade")
    args += [distribution_for(name) for name in names]
    for path in editable:
        args += ["-e", path]
    return args


def pip_uninstall_args(names: Sequence[str]) -> list[str]:
    """``uninstall -y DISTRIBUTIONS...``; removing the runtime itself is refused."""
    if not names:
        raise ConfigurationError("name at least one plugin to uninstall")
    mapped = [distribution_for(name) for name in names]
    if any(_project(spec) == CORE_DISTRIBUTION for spec in mapped):
        raise ConfigurationError(
            f"refusing to uninstall {CORE_DISTRIBUTION} itself with its own command; "
            f"use {sys.executable} -m pip uninstall {CORE_DISTRIBUTION}"
        )
    return ["uninstall", "-y", *mapped]


def pip_command(env: Mapping[str, str] | None = None) -> list[str]:
    """``$OPENCLAW_RUNTIME_PIP`` split like a shell would, else this interpreter's pip."""
    override = (os.environ if env is None else env).get(ENV_PIP, "").strip()
    if override:
        return shlex.split(override)
    return [sys.executable, "-m", "pip"]


def _run_pip(args: list[str]) -> None:
    command = [*pip_command(), *args]
    try:
        code = subprocess.call(command)
    except OSError as exc:
        raise ConfigurationError(f"cannot run {command[0]!r}: {exc.strerror}") from None
    if code != 0:
        sys.exit(code if code > 0 else EXIT_FAILED)


@click.command()
@click.argument("names", nargs=-1)
@click.option(
    "-e",
    "--editable",
    "editable",
    multiple=True,
    metavar="PATH",
    help="Install a local project in editable mode (repeatable).",
)
@click.option("-U", "--upgrade", is_flag=True, help="Upgrade the named plugins.")
@command_errors
def install(names: tuple[str, ...], editable: tuple[str, ...], upgrade: bool) -> None:
    """Install plugins into the runtime's own environment (pip, with this Python).

    NAMES are distributions, requirements or paths; first-party short names
    (anthropic, google, openai, redis) mean openclaw-runtime-NAME.
    """
    _run_pip(pip_install_args(names, editable=editable, upgrade=upgrade))


@click.command()
@click.argument("names", nargs=-1)
@command_errors
def uninstall(names: tuple[str, ...]) -> None:
    """Uninstall plugins from the runtime's own environment (pip uninstall -y)."""
    _run_pip(pip_uninstall_args(names))
