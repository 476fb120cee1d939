"""The subcommands of ``openclaw-runtime``, one module per purpose.

``run`` and ``chat`` (talking to a model), ``sessions`` (reading transcripts) and
``compact``, ``doctor`` (checking a setup), ``profiles``, ``tools``, ``models``, ``plugins``,
``install``, ``demo``; ``timeline`` turns run events into one human line each (shared with
the demo) and ``_common`` holds errors, config and the runtime. ``openclaw_runtime.cli``
imports a command's module only when that command runs (start-up time), so this face
re-exports nothing: importing ``openclaw_runtime.commands.run`` loads ``run`` alone. Import a
command from its module (``from openclaw_runtime.commands.run import run``).
"""

__all__: list[str] = []
