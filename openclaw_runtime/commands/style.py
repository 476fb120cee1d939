"""How the CLI's stderr lines look: colour on a terminal, plain text everywhere else.

Timeline lines (``run --events``), the usage line and ``error:`` lines are easier to scan with a
colour per kind of decision (failures red, recoveries yellow, compactions magenta, success
green), but a log file or a pipe must get exactly the text — no escape codes to strip. The
policy is two pure functions: ``colour_enabled`` (the terminal and the environment decide,
``NO_COLOR`` always wins, see no-color.org) and ``line_style`` (the style of a line, chosen by
its leading mark). ``StyledLines`` only wires them to a rich console on stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["StyledLines", "colour_enabled", "line_style"]

#: The style of a timeline line, by its first character (the marks of docs/cli.md).
MARK_STYLES: Mapping[str, str] = {
    "▸": "bold",
    "·": "dim",
    "✗": "bold red",
    "↻": "yellow",
    "⇢": "yellow",
    "!": "yellow",
    "⇣": "magenta",
    "✂": "magenta",
    "⚙": "cyan",
    "✓": "green",
}
#: Lines the CLI prints that start with a word rather than a mark.
PREFIX_STYLES: tuple[tuple[str, str], ...] = (
    ("error:", "bold red"),
    ("usage:", "dim"),
)


def colour_enabled(is_terminal: bool, env: Mapping[str, str]) -> bool:
    """Whether stderr lines get colour: a non-empty ``NO_COLOR`` or ``TERM=dumb`` says no,
    then a non-empty ``FORCE_COLOR`` says yes, else only on a terminal."""
    if env.get("NO_COLOR", ""):
        return False
    if env.get("TERM", "") == "dumb":
        return False
    if env.get("FORCE_COLOR", ""):
        return True
    return is_terminal


def line_style(line: str) -> str | None:
    """The rich style of one CLI line (None: printed as is)."""
    text = line.lstrip()
    if not text:
        return None
    style = MARK_STYLES.get(text[0])
    if style is not None:
        return style
    for prefix, prefix_style in PREFIX_STYLES:
        if text.startswith(prefix):
            return prefix_style
    return None


class StyledLines:
    """Prints lines on stderr, styled by ``line_style`` when ``colour_enabled`` allows."""

    def __init__(self, colour: bool | None = None) -> None:
        if colour is None:
            colour = colour_enabled(sys.stderr.isatty(), os.environ)
        self.colour = colour
        self._console: Console | None = None
        if colour:
            from rich.console import Console  # lazy: start-up time (no colour, no rich)

            self._console = Console(
                stderr=True,
                force_terminal=True,
                highlight=False,
                markup=False,
                emoji=False,
                soft_wrap=True,
            )

    def echo(self, line: str) -> None:
        """Print ``line`` (already redacted) and a newline on stderr."""
        if self._console is None:
            click.echo(line, err=True)
            return
        from rich.text import Text  # lazy: start-up time

        self._console.print(Text(line, style=line_style(line) or ""))
