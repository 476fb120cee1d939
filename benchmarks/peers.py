"""The peers a benchmark measures against, checked before it starts.

The peers are not part of the project's test extras (``benchmarks/requirements.txt``); a
script run without them stopped with a traceback from deep inside a measurement. Each script
that needs one asks here first and stops with a usage error naming the install step.
"""

from __future__ import annotations

import argparse
import importlib.util

INSTALL = ".venv/bin/pip install -r benchmarks/requirements.txt"


def require_peer(parser: argparse.ArgumentParser, module: str, what: str) -> None:
    """Stop with a usage error unless ``module`` (the peer ``what``) can be imported."""
    if importlib.util.find_spec(module) is None:
        parser.error(f"{what} (module {module!r}) is not installed; install the peers: {INSTALL}")
