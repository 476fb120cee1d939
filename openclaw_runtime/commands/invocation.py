"""How to run this program again, as the user can type it in the same shell.

Hints the CLI prints (``demo``'s "read it: … sessions show …") used to say plain
``openclaw-runtime``, which only works in an activated venv: someone who started
``.venv/bin/openclaw-runtime demo`` as the README says got "command not found" when copying
it. ``program_command`` names the program the way it was started instead.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

__all__ = ["current_program_command", "program_command"]

PROGRAM = "openclaw-runtime"


def program_command(argv0: str, on_path: str | None, python: str) -> str:
    """``openclaw-runtime`` when that name on ``PATH`` (``on_path``) is the script that
    runs (``argv0``); else the script's path as it was typed; ``python -m openclaw_runtime``
    when the program was not started through its script at all."""
    name = argv0.replace("\\", "/").rsplit("/", 1)[-1]  # a Windows path read anywhere
    if name.lower().removesuffix(".exe") != PROGRAM:
        return f"{python} -m openclaw_runtime"
    if on_path is not None and Path(on_path).resolve() == Path(argv0).resolve():
        return PROGRAM
    return argv0


def current_program_command() -> str:
    """``program_command`` for this process."""
    return program_command(sys.argv[0], shutil.which(PROGRAM), sys.executable)
