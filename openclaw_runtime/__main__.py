"""``python -m openclaw_runtime`` runs the CLI."""

from .cli import main

main()
