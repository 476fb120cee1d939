"""Whether rich would call stderr a terminal, decided without importing rich when it cannot.

The spinner (``timeline.StatusSpinner``) asks rich's ``Console.is_terminal``; importing rich
costs a noticeable share of ``openclaw-runtime run``'s start-up, and in scripts, pipes and
logs (no terminal) the answer is always no. ``surely_not_a_terminal`` is that case, in rich's
own terms: stderr is not a TTY and none of the variables rich reads to override it
(``FORCE_COLOR``, ``TTY_COMPATIBLE``) is set. Anything else is left to rich.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["RICH_TERMINAL_OVERRIDES", "surely_not_a_terminal"]

#: Environment variables that make rich treat a stream as a terminal (or not) whatever it is.
RICH_TERMINAL_OVERRIDES = ("FORCE_COLOR", "TTY_COMPATIBLE")


def surely_not_a_terminal(is_tty: bool, env: Mapping[str, str]) -> bool:
    """True when rich's ``is_terminal`` is certainly False: not a TTY, and no override set."""
    return not is_tty and not any(name in env for name in RICH_TERMINAL_OVERRIDES)
